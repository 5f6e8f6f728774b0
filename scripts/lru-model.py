#!/usr/bin/env python3
"""lru-model.py: where a native load's pages end up in InnoDB's LRU list, and in what order
eviction takes them (docs/experiments.md, "Failover with traffic that also writes").

A model of buf_LRU_add_block(old=true) and buf_LRU_old_adjust_len (innodb_old_blocks_pct
37, tolerance 20, the first 512 pages at the head), with no queries touching the pages.

    scripts/lru-model.py [PAGES [TIERS]]

prints, for tiers loaded hottest first and coldest first (pages within a tier in an order
unrelated to hotness, as the server sorts a tier by page number), the share of each tier
(hottest first) evicted after 20, 37, 50 and 70% of the pages' worth of evictions.

    scripts/lru-model.py --failover [SEED [TIERS,... [low|high|scattered]]]

models a failover to a standby kept by follow (docs/experiments.md, "Why a failover lost 3
seconds"): the midpoint LRU list under traffic, with innodb_old_blocks_time (an old page is
made young only by an access at least 1 s after its first) and the young sublist's
freed-page clock, driven by sysbench's pareto point selects (the lowest ids hottest) on a
table of 176,000 leaf pages and a 63,000-page pool, on a disk that reads 1,000 pages a second
(the capped disk: time is misses / 1,000). A primary serves 175 s from cold; a standby gets
its pages as follow loads them (the list hottest first, cut into TIERS tiers, the coldest
loaded first, each sorted by page number as the server's loader sorts it, with the old
sublist at 95% during the load), never accessed; "primary order" is the primary's own LRU
order instead (TIERS 0). The hot rows' pages are the lowest page numbers (low, sysbench's
pareto on a table filled in id order), the highest (high: the newest rows hottest) or
scattered. It prints each standby's seconds of full service lost in 100 s and its 5 s means
as a share of a settled server's throughput, and a cold server's.
"""
import math
import random
import sys
from collections import OrderedDict

RATIO, DIV, TOL, MIN_LEN, NON_OLD_MIN = 378, 1024, 20, 512, 5


