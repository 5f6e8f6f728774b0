package snapshot

import (
	"context"
	"math"
	"time"

	"github.com/innowarm/innowarm/internal/manifest"
	"strconv"
	"strings"
	"unsafe"
)

// History is what the captures of snapshot --every saw of each page, so that a manifest
// ranks pages by more than one look at an LRU list. One look carries whatever a bulk load,
// a backup or a report left behind and misses hot pages that happened to be evicted just
// before it. Neither young/old nor the position tells them apart: pages a bulk load
// created sit young near the head while the workload's reads enter the old sublist.
// Between two captures, though, a page the workload touches shows it: it was read from
// disk (absent from the previous capture) or moved towards the head (made young), whereas
// a page nobody touches only ever drifts towards the tail, whatever is read above it.
//
// So a page's score is the share of the captures in which it was seen touched, weighted
// by age with a half-life (HalfLife), a capture that did not hold it counting 0:
//
//	score = Σ_k w_k · touched_k / Σ_k w_k,   w_k = 2^-(age of capture k / HalfLife)
//
// The weights go by time, not by capture, so captures taken close together while a pool
// turns over (Every takes them) do not make the history forget faster. Pages a workload
// keeps touching approach 1; a hot page evicted before the newest capture keeps what it
// earned, fading with the half-life; what a load left and nobody reads scores 0, and so
// does every page of a settled pool where nothing moves: equal scores leave the order to
// the newest capture's LRU list (manifest.SortByHotness), as a single snapshot has it.
// Pages the newest capture does not hold are forgotten once their score falls under
// ScoreFloor, so the history holds what the pool holds plus the recently evicted pages
// that were touched.
//
// A pool that has not evicted a page yet (a server restarted with a pool larger than what
// has been read since) moves nothing towards the head: InnoDB makes a page young only once
// its LRU has begun to evict. There, a read from disk proves one access and a page read
// before proves nothing more, so a report read once outranked a hot set read before the
// history began, which the workload keeps reading in place (a warm --from cut to a budget
// missed 1,817 of its pages where a single snapshot's order missed none). What such a pool
// shows is when each page was first read, and a page a workload reads often is read early
// after a restart (a page read λ times a second waits 1/λ for its first read), a one-off
// at any time. So while the pool has evicted nothing (each interval static: at most a few
// pages left the list, freed rather than evicted, and no page moved up by more than those
// departures explain), an interval credits every page it held, as if touched: the longer
// a page has been resident, the higher it ranks. Once an interval shows the pool evicting,
// accesses show and residence no longer counts, idle intervals included: a sidecar's
// captures after the workload stopped credited a bulk load's leftovers as much as the
// hot set (the polluted-source bench's history missed 580 pages instead of tens).
type History struct {
	HalfLife time.Duration

	captures int
	start    time.Time // capture times are kept as seconds since start
	last     float64   // time of the newest capture
	norm     float64   // Σ w_k as of the newest capture
	objects  *objectTable
	pages    map[pageKey]*pageRecord
	// added counts the pages the newest capture held that the history did not.
	added int
	// held is how many pages the newest capture held.
	held int
	// evicted: an interval showed the pool evicting (pages left it, or moved up): InnoDB
	// makes pages young from then on, and residence is no evidence any more.
	evicted bool
}

// ScoreFloor is the score under which a page the newest capture does not hold is dropped.
const ScoreFloor = 0.01

type pageKey struct{ object, page uint32 }

type pageRecord struct {
	sum  float64 // Σ w_k · touched_k, as of capture time at
	at   float64 // the time of the last capture that held the page
	k    int     // and its number
	seen int
	lru  uint32 // position and sublist in that capture
	old  bool
	// rng is the newest key range a capture read for the page, with the key columns it
	// was read with (a range read before the index changed is dropped).
	rng  manifest.Range
	next uint32
	cols string
}

// observed is one page of a capture, its object interned in the capture's (or the
// history's) object table, with its key range when the capture read one.
type observed struct {
	object, page, lru uint32
	// next is the page's right neighbour when its key range ends where that page's starts
	// (then the range has no High of its own).
	next uint32
	old  bool
	// kt is the page's key range when the capture read one (with its object's key
	// columns), in the capture's text.
	kt keyText
}

// NewHistory starts an empty history whose captures lose half their weight in halfLife.
func NewHistory(halfLife time.Duration) *History {
	return &History{HalfLife: max(halfLife, time.Second), objects: newObjectTable(), pages: map[pageKey]*pageRecord{}}
}

