package experiment

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/bench"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
)

// Pass is one run of a query list, with the buffer pool's counters around it.
type Pass struct {
	Name    string  `json:"name"`
	Queries int64   `json:"queries"`
	Seconds float64 `json:"seconds"` // querying time, connection set-up excluded
	QPS     float64 `json:"qps"`
	P50     float64 `json:"p50_ms"`
	P95     float64 `json:"p95_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
	// Misses are the pass's synchronous buffer-pool misses (Innodb_buffer_pool_reads);
	// ReadAhead the pages read ahead meanwhile (Innodb_buffer_pool_read_ahead); Requests its
	// logical page reads (Innodb_buffer_pool_read_requests). Server-wide counters: the
	// server's own background work counts too.
	Misses    int64 `json:"misses"`
	ReadAhead int64 `json:"read_ahead"`
	Requests  int64 `json:"read_requests"`
	// Start is when the pass began, in seconds after the server answered following its
	// last restart (0 when there was none).
	Start      float64 `json:"start_s"`
	Curve      []Point `json:"curve,omitempty"`
	RatioToHot float64 `json:"ratio_to_hot,omitempty"`
}

// MissesPerQuery is Misses over Queries.
func (p *Pass) MissesPerQuery() float64 {
	if p.Queries == 0 {
		return 0
	}
	return float64(p.Misses) / float64(p.Queries)
}

// Point is one interval of a pass: throughput and p95 latency.
type Point struct {
	T   float64 `json:"t_s"` // end of the interval, seconds since the pass began
	QPS float64 `json:"qps"`
	P95 float64 `json:"p95_ms"`
}

// counters are the buffer pool's read counters.
type counters struct{ reads, readAhead, requests int64 }

func readCounters(ctx context.Context, conn *connection.Conn) (counters, error) {
	st, err := conn.GlobalStatus(ctx, "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_ahead", "Innodb_buffer_pool_read_requests")
	if err != nil {
		return counters{}, fmt.Errorf("read buffer pool counters: %w", err)
	}
	return counters{reads: st["innodb_buffer_pool_reads"], readAhead: st["innodb_buffer_pool_read_ahead"], requests: st["innodb_buffer_pool_read_requests"]}, nil
}

// statusInt reads one global status counter.
func statusInt(ctx context.Context, conn *connection.Conn, name string) (int64, error) {
	var k string
	var v int64
	if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE ?", name).Scan(&k, &v); err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	return v, nil
}

// passSpec says how to run a pass.
type passSpec struct {
	name      string
	schema    string
	query     string // SQL text or a file of statements
	delimiter string
	interval  time.Duration // per-interval curve; 0: none
	quiet     bool
}

// runPass runs the statement list once on one connection with innowarm bench (latency in
// HdrHistograms, a line per interval as progress) and reads the pool's counters around it.
func runPass(ctx context.Context, conn *connection.Conn, spec passSpec, log *logx.Logger) (*Pass, error) {
	o := bench.Defaults()
	o.Query, o.Schema, o.ConcurrencySpec, o.Iterations = spec.query, spec.schema, "1", 1
	if spec.delimiter != "" {
		o.Delimiter = spec.delimiter
	}
	o.ReportInterval = spec.interval
	plan, err := bench.NewPlan(o)
	if err != nil {
		return nil, err
	}
	sink := &bench.Sink{}
	if !spec.quiet && spec.interval > 0 {
		sink.Intervals = &prefixLog{log: log, prefix: spec.name + ": "}
	}
	before, err := readCounters(ctx, conn)
	if err != nil {
		return nil, err
	}
	// bench's own notes (running in a schema it did not create) are not news here.
	rep, err := bench.Run(ctx, plan, bench.Env{Admin: conn, Sink: sink, Log: logx.New(log.Writer(), true)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	after, err := readCounters(ctx, conn)
	if err != nil {
		return nil, err
	}
	if len(rep.Runs) == 0 {
		return nil, fmt.Errorf("%s: the run measured nothing", spec.name)
	}
	l := rep.Runs[0]
	p := &Pass{
		Name: spec.name, Queries: l.Queries, Seconds: l.QuerySeconds, QPS: l.QPS,
		P50: l.Latency.P50, P95: l.Latency.P95, P99: l.Latency.P99, Max: l.Latency.Max,
		Misses: after.reads - before.reads, ReadAhead: after.readAhead - before.readAhead, Requests: after.requests - before.requests,
	}
	for _, iv := range l.Intervals {
		p.Curve = append(p.Curve, Point{T: iv.Elapsed, QPS: iv.QPS, P95: iv.P95})
	}
	if len(p.Curve) == 0 && p.Queries > 0 {
		// A pass shorter than half a report interval has no interval of its own (bench,
		// as sysbench, reports at interval boundaries): its curve is its one point (a CI
		// run's pass of 2,000 lookups in 47 ms had none to draw).
		p.Curve = []Point{{T: p.Seconds, QPS: p.QPS, P95: p.P95}}
	}
	if !spec.quiet {
		log.Infof("%s: %d queries in %.2f s (%.0f/s), p95 %.2f ms, %d misses, %d read ahead", spec.name, p.Queries, p.Seconds, p.QPS, p.P95, p.Misses, p.ReadAhead)
	}
	return p, nil
}

// prefixLog turns the lines written to it into log lines with a prefix.
type prefixLog struct {
	log    *logx.Logger
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (w *prefixLog) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.Join(strings.Fields(string(w.buf[:i])), " ")
		w.buf = w.buf[i+1:]
		if line != "" {
			w.log.Infof("%s%s", w.prefix, line)
		}
	}
	return len(b), nil
}
