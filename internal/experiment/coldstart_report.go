package experiment

import (
	"fmt"
	"math"
	"strings"

	"github.com/innowarm/innowarm/internal/report"
)

// Table is the main result table: one row per pass.
func (r *ColdstartResult) Table() report.Table {
	t := report.Table{
		Header: []string{"scenario", "pass", "warm-up (s)", "seconds", "QPS", "p95 (ms)", "misses", "vs hot", "2017 (s)", "2017 vs hot"},
		Align:  []report.Align{report.AlignLeft, report.AlignLeft},
	}
	for _, s := range r.Scenarios {
		if s.Skipped != "" {
			t.Rows = append(t.Rows, []string{s.Label, "skipped: " + s.Skipped})
			continue
		}
		for i, p := range s.Passes {
			warmup := "—"
			if i == 0 && s.Warmup != nil {
				warmup = fmt.Sprintf("%.2f", s.Warmup.Seconds)
			}
			ref, refRatio := "—", "—"
			if v := reference(s.ID, i+1); v > 0 {
				ref = secs(v)
				refRatio = ratio(v / reference(ScenarioCold, 2))
			}
			t.Rows = append(t.Rows, []string{s.Label, p.Name, warmup, secs(p.Seconds), qps(p.QPS), msec(p.P95),
				commas(p.Misses), ratio(p.RatioToHot), ref, refRatio})
		}
	}
	return t
}

// summary is the line above the table.
func (r *ColdstartResult) summary() string {
	tb := r.Data
	if tb == nil {
		return ""
	}
	runs := ""
	if r.Params.Repeat > 1 {
		runs = fmt.Sprintf(" Every scenario ran %d times; each figure is the run with the median time.", r.Params.Repeat)
	}
	return fmt.Sprintf("%s unique-key lookups on test_data (%s rows, %s pages = %s) with a %s buffer pool (%s pages): %s. %s on %s, one connection, each scenario after a cold restart of its own.%s",
		commas(r.Lookups), commas(tb.Rows), commas(tb.Pages), fmtBytes(tb.Bytes), fmtBytes(r.PoolBytes), commas(r.PoolPages), fitsText(r.Fits), r.Server, r.Target, runs)
}

// Markdown is what the experiment prints on stdout.
func (r *ColdstartResult) Markdown() string {
	var b strings.Builder
	b.WriteString("## innowarm experiment coldstart\n\n")
	b.WriteString(r.summary() + "\n\n")
	b.WriteString(r.Table().Markdown())
	b.WriteString("\n2017 original (" + Original2017Text + ").\n")
	for _, n := range r.notes() {
		b.WriteString("Note: " + n + "\n")
	}
	return b.String()
}

// notes are the things a reader must know to judge the numbers.
func (r *ColdstartResult) notes() []string {
	out := append([]string{}, r.Notes...)
	for _, s := range r.Scenarios {
		if s.Restart != nil && s.Restart.Note != "" {
			out = append(out, s.Label+": "+s.Restart.Note)
		}
	}
	return out
}

// Page is the coldstart report.
func (r *ColdstartResult) Page() report.Page {
	params := fmt.Sprintf("rows=%s, lookups=%s, warm method %s, curve interval %s, schema %s", commas(r.Params.Rows), commas(r.Lookups), r.Params.WarmMethod, r.Params.Interval, r.Params.Schema)
	if r.Params.Snapshot {
		params += ", --snapshot"
	}
	if r.Params.Repeat > 1 {
		params += fmt.Sprintf(", --repeat %d (medians)", r.Params.Repeat)
	}
	p := report.Page{
		Title:    "innowarm experiment: coldstart",
		Subtitle: "Unique-key lookups after a cold restart, with and without a warm-up, beside the 2017 mysql-warmup benchmark",
		Meta:     r.meta(params),
	}
	intro := report.Text(r.summary() + "\n\n" +
		"Each scenario restarts the server cold (clean shutdown, OS page cache dropped or O_DIRECT, empty buffer pool), warms the pool its own way, then runs the same query file of distinct lookups on one connection. " +
		"Misses are the pass's synchronous buffer-pool misses (Innodb_buffer_pool_reads); pages read ahead are counted apart. 'vs hot' divides a pass's time by the hot (second) pass of the cold scenario.\n\n" +
		"Grey bars are the 2017 article's figures (" + Original2017Text + "); their machine and scale differ, compare the ratios. " +
		"Times move with whatever else the machine does (the load average is in the header); the misses do not.")
	p.Sections = append(p.Sections,
		report.Section{Heading: "Lookups after a cold restart", Content: []report.Block{intro, r.timesChart(), r.Table()}},
		report.Section{Heading: "Buffer-pool misses per pass", Content: []report.Block{
			report.Text("A pass that finds its pages in the pool has next to no misses; a cold pass reads nearly every page it touches from disk."),
			r.missesChart(), r.missesTable(),
		}},
		report.Section{Heading: "Warm-up curve", Content: []report.Block{
			report.Text(fmt.Sprintf("Per-%s p95 latency and throughput of the first pass after each restart, on a clock that starts when the server answers: a warmed scenario's line starts once its warm-up is done.", r.Params.Interval)),
			r.curveChart(),
		}},
		report.Section{Heading: "How each scenario ran", Content: []report.Block{r.detailsTable(), report.Text(strings.Join(append(r.details(), r.notes()...), "\n\n"))}},
	)
	return p
}