// HalfLifeFor is the half-life Every gives its history: four intervals, at least a
// minute, so that a page touched a few captures ago still outranks the untouched.
func HalfLifeFor(interval time.Duration) time.Duration { return max(4*interval, time.Minute) }

// Captures is how many captures the history has taken in.
func (h *History) Captures() int { return h.captures }

// Added is how many pages the newest capture held that the history did not: it falls
// towards 0 once the workload's hot set has been seen.
func (h *History) Added() int { return h.added }

// Pages is how many pages the history holds.
func (h *History) Pages() int { return len(h.pages) }

// decay is the factor a weight loses over dt seconds.
func (h *History) decay(dt float64) float64 {
	return math.Exp2(-dt / h.HalfLife.Seconds())
}

// observe takes in one capture taken at the given time; txt holds its key ranges' text.
func (h *History) observe(at time.Time, pages []observed, txt *texts) {
	if h.captures == 0 {
		h.start = at
	}
	now := max(at.Sub(h.start).Seconds(), h.last)
	first := h.captures == 0
	prev := h.last
	h.norm = h.norm*h.decay(now-h.last) + 1
	h.last = now
	h.captures++
	h.added = 0
	// The pages this capture credits no touch, how many of the previous capture's pages it
	// holds still and how far one of them moved up at most: whether the interval was
	// static (the type's comment).
	var untouched, keptRecs []*pageRecord
	kept, held, maxUp := 0, 0, int64(0)
	for _, p := range pages {
		key := pageKey{p.object, p.page}
		r := h.pages[key]
		if r == nil {
			r = &pageRecord{}
			h.pages[key] = r
			h.added++
		}
		if r.seen > 0 && r.k == h.captures-1 {
			continue // the same page twice in one capture: a list read while it moved
		}
		held++
		touched := 0.0
		switch {
		case first:
		case r.seen == 0 || r.k != h.captures-2:
			touched = 1 // read from disk since the previous capture
		default:
			kept++
			keptRecs = append(keptRecs, r)
			maxUp = max(maxUp, int64(r.lru)-int64(p.lru))
			if p.lru < r.lru {
				// Moved towards the head: made young by an access. (A page crossing from old
				// to young proves nothing: the boundary moves as the sublists are kept at 3:5.)
				touched = 1
			}
		}
		if touched == 0 {
			untouched = append(untouched, r)
		}
		r.sum = r.sum*h.decay(now-r.at) + touched
		r.at, r.k, r.lru, r.old = now, h.captures-1, p.lru, p.old
		if p.kt.flags&ktRange != 0 {
			rng := txt.rangeOf(p.kt)
			r.rng = manifest.Range{Low: strings.Clone(rng.Low), High: strings.Clone(rng.High)}
			r.next, r.cols = p.next, h.objects.keyCols[p.object]
		}
		r.seen++
	}
	// Pages freed (a dropped table, purged undo) leave a pool that evicts nothing, and the
	// pages behind them move up by as many places.
	left := int64(h.held - kept)
	static := left <= max(16, int64(h.held)/200) && maxUp <= left
	h.evicted = h.evicted || !first && !static
	if !first && static && !h.evicted {
		for _, r := range untouched {
			r.sum++
		}
		if h.captures == 2 {
			// The first capture's pages had been resident before it, too.
			for _, r := range keptRecs {
				r.sum += h.decay(now - prev)
			}
		}
	}
	h.held = held
	for key, r := range h.pages {
		if r.k != h.captures-1 && h.score(r) < ScoreFloor {
			delete(h.pages, key)
		}
	}
}

// score is a page's score as of the newest capture, 0 to 1.
func (h *History) score(r *pageRecord) float64 {
	if h.norm == 0 {
		return 0
	}
	return r.sum * h.decay(h.last-r.at) / h.norm
}

// write writes every page the history holds, hottest first, with its history fields; it
// stops when ctx is done.
func (h *History) write(ctx context.Context, w *manifest.Writer) error {
	captures := min(h.captures, math.MaxUint16)
	out := newEntriesOut(len(h.pages), len(h.pages))
	for key, r := range h.pages {
		e := manifest.Entry{
			Object: key.object, Page: key.page, LRU: r.lru, Old: r.old,
			Seen:  uint16(min(r.seen, captures)),
			Last:  uint16(min(h.captures-1-r.k, captures-1)),
			Score: uint32(math.Round(h.score(r) * manifest.ScoreMax)),
		}
		if r.cols != "" && r.cols == h.objects.keyCols[key.object] {
			out.add(e, r.rng, r.next)
		} else {
			out.add(e, manifest.Range{}, noPage)
		}
	}
	out.sortByHotness()
	out.linkByText()
	return out.write(ctx, w, h.objects)
}

