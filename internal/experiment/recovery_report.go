package experiment

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/innowarm/innowarm/internal/report"
)

// Table is the main result table: one row per scenario, medians over the rounds.
func (r *RecoveryResult) Table() report.Table {
	t := report.Table{
		Header: []string{"scenario", "runs", "lost (s)", "t50 (s)", "t95 (s)", "t95 at hot's floor (s)", "first 5 s (% of hot)", "worst p95 (ms)", "pool 90% (s)", "warm (s)"},
		Align:  []report.Align{report.AlignLeft},
	}
	if r.Params.Rate > 0 {
		// Open loop: throughput follows the arrivals; what users lose is latency.
		t.Header = append(t.Header, "p95 within 1.5× hot (s)", "p95 within hot's ceiling (s)", "queries > 10× hot p95")
	}
	if r.Params.WriteClients > 0 {
		t.Header = append(t.Header, "write tps (deadlocks)")
	}
	for _, s := range r.Scenarios {
		if s.Skipped != "" {
			row := []string{s.Label, "skipped: " + s.Skipped}
			for len(row) < len(t.Header) {
				row = append(row, "")
			}
			t.Rows = append(t.Rows, row)
			continue
		}
		m := s.Median
		warm := "—"
		var ws []float64
		for _, rn := range s.Runs {
			if rn.Warm != nil && rn.Warm.Error == "" && !rn.Warm.Unfinished {
				ws = append(ws, rn.Warm.Seconds)
			}
		}
		if len(ws) > 0 {
			warm = fmt.Sprintf("%.1f", medianOf(ws))
		}
		row := []string{s.Label, fmt.Sprint(len(s.Runs)), fmt.Sprintf("%.1f", m.Lost), timeCell(m.T50, m.Window), timeCell(m.T95, m.Window), timeCell(m.T95Floor, m.Window),
			fmt.Sprintf("%.0f", 100*m.Served5), msec(m.WorstP95), timeCell(s.PoolT90, m.Window), warm}
		if r.Params.Rate > 0 {
			row = append(row, timeCell(m.P95Settled, m.Window), timeCell(m.P95SettledCeiling, m.Window), commas(m.Slow))
		}
		if r.Params.WriteClients > 0 {
			row = append(row, writesCell(s.Runs))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// writesCell is the write clients' median transactions per second over the runs, and the
// transactions they lost to deadlocks and lock waits in all.
func writesCell(runs []*RecoveryRun) string {
	var tps []float64
	var errs int64
	for _, rn := range runs {
		if rn.Writes != nil {
			tps = append(tps, rn.Writes.TPS)
			errs += rn.Writes.Errors
		}
	}
	if len(tps) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f (%d)", medianOf(tps), errs)
}

func timeCell(t, window float64) string {
	if t < 0 {
		return fmt.Sprintf("> %.0f", window)
	}
	return fmt.Sprintf("%.1f", t)
}

// summary is the paragraph above the table.
func (r *RecoveryResult) summary() string {
	d := r.Data
	if d == nil {
		return ""
	}
	out := fmt.Sprintf("%s restarted cold %d time(s) per scenario with a %s buffer pool (%s pages); sbtest1 has %s rows, %s pages (%s, %.1f× the pool). Traffic: %s, for %.0f s per restart. Hot level: the same traffic's next %.0f s, per run (median %.0f qps; its seconds vary by %.1f%%).",
		r.Server, r.Params.Rounds, fmtBytes(r.PoolBytes), commas(r.PoolPages), commas(d.Rows), commas(d.Pages), fmtBytes(d.Bytes), float64(d.Pages)/float64(max(r.PoolPages, 1)),
		r.Params.Traffic, r.Params.Duration, r.Params.HotDuration, r.HotQPS, 100*r.HotNoise)
	if r.Params.UnsettledPrimary > 0 {
		out += fmt.Sprintf(" Failover from an unsettled primary: follow started as the primary restarted cold, and the primary failed after %.0f s of the traffic (and one good follow round).", r.Params.UnsettledPrimary)
	}
	if r.Params.WarmPacing != "" {
		out += " innowarm's warms were paced: " + r.Params.WarmPacing + "."
	}
	if r.HotSet > 0 {
		out += fmt.Sprintf(" Hot set: %s pages (%s, the snapshot of the hot pool).", commas(r.HotSet), fmtBytes(r.HotBytes))
	}
	if dk := r.Disk; dk != nil && dk.SeqMBps > 0 {
		out += fmt.Sprintf(" Disk: %.0f MB/s in 1 MiB reads, %.0f random 16 KiB reads/s (%.0f MB/s); physical limit (hot set over sequential reads): %.2f s.", dk.SeqMBps, dk.RandomIOPS, dk.RandomMBps, r.Limit)
	}
	return out
}

// ratioLines name innowarm's lost seconds against the others'.
func (r *RecoveryResult) ratioLines() []string {
	keys := make([]string, 0, len(r.Ratios)+len(r.NoRatio))
	for k := range r.Ratios {
		keys = append(keys, k)
	}
	for k := range r.NoRatio {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		a, b, _ := strings.Cut(k, "/")
		v, ok := r.Ratios[k]
		text := ratio(v)
		if !ok {
			text = r.NoRatio[k]
		}
		out = append(out, fmt.Sprintf("lost seconds, %s / %s: %s", recoveryLabels[a], recoveryLabels[b], text))
	}
	return out
}

// Markdown is what the experiment prints on stdout.
func (r *RecoveryResult) Markdown() string {
	var b strings.Builder
	b.WriteString("## innowarm experiment recovery\n\n")
	b.WriteString(r.summary() + "\n\n")
	b.WriteString(r.Table().Markdown())
	b.WriteString("\n")
	for _, l := range r.ratioLines() {
		b.WriteString(l + "\n")
	}
	for _, s := range r.Scenarios {
		if s.ID != RecoveryCold && len(s.Runs) > 0 && s.Median.LostAtColdsHot != 0 {
			fmt.Fprintf(&b, "lost seconds against the same round's cold hot level, %s: %.1f (median)\n", s.Label, s.Median.LostAtColdsHot)
		}
	}
	for _, n := range r.notes() {
		b.WriteString("Note: " + n + "\n")
	}
	return b.String()
}

func (r *RecoveryResult) notes() []string {
	out := append([]string{}, r.Notes...)
	if dk := r.Disk; dk != nil && dk.Note != "" {
		out = append(out, "disk read speed "+dk.Note)
	}
	for _, s := range r.Scenarios {
		for _, rn := range s.Runs {
			if line := r.hotLevelNote(s, rn); line != "" {
				out = append(out, line)
			}
			if rn.Warm != nil && rn.Warm.Error != "" {
				out = append(out, fmt.Sprintf("%s, round %d: %s", s.Label, rn.Round, rn.Warm.Error))
			}
			if rn.Restart != nil && rn.Restart.Note != "" {
				out = append(out, fmt.Sprintf("%s, round %d: %s", s.Label, rn.Round, rn.Restart.Note))
			}
			if fo := rn.Follow; fo != nil {
				line := fmt.Sprintf("%s, round %d: follow kept the standby (restarted cold) for %.1f s while the primary (up %.0f s) served the traffic: %d rounds, %s pages loaded, %.1f%% of the primary's hot set as its last capture saw it resident when the traffic moved to it",
					s.Label, rn.Round, fo.Seconds, fo.PrimaryUptime, fo.Rounds, commas(fo.Loaded), 100*fo.Coverage)
				if fo.PrimaryPoolPages > 0 {
					line += fmt.Sprintf("; the primary held %s pages when it failed, its traffic having missed %s since follow started", commas(fo.PrimaryPoolPages), commas(fo.PrimaryMisses))
				}
				if fo.Failed > 0 {
					line += fmt.Sprintf("; %d rounds failed (%s)", fo.Failed, fo.LastError)
				}
				switch {
				case fo.LoadedAfter > 0:
					line += fmt.Sprintf("; the round in flight at the failover loaded %s more pages, %s%s", commas(fo.LoadedAfter), afterFailoverText(fo.LoadedAfterEnd), fo.switchedText())
				case fo.Switched:
					line += "; the round in flight at the failover was still loading when the window ended" + fo.switchedText()
				}
				out = append(out, line)
			}
		}
	}
	return out
}

// hotLevelApart is how far a run's hot level may be from the same round's cold run's
// before a note says so: the mean of 60 seconds that vary by 3-5% moves by about 0.6%.
const hotLevelApart = 0.02

// hotLevelNote says when a run's hot level is apart from the same round's cold run's, and
// what it lost measured against cold's; "" when it is not.
func (r *RecoveryResult) hotLevelNote(s *RecoveryScenario, rn *RecoveryRun) string {
	cs := r.Scenario(RecoveryCold)
	if cs == nil || s.ID == RecoveryCold || rn.HotLevel.QPS <= 0 {
		return ""
	}
	for _, c := range cs.Runs {
		if c.Round != rn.Round || c.HotLevel.QPS <= 0 {
			continue
		}
		d := rn.HotLevel.QPS/c.HotLevel.QPS - 1
		if math.Abs(d) <= hotLevelApart {
			return ""
		}
		way := "below"
		if d > 0 {
			way = "above"
		}
		return fmt.Sprintf("%s, round %d: its hot level (%s qps) was %.1f%% %s the cold run's of the same round (%s qps); measured against cold's, it lost %.1f s (%.1f s against its own)",
			s.Label, rn.Round, qps(rn.HotLevel.QPS), 100*math.Abs(d), way, qps(c.HotLevel.QPS), rn.Metrics.LostAtColdsHot, rn.Metrics.Lost)
	}
	return ""
}

// definitions say how each figure is computed.
const recoveryDefinitions = "lost: seconds of full service lost, the integral of (hot − qps) / hot from the moment the server answered to the end of the window (seconds above hot count against it, so a hot server's noise sums to about zero). " +
	"t50 / t95: from then on throughput stayed at or above 50% / 95% of hot (each second taken as the median of it and its neighbours); \"> N\": not within the N-second window. " +
	"t95 at hot's floor: t95 against the lower of 95% of hot and the level the hot seconds themselves stay at or above (their lowest second, taken the same way): the hot level's own noise taken out, since a recovered server cannot be asked to hold a level its hot seconds do not. " +
	"first 5 s: throughput served in the first five seconds over five seconds of hot. worst p95: the highest p95 of any second. " +
	"pool 90%: the pool first held 90% of the hot pool's data pages. warm: how long innowarm's warm ran beside the traffic. " +
	"Open loop only: p95 within 1.5× hot: from then on each second's p95 (the median of it and its neighbours) stayed within 1.5× the hot seconds' median p95; p95 within hot's ceiling: the same within the higher of 1.5× and the highest p95 the hot seconds themselves reached (taken the same way), the hot level's own noise taken out; queries > 10× hot p95: the users' worst waits. " +
	"Figures are medians over the rounds."

// Page is the recovery report.
func (r *RecoveryResult) Page() report.Page {
	p := report.Page{
		Title:    "Restart to hot under live traffic",
		Subtitle: "innowarm experiment recovery: throughput from the moment a restarted server answers, cold, with InnoDB's own load at startup, and with innowarm",
		Meta:     r.meta(fmt.Sprintf("%s rows, %d clients, %s, %.0f s per restart, %d round(s)", commas(r.Params.Rows), r.Params.Clients, r.Params.Dist, r.Params.Duration, r.Params.Rounds)),
	}
	intro := report.Text(r.summary() + "\n\n" + strings.Join(r.ratioLines(), "\n\n"))
	p.Sections = []report.Section{
		{Heading: "Recovery after a restart", Content: []report.Block{intro, r.curveChart(), r.Table(), report.Text(recoveryDefinitions)}},
		{Heading: "Every run", Content: []report.Block{r.runsTable(), report.Text(strings.Join(r.notes(), "\n\n"))}},
	}
	return p
}

// curveChart draws each scenario's typical run: throughput per second since the server
// answered, that run's hot level and the physical limit marked. Each run is scored against
// its own hot level, so each drawn run's level is drawn, named by its scenario: one line at
// the median of all runs' levels (as before) disagreed with the figures of a run whose
// level was apart from it.
func (r *RecoveryResult) curveChart() report.LineChart {
	var series, p95, hot []report.Series
	var xmax float64
	for _, s := range r.Scenarios {
		if len(s.Runs) == 0 {
			continue
		}
		rn := s.Runs[min(s.Typical, len(s.Runs)-1)]
		q := report.Series{Name: s.Label}
		l := report.Series{Name: s.Label}
		for _, pt := range rn.Curve {
			q.X, q.Y = append(q.X, pt.T), append(q.Y, pt.QPS)
			l.X, l.Y = append(l.X, pt.T), append(l.Y, pt.P95)
			xmax = max(xmax, pt.T)
		}
		series, p95 = append(series, q), append(p95, l)
		if h := rn.HotLevel.QPS; h > 0 {
			hot = append(hot, report.Series{Name: fmt.Sprintf("%s: hot level %s qps (round %d)", s.Label, qps(h), rn.Round), Y: []float64{h, h}})
		}
	}
	if xmax > 0 {
		for _, h := range hot {
			h.X = []float64{0, xmax}
			series = append(series, h)
		}
	}
	c := report.LineChart{
		Name: "recovery-curve", Title: "Throughput after a cold restart under live traffic",
		XLabel: "seconds since the server answered", YLabel: "queries per second",
		Series: series, Lower: &report.LinePanel{YLabel: "p95 latency (ms)", Series: p95},
	}
	if r.Limit > 0 && !math.IsInf(r.Limit, 0) {
		c.Markers = append(c.Markers, report.Marker{X: r.Limit, Label: fmt.Sprintf("physical limit %.1f s", r.Limit)})
	}
	return c
}

func (r *RecoveryResult) runsTable() report.Table {
	t := report.Table{Header: []string{"scenario", "round", "hot (qps)", "hot's floor", "lost (s)", "t50 (s)", "t95 (s)", "t95 at hot's floor (s)", "worst p95 (ms)", "warm", "server load status"},
		Align: []report.Align{report.AlignLeft}}
	for _, s := range r.Scenarios {
		for _, rn := range s.Runs {
			m := rn.Metrics
			warm := "—"
			if w := rn.Warm; w != nil {
				warm = fmt.Sprintf("%s from %.2f s, %.1f s, %s pages (%.0f MB/s)", w.Method, w.Start, w.Seconds, commas(w.PagesRead), w.MBps)
				switch {
				case w.Error != "":
					warm = w.Error
				case w.Unfinished:
					warm = fmt.Sprintf("%s from %.2f s, still warming when the traffic ended", w.Method, w.Start)
				}
			}
			t.Rows = append(t.Rows, []string{s.Label, fmt.Sprint(rn.Round), qps(rn.HotLevel.QPS), fmt.Sprintf("%.0f%%", 100*rn.HotLevel.Floor), fmt.Sprintf("%.1f", m.Lost), timeCell(m.T50, m.Window), timeCell(m.T95, m.Window), timeCell(m.T95Floor, m.Window), msec(m.WorstP95), warm, rn.LoadStatus})
		}
	}
	return t
}