// firstPasses are the bars of the times chart: every scenario's first pass, the hot pass
// after the cold one, and the old tool's second pass (the article has that figure).
func (r *ColdstartResult) bars() (cats []string, vals, refs []float64) {
	for _, s := range r.Scenarios {
		for i, p := range s.Passes {
			if i > 0 && s.ID != ScenarioCold && s.ID != ScenarioOldTool {
				continue
			}
			name := "after " + s.Label
			switch {
			case s.ID == ScenarioCold && i == 0:
				name = "cold (1st pass)"
			case s.ID == ScenarioCold:
				name = "hot (2nd pass)"
			case i == 1:
				name = s.Label + ", 2nd pass"
			}
			ref := math.NaN()
			if v := reference(s.ID, i+1); v > 0 {
				ref = v
			}
			cats, vals, refs = append(cats, name), append(vals, p.Seconds), append(refs, ref)
		}
	}
	return cats, vals, refs
}

func (r *ColdstartResult) timesChart() report.BarChart {
	cats, vals, refs := r.bars()
	return report.BarChart{
		Name: "coldstart-times", Title: fmt.Sprintf("%s unique-key lookups after a cold restart", commas(r.Lookups)),
		ValueLabel: "time (s)", Categories: cats, Values: vals, SeriesName: "this run",
		References: refs, ReferenceName: "2017 original (10M rows)", ValueFormat: "%.2f s",
	}
}

func (r *ColdstartResult) missesChart() report.BarChart {
	var cats []string
	var vals []float64
	for _, s := range r.Scenarios {
		for _, p := range s.Passes {
			cats = append(cats, s.Label+", "+p.Name+" pass")
			vals = append(vals, float64(p.Misses))
		}
	}
	return report.BarChart{Name: "coldstart-misses", Title: "Buffer-pool misses per pass (Innodb_buffer_pool_reads)",
		ValueLabel: "misses", Categories: cats, Values: vals, ValueFormat: "%.0f"}
}

func (r *ColdstartResult) missesTable() report.Table {
	t := report.Table{Header: []string{"scenario", "pass", "misses", "read-ahead", "misses per query", "logical reads"},
		Align: []report.Align{report.AlignLeft, report.AlignLeft}}
	for _, s := range r.Scenarios {
		for _, p := range s.Passes {
			t.Rows = append(t.Rows, []string{s.Label, p.Name, commas(p.Misses), commas(p.ReadAhead), fmt.Sprintf("%.3f", p.MissesPerQuery()), commas(p.Requests)})
		}
	}
	return t
}

func (r *ColdstartResult) curveChart() report.LineChart {
	var upper, lower []report.Series
	for _, s := range r.Scenarios {
		if len(s.Passes) == 0 {
			continue
		}
		p := s.Passes[0]
		lat := report.Series{Name: s.Label}
		thr := report.Series{Name: s.Label}
		for _, pt := range p.Curve {
			x := p.Start + pt.T
			lat.X, lat.Y = append(lat.X, x), append(lat.Y, pt.P95)
			thr.X, thr.Y = append(thr.X, x), append(thr.Y, pt.QPS)
		}
		if len(lat.X) == 0 { // a pass shorter than one interval: one point for the whole pass
			x := p.Start + p.Seconds
			lat.X, lat.Y, thr.X, thr.Y = []float64{x}, []float64{p.P95}, []float64{x}, []float64{p.QPS}
		}
		upper, lower = append(upper, lat), append(lower, thr)
	}
	return report.LineChart{
		Name: "warmup-curve", Title: "First pass after a cold restart: p95 latency and throughput",
		XLabel: "seconds since the server answered after its restart", YLabel: "p95 latency (ms)",
		Series: upper, Lower: &report.LinePanel{YLabel: "queries per second", Series: lower},
	}
}

func (r *ColdstartResult) detailsTable() report.Table {
	t := report.Table{Header: []string{"scenario", "restart (s)", "test_data pages after restart", "warm-up", "warm-up (s)", "pages read", "MB/s"},
		Align: []report.Align{report.AlignLeft, report.AlignAuto, report.AlignAuto, report.AlignLeft}}
	for _, s := range r.Scenarios {
		row := []string{s.Label, "—", "—", "none", "—", "—", "—"}
		if s.Skipped != "" {
			row[3] = "skipped"
		}
		if s.Restart != nil {
			row[1], row[2] = fmt.Sprintf("%.1f", s.Restart.Seconds), commas(s.Restart.TablePages)
		}
		if w := s.Warmup; w != nil {
			row[3], row[4] = w.Method, fmt.Sprintf("%.2f", w.Seconds)
			row[5], row[6] = commas(w.PagesRead), fmt.Sprintf("%.0f", w.MBps)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// details say, per scenario, how the restart was cold and what the warm-up did.
func (r *ColdstartResult) details() []string {
	var out []string
	for _, s := range r.Scenarios {
		var parts []string
		if s.Skipped != "" {
			parts = append(parts, "skipped: "+s.Skipped)
		}
		if s.Restart != nil {
			parts = append(parts, "restart: "+s.Restart.Cold)
		}
		if w := s.Warmup; w != nil {
			if len(w.Statements) > 0 {
				parts = append(parts, "statements: "+strings.Join(w.Statements, "; "))
			}
			if w.Detail != "" {
				parts = append(parts, w.Detail)
			}
		}
		out = append(out, s.Label+": "+strings.Join(parts, "; ")+".")
	}
	return out
}