def adjust(old, boundary, old_len):
    n = len(old)
    want = min(n * RATIO // DIV, n - (TOL + NON_OLD_MIN))
    while True:
        if old_len + TOL < want:
            boundary -= 1
            old[boundary] = True
            old_len += 1
        elif old_len > want + TOL:
            old[boundary] = False
            boundary += 1
            old_len -= 1
        else:
            return boundary, old_len


def load(seq):
    """The LRU list (head first) after reading seq's pages in turn."""
    return load_at(seq, RATIO)


def load_at(seq, ratio):
    """load with innodb_old_blocks_pct at ratio/1024."""
    global RATIO
    saved, RATIO = RATIO, ratio
    try:
        return _load(seq)
    finally:
        RATIO = saved


def _load(seq):
    lru, old, boundary, old_len = [], [], None, 0
    for p in seq:
        if boundary is None:
            lru.insert(0, p)
            old.insert(0, False)
            if len(lru) == MIN_LEN:
                old = [True] * len(lru)
                boundary, old_len = adjust(old, 0, len(lru))
            continue
        lru.insert(boundary + 1, p)
        old.insert(boundary + 1, True)
        boundary, old_len = adjust(old, boundary, old_len + 1)
    return lru


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 63000
    tiers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    size = (n + tiers - 1) // tiers
    by_tier = [list(range(i, min(i + size, n))) for i in range(0, n, size)]  # 0: hottest
    for name, order in (("hottest first", by_tier), ("coldest first", by_tier[::-1])):
        seq = []
        for t in order:
            seq += sorted(t, key=lambda v: (v * 7919) % n)
        evicted = load(seq)[::-1]
        parts = []
        for frac in (0.2, 0.37, 0.5, 0.7):
            got = evicted[: int(frac * n)]
            share = [round(100 * sum(1 for v in got if v // size == t) / size) for t in range(tiers)]
            parts.append(f"{frac:.0%} evicted: {share}")
        print(f"{name}: " + " | ".join(parts))


# --failover: the traffic's model.
LEAVES, POOL, ROWS, ROWS_PER_PAGE, IOPS, OLD_TIME = 176_000, 63_000, 13_000_000, 74, 1000.0, 1.0
POWER = math.log(0.2) / math.log(0.8)  # sysbench's pareto, h 0.2: id = n * U^POWER


class Page:
    __slots__ = ("access", "fclock", "old")

    def __init__(self, old=True):
        self.access, self.fclock, self.old = -1.0, 0, old


class Pool:
    """The LRU list as its two sublists, each an OrderedDict from tail (first) to head."""

    def __init__(self):
        self.young, self.old = OrderedDict(), OrderedDict()
        self.clock, self.t, self.misses = 0, 0.0, 0

    def balance(self):
        want = (len(self.young) + len(self.old)) * 3 // 8
        while len(self.old) < want - 20 and self.young:  # the young tail becomes the old head
            k, p = self.young.popitem(last=False)
            p.old = True
            self.old[k] = p
        while len(self.old) > want + 20:  # the old head becomes the young tail
            k, p = self.old.popitem(last=True)
            p.old = False
            self.young[k] = p
            self.young.move_to_end(k, last=False)

    def access(self, k):
        p = self.young.get(k) or self.old.get(k)
        if p is None:  # a miss: read at the old head, accessed by its query
            self.misses += 1
            self.t += 1.0 / IOPS
            if len(self.young) + len(self.old) >= POOL:
                (self.old or self.young).popitem(last=False)
                self.clock += 1
            p = Page()
            p.access = self.t
            self.old[k] = p
            self.balance()
            return
        first = p.access < 0
        if first:
            p.access = self.t
        if self.clock == 0:  # no eviction yet: nothing moves (buf_page_peek_if_too_old)
            return
        if p.old:
            if not first and self.t - p.access >= OLD_TIME:
                del self.old[k]
                p.old, p.fclock = False, self.clock
                self.young[k] = p
                self.balance()
        elif p.fclock + len(self.young) // 4 < self.clock:
            self.young.move_to_end(k)
            p.fclock = self.clock


LAYOUT = "low"  # where the hot rows' pages are: low (the lowest page numbers), high, scattered
_SCATTER = []


def page_of(row):
    p = row // ROWS_PER_PAGE
    if LAYOUT == "high":
        return LEAVES - p
    if LAYOUT == "scattered":
        if not _SCATTER:
            _SCATTER.extend(range(LEAVES + 1))
            random.Random(99).shuffle(_SCATTER)
        return _SCATTER[p]
    return p


def traffic(pool, rnd, seconds, every=5.0):
    """Point selects until seconds of the disk's time have passed: queries per second, every 5 s."""
    out, t0, q, nxt = [], pool.t, 0, pool.t + every
    while pool.t - t0 < seconds:
        pool.access(page_of(int(ROWS * rnd.random() ** POWER)))
        q += 1
        if pool.t >= nxt:
            out.append(q / every)
            q, nxt = 0, nxt + every
    return out


def standby_of(primary, tiers):
    """The standby's pool after follow's load of the primary's pages (tiers 0: the primary's order)."""
    hottest = list(reversed(primary.young)) + list(reversed(primary.old))
    if tiers:
        size = (len(hottest) + tiers - 1) // tiers
        seq = []
        for i in reversed(range(0, len(hottest), size)):
            seq += sorted(hottest[i:i + size])
        lst = load_at(seq, 973)  # innodb_old_blocks_pct 95 during the load
    else:
        lst = hottest
    sb, cut = Pool(), len(lst) * 5 // 8  # then back to 37%
    for k in reversed(lst[:cut]):
        sb.young[k] = Page(old=False)
    for k in reversed(lst[cut:]):
        sb.old[k] = Page()
    return sb


def failover(seed, tier_counts):
    rnd = random.Random(seed)
    ref = Pool()
    traffic(ref, rnd, 400)
    hot = sum(traffic(ref, rnd, 60)) / 12
    primary = Pool()
    traffic(primary, rnd, 175)
    print(f"seed {seed}: a settled server serves {hot:.0f} qps")
    rows = [(f"{t} tiers" if t else "primary order", standby_of(primary, t)) for t in tier_counts] + [("cold", Pool())]
    for name, pool in rows:
        curve = traffic(pool, rnd, 100)
        lost = sum((1 - q / hot) * 5 for q in curve)
        print(f"{name:14s} lost {lost:5.1f} s | " + " ".join(f"{100 * q / hot:3.0f}" for q in curve))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--failover":
        seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
        counts = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [4, 32, 0]
        if len(sys.argv) > 4:
            LAYOUT = sys.argv[4]
        failover(seed, counts)
    else:
        main()
