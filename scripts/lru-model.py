#!/usr/bin/env python3
"""lru-model.py: where a native load's pages end up in InnoDB's LRU list, and in what order
eviction takes them (docs/experiments.md, "Failover with traffic that also writes").

A model of buf_LRU_add_block(old=true) and buf_LRU_old_adjust_len (innodb_old_blocks_pct
37, tolerance 20, the first 512 pages at the head), with no queries touching the pages.

    scripts/lru-model.py [PAGES [TIERS]]

prints, for tiers loaded hottest first and coldest first (pages within a tier in an order
unrelated to hotness, as the server sorts a tier by page number), the share of each tier
(hottest first) evicted after 20, 37, 50 and 70% of the pages' worth of evictions.
"""
import sys

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


if __name__ == "__main__":
    main()
