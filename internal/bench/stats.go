package bench

import (
	"math"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds from 1 µs to one hour (longer ones are recorded as
// one hour), with 3 significant digits (0.1%), or 2 (1%) above manyClients, where each
// client's histogram would cost 200 KB.
const (
	histLowest  = int64(time.Microsecond)
	histHighest = int64(time.Hour)
	manyClients = 128
)

func newHist() *hdr.Histogram { return hdr.New(histLowest, histHighest, 3) }

func newHistFor(clients int) *hdr.Histogram {
	if clients > manyClients {
		return hdr.New(histLowest, histHighest, 2)
	}
	return newHist()
}

func record(h *hdr.Histogram, d time.Duration) {
	v := int64(d)
	if v < 1 {
		v = 1
	}
	if v > histHighest {
		v = histHighest
	}
	_ = h.RecordValue(v)
}

// recorder is one client's running interval: the client records every query into it, the
// reporter swaps it for an empty one at each interval. The lock is taken by one goroutine at
// a time but for a few nanoseconds at each interval's end.
type recorder struct {
	mu   sync.Mutex
	hist *hdr.Histogram
	// txHist holds the latency of whole transactions (a transaction workload's events,
	// BEGIN to COMMIT, retries included): sysbench's percentiles are of these. nil for
	// other runs.
	txHist *hdr.Histogram
	// keepsTx says txHist is kept: set once, read without the lock (txHist itself is
	// swapped under it at each interval).
	keepsTx bool
	queries int64
	errors  int64
	events  int64
}

func newRecorder(clients int) *recorder { return &recorder{hist: newHistFor(clients)} }

// newTxRecorder is newRecorder for a transaction workload: it also keeps the
// transactions' latency.
func newTxRecorder(clients int) *recorder {
	return &recorder{hist: newHistFor(clients), txHist: newHistFor(clients), keepsTx: true}
}

// ok records a query that succeeded; events is 1 when it completed an event (a
// transaction of a workload), else 0.
func (r *recorder) ok(d time.Duration, events int64) {
	r.mu.Lock()
	record(r.hist, d)
	r.queries++
	r.events += events
	r.mu.Unlock()
}

// okTx records the statement that completed a transaction (d), and the transaction (tx).
func (r *recorder) okTx(d, tx time.Duration) {
	r.mu.Lock()
	record(r.hist, d)
	record(r.txHist, tx)
	r.queries++
	r.events++
	r.mu.Unlock()
}

func (r *recorder) failed() {
	r.mu.Lock()
	r.errors++
	r.mu.Unlock()
}

// take hands the recorded interval over and starts a new one in spare (reset); with
// txSpare (a recorder that keeps transactions), the interval's transaction latencies too,
// under the same lock: taken apart, a transaction recorded between the two counted in one
// interval and its latency in the next (a CI run: an interval of 1 transaction and no
// transaction p95).
func (r *recorder) take(spare, txSpare *hdr.Histogram) (h, tx *hdr.Histogram, queries, errors, events int64) {
	spare.Reset()
	if r.keepsTx && txSpare != nil {
		txSpare.Reset()
	}
	r.mu.Lock()
	h, r.hist = r.hist, spare
	if r.keepsTx && txSpare != nil {
		tx, r.txHist = r.txHist, txSpare
	}
	queries, errors, events = r.queries, r.errors, r.events
	r.queries, r.errors, r.events = 0, 0, 0
	r.mu.Unlock()
	return h, tx, queries, errors, events
}

// Latency summarises a histogram in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min_ms"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func summarize(h *hdr.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	v := h.ValueAtPercentilesSlice([]float64{50, 95, 99, 99.9})
	return Latency{
		Count: h.TotalCount(), Min: ms(h.Min()), Mean: h.Mean() / 1e6,
		P50: ms(v[0]), P95: ms(v[1]), P99: ms(v[2]), P999: ms(v[3]), Max: ms(h.Max()),
	}
}

// Bucket is one bar of the printed latency histogram.
type Bucket struct {
	UpToMs float64 `json:"le_ms"`
	Count  int64   `json:"count"`
}

// buckets folds a histogram into logarithmic buckets, perDoubling to each factor of two,
// from the smallest to the largest value recorded.
func buckets(h *hdr.Histogram, perDoubling int) []Bucket {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	step := math.Pow(2, 1/float64(perDoubling))
	var out []Bucket
	var bound float64 // upper bound of the current bucket, in ns
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		v := float64(bar.To)
		if bound == 0 {
			// Start at the power of step just above the first value.
			bound = math.Pow(step, math.Ceil(math.Log(math.Max(v, 1))/math.Log(step)))
		}
		for v > bound {
			bound *= step
			out = append(out, Bucket{UpToMs: bound / 1e6})
		}
		if len(out) == 0 {
			out = append(out, Bucket{UpToMs: bound / 1e6})
		}
		out[len(out)-1].Count += bar.Count
	}
	return out
}