// noPage: no right neighbour known.
const noPage = ^uint32(0)

// entriesOut are the entries of a manifest about to be written, with their key ranges:
// an entry's Range is 1 + the index of its range (and its right neighbour) in ranges.
type entriesOut struct {
	entries []manifest.Entry
	ranges  []manifest.Range
	nexts   []uint32
}

// newEntriesOut holds n entries, keyed of them with a range.
func newEntriesOut(n, keyed int) *entriesOut {
	return &entriesOut{entries: make([]manifest.Entry, 0, n), ranges: make([]manifest.Range, 0, keyed), nexts: make([]uint32, 0, keyed)}
}

func (o *entriesOut) add(e manifest.Entry, r manifest.Range, next uint32) {
	e.Range = 0
	if r.Known() {
		o.ranges = append(o.ranges, r)
		o.nexts = append(o.nexts, next)
		e.Range = uint32(len(o.ranges))
	}
	o.entries = append(o.entries, e)
}

func (o *entriesOut) sortByHotness() { manifest.SortByHotness(o.entries) }

// linkByText writes a range's end as "@N" where page N of the same object starts it (its
// Low is the end's key): a history's pages and their right neighbours were read in
// different captures.
func (o *entriesOut) linkByText() {
	starts := map[uint32]map[string]uint32{} // object -> low key -> page
	for _, e := range o.entries {
		if e.Range == 0 {
			continue
		}
		if low := o.ranges[e.Range-1].Low; low != "" && low != manifest.OpenBound {
			if starts[e.Object] == nil {
				starts[e.Object] = map[string]uint32{}
			}
			starts[e.Object][low] = e.Page
		}
	}
	for _, e := range o.entries {
		if e.Range == 0 {
			continue
		}
		r := &o.ranges[e.Range-1]
		if r.High != "" && r.High != manifest.OpenBound {
			if page, ok := starts[e.Object][r.High]; ok && page != e.Page {
				r.High = manifest.PageBound(page)
			}
		}
	}
}

// write writes the entries in their order, their objects numbered in the order they first
// appear, a range whose end is where its right neighbour starts written "@N".
func (o *entriesOut) write(ctx context.Context, w *manifest.Writer, objs *objectTable) error {
	ew := newEntryWriter(w, objs)
	for i, e := range o.entries {
		if i%interruptCheckEntries == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		var r manifest.Range
		next := noPage
		if e.Range > 0 {
			r, next = o.ranges[e.Range-1], o.nexts[e.Range-1]
		}
		if err := ew.write(e, r, next); err != nil {
			return err
		}
	}
	return nil
}

// interruptCheckEntries is how many entries a manifest's encoding writes between looks at
// its context: a 512 GiB pool's 33M pages take tens of seconds, a 65,536th of them well
// under a millisecond.
const interruptCheckEntries = 1 << 16

// entryWriter writes entries whose objects are numbered by an objectTable: it writes each
// object's line before its first entry, and a range that ends where its right neighbour
// starts with "@N".
type entryWriter struct {
	w    *manifest.Writer
	objs *objectTable
	ids  []int64 // the objectTable's id -> the manifest's, -1 before its first entry
	at   []byte  // "@N", valid while the entry is written
}

func newEntryWriter(w *manifest.Writer, objs *objectTable) *entryWriter {
	ids := make([]int64, len(objs.objects))
	for i := range ids {
		ids[i] = -1
	}
	return &entryWriter{w: w, objs: objs, ids: ids}
}

// write writes e (its Object the objectTable's id) with its range, whose end is where page
// next starts when r has a start and no end.
func (ew *entryWriter) write(e manifest.Entry, r manifest.Range, next uint32) error {
	if ew.ids[e.Object] < 0 {
		id, err := ew.w.Object(ew.objs.object(e.Object))
		if err != nil {
			return err
		}
		ew.ids[e.Object] = int64(id)
	}
	if r.Low != "" && r.High == "" && next != noPage {
		ew.at = strconv.AppendUint(append(ew.at[:0], '@'), uint64(next), 10)
		r.High = unsafe.String(&ew.at[0], len(ew.at))
	}
	e.Object, e.Range = uint32(ew.ids[e.Object]), 0
	return ew.w.WriteEntryRange(e, r)
}
