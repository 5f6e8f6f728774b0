package bench

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Sink is where results go: mysqlslap's block with innowarm's lines (text), mysqlslap's
// CSV lines, live interval lines. JSON is the caller's: it prints the Report at the end.
type Sink struct {
	Out       io.Writer // the text blocks; nil: none (--silent, --json, --csv)
	CSV       io.Writer // nil: no CSV
	Intervals io.Writer // live --report-interval lines; nil: none
	Histogram bool

	mu sync.Mutex
}

func (r *runner) emitLevel(l *Level) {
	l.finish(r.p.Histogram)
	r.report.Runs = append(r.report.Runs, l)
	r.env.Sink.level(r.p, l)
}

func (s *Sink) interval(p *Plan, iv Interval) {
	if s == nil || s.Intervals == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	iter := ""
	if p.Iterations > 1 {
		iter = fmt.Sprintf(" iteration %d/%d", iv.Iteration, p.Iterations)
	}
	ev := ""
	if p.Transactions() {
		ev = fmt.Sprintf("  tps %.1f", iv.EPS)
	}
	tx := ""
	if p.Transactions() {
		tx = fmt.Sprintf("  txn p95 %s ms", fmtMs(iv.TxP95))
	}
	fmt.Fprintf(s.Intervals, "[ %6.1fs ] clients %d%s%s  qps %.1f  p95 %s ms  errors %d%s\n",
		iv.Elapsed, iv.Clients, iter, ev, iv.QPS, fmtMs(iv.P95), iv.Errors, tx)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// fmtMs prints milliseconds with 3 significant decimals for small values.
func fmtMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	case v >= 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// mysqlslapSeconds prints seconds the way mysqlslap does ("%ld.%03ld").
func mysqlslapSeconds(s float64) string {
	ms := int64(s*1000 + 0.5)
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

func (s *Sink) level(p *Plan, l *Level) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Out != nil {
		WriteBlock(s.Out, p, l)
		if s.Histogram {
			writeHistogram(s.Out, l)
		}
	}
	if s.CSV != nil && l.Partial == "" { // a CSV line has no room to say it is partial
		fmt.Fprintf(s.CSV, "%s,%s,%s,%s,%s,%d,%d\n", l.Engine, p.LoadTypeName(),
			mysqlslapSeconds(l.AvgSeconds), mysqlslapSeconds(l.MinSeconds), mysqlslapSeconds(l.MaxSeconds), l.Clients, l.QueriesPerClient)
	}
}

// WriteBlock prints mysqlslap's result block, then innowarm's lines in the same block.
func WriteBlock(w io.Writer, p *Plan, l *Level) {
	var b strings.Builder
	if l.Partial != "" {
		// Not mysqlslap's "Benchmark" header: a script that parses those blocks must not
		// take a run cut short for a whole one.
		fmt.Fprintf(&b, "Benchmark (PARTIAL: %s; the figures cover what ran until then)\n", l.Partial)
	} else {
		b.WriteString("Benchmark\n")
	}
	if l.Engine != "" {
		fmt.Fprintf(&b, "\tRunning for engine %s\n", l.Engine)
	}
	fmt.Fprintf(&b, "\tAverage number of seconds to run all queries: %s seconds\n", mysqlslapSeconds(l.AvgSeconds))
	fmt.Fprintf(&b, "\tMinimum number of seconds to run all queries: %s seconds\n", mysqlslapSeconds(l.MinSeconds))
	fmt.Fprintf(&b, "\tMaximum number of seconds to run all queries: %s seconds\n", mysqlslapSeconds(l.MaxSeconds))
	fmt.Fprintf(&b, "\tNumber of clients running queries: %d\n", l.Clients)
	fmt.Fprintf(&b, "\tAverage number of queries per client: %d\n", l.QueriesPerClient)

	errs := fmt.Sprintf("%d errors", l.Errors)
	if l.Errors == 1 {
		errs = "1 error"
	}
	over := ""
	if n := len(l.Iterations); n > 1 {
		over = fmt.Sprintf(" (%d iterations)", n)
	}
	fmt.Fprintf(&b, "\tQueries: %d in %.3f s of querying%s: %.1f per second, %s\n", l.Queries, l.QuerySeconds, over, l.QPS, errs)
	if p.Mode == ModeWorkload {
		what := "Events"
		if p.Transactions() {
			what = "Transactions"
		}
		fmt.Fprintf(&b, "\t%s: %d, %.1f per second (%s, %s keys)\n", what, l.Events, l.EPS, p.Workload, p.Key)
	}
	if p.Rate > 0 && l.QuerySeconds > 0 {
		// Open loop: say whether the server kept up with the rate. Events still due at the
		// end of a round are in no latency: without this line, a server far behind the
		// rate would show only the latency of the events it did run.
		asked := p.Rate * l.QuerySeconds
		fmt.Fprintf(&b, "\tOpen loop: %s events/s asked, %.1f run (%.0f%%)", strconv.FormatFloat(p.Rate, 'f', -1, 64), l.EPS, 100*float64(l.Events)/asked)
		if l.EventsBehind > 0 {
			fmt.Fprintf(&b, "; the server fell behind: %d events due were never run (in no latency)", l.EventsBehind)
		}
		b.WriteString("\n")
	}
	if lat := l.Latency; lat.Count > 0 {
		fmt.Fprintf(&b, "\tQuery latency (ms): p50 %s  p95 %s  p99 %s  p99.9 %s  max %s\n",
			fmtMs(lat.P50), fmtMs(lat.P95), fmtMs(lat.P99), fmtMs(lat.P999), fmtMs(lat.Max))
	} else {
		b.WriteString("\tQuery latency: no query succeeded\n")
	}
	if lat := l.TransactionLatency; lat != nil {
		from := "BEGIN"
		if p.Rate > 0 {
			from = "its scheduled start"
		}
		fmt.Fprintf(&b, "\tTransaction latency (ms): p50 %s  p95 %s  p99 %s  p99.9 %s  max %s  (%s to COMMIT, retries included: sysbench's)\n",
			fmtMs(lat.P50), fmtMs(lat.P95), fmtMs(lat.P99), fmtMs(lat.P999), fmtMs(lat.Max), from)
	}
	re := ""
	if l.Reconnects > 0 {
		re = fmt.Sprintf(" (%d of them --detach reconnects)", l.Reconnects)
	}
	fmt.Fprintf(&b, "\tConnection set-up: %d connections%s, avg %s ms, max %s ms: timed apart, not in the query latency\n",
		l.Connections, re, fmtMs(l.Connect.Mean), fmtMs(l.Connect.Max))
	if l.Queries+l.Errors > 0 {
		fmt.Fprintf(&b, "\tClient CPU: %.3f s per 10k queries\n", l.CPUPer10k)
	}
	for _, k := range sortedByCount(l.ErrorCounts) {
		why := "--ignore-errors"
		if p.Transactions() {
			why = "--ignore-errors, or a deadlock or lock wait: the transaction ran again"
		}
		fmt.Fprintf(&b, "\tFailed (%s): %d x %s\n", why, l.ErrorCounts[k], k)
	}
	for _, k := range sortedByCount(l.StopErrorCounts) {
		fmt.Fprintf(&b, "\tFailed (stopped the run): %d x %s\n", l.StopErrorCounts[k], k)
	}
	b.WriteString("\n")
	_, _ = io.WriteString(w, b.String())
}

func writeHistogram(w io.Writer, l *Level) {
	if len(l.Histogram) == 0 {
		return
	}
	var maxCount int64
	for _, bk := range l.Histogram {
		maxCount = max(maxCount, bk.Count)
	}
	var b strings.Builder
	engine := ""
	if l.Engine != "" {
		engine = ", engine " + l.Engine
	}
	fmt.Fprintf(&b, "Latency histogram (%s%s; each value is its bucket's upper bound, in ms)\n", plural(l.Clients, "client"), engine)
	fmt.Fprintf(&b, "%12s  %-40s  %s\n", "value", "------------- distribution -------------", "count")
	for _, bk := range l.Histogram {
		if bk.Count == 0 {
			continue
		}
		bar := int((bk.Count*40 + maxCount - 1) / maxCount)
		fmt.Fprintf(&b, "%12s |%-40s  %d\n", fmtMs(bk.UpToMs), strings.Repeat("*", bar), bk.Count)
	}
	b.WriteString("\n")
	_, _ = io.WriteString(w, b.String())
}

// sortedByCount lists the keys of counts, the largest count first (then by key, so that
// equal counts print in a stable order).
func sortedByCount(counts map[string]int64) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
