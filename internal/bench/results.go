package bench

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Interval is one --report-interval line.
type Interval struct {
	Iteration int     `json:"iteration"`
	Clients   int     `json:"clients"`
	Elapsed   float64 `json:"elapsed_s"` // since the clients started querying
	Seconds   float64 `json:"seconds"`   // length of this interval
	Queries   int64   `json:"queries"`
	QPS       float64 `json:"qps"`
	Events    int64   `json:"events,omitempty"`
	EPS       float64 `json:"events_per_s,omitempty"`
	P50       float64 `json:"p50_ms"`
	P95       float64 `json:"p95_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
	Errors    int64   `json:"errors"`
	// TxP95 (read-only and read-write) is the interval's p95 of whole transactions, as
	// sysbench's interval lines report.
	TxP95 float64 `json:"transaction_p95_ms,omitempty"`
	// Latency is the interval's histogram (nanoseconds), with KeepIntervalHistograms.
	Latency *hdr.Histogram `json:"-"`
}

// SlowerThan counts the interval's queries slower than d, at the histogram's resolution
// (three significant digits); 0 without KeepIntervalHistograms.
func (iv Interval) SlowerThan(d time.Duration) int64 {
	if iv.Latency == nil {
		return 0
	}
	var n int64
	for _, b := range iv.Latency.Distribution() {
		if b.From > int64(d) {
			n += b.Count
		}
	}
	return n
}

// reporter collects the clients' recorders at every interval and at the end.
type reporter struct {
	r       *runner
	spec    roundSpec
	workers []*worker
	every   time.Duration
	start   time.Time
	last    time.Time
	spare   *hdr.Histogram
	iv      *hdr.Histogram
	total   *hdr.Histogram
	// Transaction workloads: the same for whole transactions; nil otherwise.
	txSpare, txIv, txTotal *hdr.Histogram
	queries                int64
	errors                 int64
	events                 int64
	intervals              []Interval
}

func newReporter(r *runner, spec roundSpec, workers []*worker, start time.Time) *reporter {
	n := spec.clients
	rp := &reporter{r: r, spec: spec, workers: workers, every: r.p.ReportInterval, start: start, last: start,
		spare: newHistFor(n), iv: newHistFor(n), total: newHistFor(n)}
	if r.p.Transactions() {
		rp.txSpare, rp.txIv, rp.txTotal = newHistFor(n), newHistFor(n), newHistFor(n)
	}
	return rp
}

// loop collects every interval until done is closed, then once more.
func (rp *reporter) loop(done <-chan struct{}) {
	if rp.every <= 0 {
		<-done
		rp.collect(time.Now(), true)
		return
	}
	t := time.NewTicker(rp.every)
	defer t.Stop()
	for {
		select {
		case <-done:
			rp.collect(time.Now(), true)
			return
		case <-t.C:
			rp.collect(time.Now(), false)
		}
	}
}

// collect takes the clients' counts at now; final is the round's end, whose stub of an
// interval is reported only when reportsTail says so.
func (rp *reporter) collect(now time.Time, final bool) {
	rp.iv.Reset()
	if rp.txIv != nil {
		rp.txIv.Reset()
	}
	var q, e, ev int64
	for _, w := range rp.workers {
		h, th, wq, we, wev := w.rec.take(rp.spare, rp.txSpare)
		rp.iv.Merge(h)
		rp.spare = h // the next client's new histogram (take resets it)
		q, e, ev = q+wq, e+we, ev+wev
		if th != nil && rp.txIv != nil {
			rp.txIv.Merge(th)
			rp.txSpare = th
		}
	}
	rp.total.Merge(rp.iv)
	if rp.txIv != nil {
		rp.txTotal.Merge(rp.txIv)
	}
	rp.queries, rp.errors, rp.events = rp.queries+q, rp.errors+e, rp.events+ev
	secs := now.Sub(rp.last).Seconds()
	rp.last = now
	if rp.every <= 0 || (final && !reportsTail(q, e, secs, rp.every)) {
		return
	}
	l := summarize(rp.iv)
	iv := Interval{
		Iteration: rp.spec.iteration, Clients: rp.spec.clients, Elapsed: now.Sub(rp.start).Seconds(), Seconds: secs,
		Queries: q, QPS: float64(q) / secs, P50: l.P50, P95: l.P95, P99: l.P99, Max: l.Max, Errors: e,
	}
	if rp.r.p.Mode == ModeWorkload {
		iv.Events, iv.EPS = ev, float64(ev)/secs
	}
	if rp.txIv != nil {
		iv.TxP95 = summarize(rp.txIv).P95
	}
	if rp.r.p.KeepIntervalHistograms {
		iv.Latency = hdr.Import(rp.iv.Export())
	}
	rp.intervals = append(rp.intervals, iv)
	rp.r.env.Sink.interval(rp.r.p, iv)
}

// reportsTail says whether the stub of an interval a round ends in gets a line of its
// own. sysbench reports only at interval boundaries; a stub of a few microseconds (the
// clients stopped just after a tick) would print a rate of a handful of queries at the
// previous line's timestamp. One shorter than half an interval is left out of the
// intervals; its queries still count in the round's totals.
func reportsTail(queries, errors int64, secs float64, every time.Duration) bool {
	return (queries > 0 || errors > 0) && secs >= every.Seconds()/2
}

// result is the round's totals, once its clients are done.
func (rp *reporter) result() *roundResult {
	return &roundResult{queries: rp.queries, errors: rp.errors, events: rp.events, hist: rp.total, txHist: rp.txTotal, intervals: rp.intervals}
}

// Iteration is one round of one concurrency level.
type Iteration struct {
	Iteration      int     `json:"iteration"`
	Seconds        float64 `json:"seconds"`
	ConnectSeconds float64 `json:"connect_seconds"`
	QuerySeconds   float64 `json:"query_seconds"`
	Queries        int64   `json:"queries"`
	Errors         int64   `json:"errors"`
	QPS            float64 `json:"qps"`
	// Started is when the clients began querying: in-process callers line the intervals up
	// with their own clock (a server's restart) by it.
	Started time.Time `json:"-"`
}

// Level is the result of one concurrency level of one engine, over its iterations.
type Level struct {
	Engine  string `json:"engine,omitempty"`
	Clients int    `json:"clients"`
	// Partial says why the level's figures cover only part of its run (a query failed, a
	// connection was lost): what ran until then. "" for a level that ran to its end.
	Partial string `json:"partial,omitempty"`

	// mysqlslap's block: whole rounds, connection set-up included, in milliseconds as
	// mysqlslap counts them.
	AvgSeconds       float64 `json:"avg_seconds"`
	MinSeconds       float64 `json:"min_seconds"`
	MaxSeconds       float64 `json:"max_seconds"`
	QueriesPerClient int64   `json:"queries_per_client"`

	Queries     int64            `json:"queries"`
	Errors      int64            `json:"errors"`
	ErrorCounts map[string]int64 `json:"error_counts,omitempty"`
	// StopErrorCounts counts, by error, the statements that stopped a partial level (in
	// Errors too): when several clients failed at once, each one's failure.
	StopErrorCounts map[string]int64 `json:"stop_error_counts,omitempty"`
	Events          int64            `json:"events,omitempty"`
	QuerySeconds    float64          `json:"query_seconds"`
	QPS             float64          `json:"qps"`
	EPS             float64          `json:"events_per_s,omitempty"`
	Latency         Latency          `json:"latency"`
	// TransactionLatency (read-only and read-write) is whole transactions', BEGIN to COMMIT,
	// retries included, from the scheduled start in an open-loop run: sysbench's
	// percentiles are of these, not of single statements.
	TransactionLatency *Latency `json:"transaction_latency,omitempty"`
	Connections        int64    `json:"connections"`
	Reconnects         int64    `json:"reconnects,omitempty"`
	// EventsBehind (--rate with --time) counts the events whose scheduled start came
	// before the end of their round but that never began: the server fell behind the
	// rate, and these are in no latency.
	EventsBehind int64       `json:"events_behind_schedule,omitempty"`
	Connect      Latency     `json:"connect"`
	CPUSeconds   float64     `json:"client_cpu_seconds"`
	CPUPer10k    float64     `json:"client_cpu_seconds_per_10k_queries"`
	Iterations   []Iteration `json:"iterations"`
	Intervals    []Interval  `json:"intervals,omitempty"`
	Histogram    []Bucket    `json:"histogram,omitempty"`

	hist, connHist, txHist *hdr.Histogram
	msTimes                []int64
}

func newLevel(engine string, clients int) *Level {
	return &Level{Engine: engine, Clients: clients, hist: newHistFor(clients), connHist: newHist(), ErrorCounts: map[string]int64{}}
}

func (l *Level) add(rr *roundResult) {
	l.msTimes = append(l.msTimes, int64(rr.seconds*1000))
	l.Iterations = append(l.Iterations, Iteration{
		Iteration: rr.iteration, Seconds: rr.seconds, ConnectSeconds: rr.connectSec, QuerySeconds: rr.querySec,
		Queries: rr.queries, Errors: rr.errors, QPS: float64(rr.queries) / rr.querySec, Started: rr.started,
	})
	l.Queries += rr.queries
	l.Errors += rr.errors
	l.Events += rr.events
	l.QuerySeconds += rr.querySec
	l.Reconnects += rr.reconnects
	l.EventsBehind += rr.behind
	l.CPUSeconds += rr.cpuSec
	l.Intervals = append(l.Intervals, rr.intervals...)
	l.hist.Merge(rr.hist)
	if rr.txHist != nil {
		if l.txHist == nil {
			l.txHist = newHistFor(l.Clients)
		}
		l.txHist.Merge(rr.txHist)
	}
	for _, d := range rr.connects {
		record(l.connHist, d)
	}
	for k, v := range rr.errCodes {
		l.ErrorCounts[k] += v
	}
	for k, v := range rr.fatalCodes {
		if l.StopErrorCounts == nil {
			l.StopErrorCounts = map[string]int64{}
		}
		l.StopErrorCounts[k] += v
	}
}

// finish computes the summary figures.
func (l *Level) finish(withHistogram bool) {
	n := int64(len(l.msTimes))
	if n == 0 {
		return
	}
	var sum int64
	minMs, maxMs := l.msTimes[0], l.msTimes[0]
	for _, t := range l.msTimes {
		sum += t
		minMs, maxMs = min(minMs, t), max(maxMs, t)
	}
	// mysqlslap averages whole milliseconds with integer division.
	l.AvgSeconds = float64(sum/n) / 1000
	l.MinSeconds = float64(minMs) / 1000
	l.MaxSeconds = float64(maxMs) / 1000
	l.QueriesPerClient = (l.Queries + l.Errors) / (int64(l.Clients) * n)
	if l.QuerySeconds > 0 {
		l.QPS = float64(l.Queries) / l.QuerySeconds
		l.EPS = float64(l.Events) / l.QuerySeconds
	}
	if l.Queries+l.Errors > 0 {
		l.CPUPer10k = l.CPUSeconds / float64(l.Queries+l.Errors) * 10000
	}
	l.Latency = summarize(l.hist)
	if l.txHist != nil && l.txHist.TotalCount() > 0 {
		tx := summarize(l.txHist)
		l.TransactionLatency = &tx
	}
	l.Connect = summarize(l.connHist)
	l.Connections = l.Connect.Count
	if len(l.ErrorCounts) == 0 {
		l.ErrorCounts = nil
	}
	if withHistogram {
		l.Histogram = buckets(l.hist, 4)
	}
}

// Report is a whole run, as --json prints it.
type Report struct {
	Tool     string   `json:"tool"`
	Mode     string   `json:"mode"`
	Schema   string   `json:"schema"`
	Server   string   `json:"server"`
	LoadType string   `json:"load_type"`
	Dist     string   `json:"dist,omitempty"`
	Rate     float64  `json:"rate,omitempty"` // --rate: events/s asked, open loop
	Tables   []string `json:"tables,omitempty"`
	Rows     []int64  `json:"rows,omitempty"`
	Runs     []*Level `json:"runs"`
}
