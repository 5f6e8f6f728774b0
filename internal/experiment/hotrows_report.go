package experiment

import (
	"fmt"
	"strings"

	"github.com/innowarm/innowarm/internal/report"
)

// Table is the main result table: one row per hot-set size, both layouts side by side.
func (r *HotrowsResult) Table() report.Table {
	t := report.Table{Header: []string{"K", "random pages", "random misses/q", "random QPS",
		"clustered pages", "clustered misses/q", "clustered QPS"}}
	for i, p := range r.Random {
		row := []string{commas(p.K), commas(p.Pages), fmt.Sprintf("%.3f", p.MissesPerQuery), qps(p.QPS)}
		if i < len(r.Clustered) {
			c := r.Clustered[i]
			row = append(row, commas(c.Pages), fmt.Sprintf("%.3f", c.MissesPerQuery), qps(c.QPS))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func kneeText(k Knee, pts []HotPoint) string {
	switch {
	case len(pts) == 0:
		return "not measured"
	case !k.Found():
		return fmt.Sprintf("every set up to %s rows fitted", commas(pts[len(pts)-1].K))
	case k.Below == 0:
		return fmt.Sprintf("even %s rows did not fit", commas(k.At))
	}
	return fmt.Sprintf("between %s and %s rows", commas(k.Below), commas(k.At))
}

// Findings are the experiment's conclusions in sentences.
func (r *HotrowsResult) Findings() []string {
	var out []string
	out = append(out, fmt.Sprintf("By size, the %s buffer pool holds about %s rows of %.0f bytes (the table's bytes over its rows).",
		fmtBytes(r.PoolBytes), commas(r.ProjectedRows), r.RowBytes))
	out = append(out, fmt.Sprintf("Random hot rows stopped fitting %s (at %.2f misses a query or more).", kneeText(r.KneeRandom, r.Random), r.KneeMissesRate))
	if r.KneeRandom.Found() && r.KneeRandom.At > 0 && r.ProjectedRows > 0 {
		out = append(out, fmt.Sprintf("That is 1/%.0f to 1/%.0f of what the pool holds by size: each random hot row needs a %s page of its own, and a page holds %.1f rows, the rows-per-page amplification.",
			float64(r.ProjectedRows)/float64(max(r.KneeRandom.At, 1)), float64(r.ProjectedRows)/float64(max(r.KneeRandom.Below, 1)), fmtBytes(int64(r.PageSize)), r.RowsPerPage))
	}
	out = append(out, fmt.Sprintf("The same rows clustered into ids 1..K in a copy of the table: %s.", kneeText(r.KneeClustered, r.Clustered)))
	if r.KneeRandom.Found() && r.KneeClustered.Found() && r.KneeRandom.At > 0 {
		out = append(out, fmt.Sprintf("Clustering moved the knee %.0f times further.", float64(r.KneeClustered.At)/float64(r.KneeRandom.At)))
	} else if r.KneeRandom.Found() && len(r.Clustered) > 0 {
		out = append(out, fmt.Sprintf("Clustering moved the knee at least %.0f times further (past the largest set measured).", float64(r.Clustered[len(r.Clustered)-1].K)/float64(r.KneeRandom.At)))
	}
	return out
}

func (r *HotrowsResult) summary() string {
	if r.Data == nil {
		return ""
	}
	return fmt.Sprintf("sbtest1: %s rows, %s pages (%s), %.1f times the %s buffer pool (%s pages); %.1f rows per leaf page. Each hot set is read once, then %s random selects of it are timed on one connection. %s on %s.",
		commas(r.Data.Rows), commas(r.Data.Pages), fmtBytes(r.Data.Bytes), r.TableToPool, fmtBytes(r.PoolBytes), commas(r.PoolPages), r.RowsPerPage, commas(r.Params.Queries), r.Server, r.Target)
}

// Markdown is what the experiment prints on stdout.
func (r *HotrowsResult) Markdown() string {
	var b strings.Builder
	b.WriteString("## innowarm experiment hotrows\n\n")
	b.WriteString(r.summary() + "\n\n")
	b.WriteString(r.Table().Markdown())
	b.WriteString("\n")
	for _, f := range r.Findings() {
		b.WriteString(f + "\n")
	}
	b.WriteString("Original (2007): a 128 MiB pool that should hold ~500k rows of 224 bytes held only 6,400-12,800 random hot rows.\n")
	for _, n := range r.Notes {
		b.WriteString("Note: " + n + "\n")
	}
	return b.String()
}

// Page is the hot-rows report.
func (r *HotrowsResult) Page() report.Page {
	params := fmt.Sprintf("rows=%s, hot sets %s..%s doubling, %s timed selects each, seed %d, schema %s",
		commas(r.Params.Rows), commas(r.Params.MinHot), commas(r.Params.MaxHot), commas(r.Params.Queries), r.Params.Seed, r.Params.Schema)
	p := report.Page{
		Title:    "innowarm experiment: hotrows",
		Subtitle: "InnoDB caches pages, not rows: how many random hot rows fit in the buffer pool, and how many once clustered",
		Meta:     r.meta(params),
	}
	p.Sections = append(p.Sections,
		report.Section{Heading: "Where the hot set stops fitting", Content: []report.Block{
			report.Text(r.summary() + "\n\n" + strings.Join(r.Findings(), " ") + "\n\n" +
				"K: rows in the hot set; pages: leaf pages holding them; misses/q: buffer-pool misses (Innodb_buffer_pool_reads) per timed select. The set's rows are read once, and again in a new random order until they are resident or stop improving, with innodb_old_blocks_time " + fmt.Sprint(r.OldBlocksTimeMs) + " ms; then the selects are timed."),
			r.kneeChart(),
			r.Table(),
		}},
		report.Section{Heading: "Pages the hot set spans", Content: []report.Block{
			report.Text(fmt.Sprintf("Random hot rows are spread over the table: K rows sit on nearly K pages until K nears the table's %s leaf pages. Clustered, they fill whole pages: K/%.0f of them. The flat line is the size of the buffer pool in pages.",
				commas(r.leafPages()), r.RowsPerPage)),
			r.pagesChart(),
		}},
		report.Section{Heading: "Original", Content: []report.Block{
			report.Text("Peter Zaitsev, 2007: sbtest with 10M rows (224 bytes a row gross), a 128 MiB buffer pool that should fit ~500k such rows held only between 6,400 and 12,800 random hot rows, about 1/50 of the projection, close to the ~70 rows of a page. Clustering hot rows (re-assigning their primary keys) was the suggested remedy."),
		}},
	)
	if len(r.Notes) > 0 {
		p.Sections = append(p.Sections, report.Section{Heading: "Notes", Content: []report.Block{report.Text(strings.Join(r.Notes, "\n\n"))}})
	}
	return p
}

func (r *HotrowsResult) leafPages() int64 {
	if r.Data == nil {
		return 0
	}
	return r.Data.Indexes["PRIMARY"]
}

func hotSeries(name string, pts []HotPoint, y func(HotPoint) float64) report.Series {
	s := report.Series{Name: name}
	for _, p := range pts {
		s.X, s.Y = append(s.X, float64(p.K)), append(s.Y, y(p))
	}
	return s
}

func (r *HotrowsResult) kneeChart() report.LineChart {
	qpsOf := func(p HotPoint) float64 { return p.QPS }
	mpq := func(p HotPoint) float64 { return p.MissesPerQuery }
	c := report.LineChart{
		Name: "hotrows-knee", Title: "Random vs clustered hot rows: throughput and misses as the hot set grows",
		XLabel: "hot rows K (log2 scale)", YLabel: "queries per second", LogX2: true,
		Series: []report.Series{hotSeries("random hot rows", r.Random, qpsOf), hotSeries("clustered hot rows", r.Clustered, qpsOf)},
		Lower:  &report.LinePanel{YLabel: "misses per query", Series: []report.Series{hotSeries("random hot rows", r.Random, mpq), hotSeries("clustered hot rows", r.Clustered, mpq)}},
	}
	if r.KneeRandom.Found() {
		c.Markers = append(c.Markers, report.Marker{X: float64(r.KneeRandom.At), Label: "random set stops fitting"})
	}
	if r.KneeClustered.Found() {
		c.Markers = append(c.Markers, report.Marker{X: float64(r.KneeClustered.At), Label: "clustered set stops fitting"})
	}
	return c
}

func (r *HotrowsResult) pagesChart() report.LineChart {
	pages := func(p HotPoint) float64 { return float64(p.Pages) }
	c := report.LineChart{
		Name: "hotrows-pages", Title: "Distinct pages holding the hot rows",
		XLabel: "hot rows K (log2 scale)", YLabel: "pages", LogX2: true,
		Series: []report.Series{hotSeries("random hot rows", r.Random, pages), hotSeries("clustered hot rows", r.Clustered, pages)},
	}
	if r.PoolPages > 0 {
		pool := report.Series{Name: "buffer pool pages"}
		for _, p := range r.Random {
			pool.X, pool.Y = append(pool.X, float64(p.K)), append(pool.Y, float64(r.PoolPages))
		}
		c.Series = append(c.Series, pool)
	}
	return c
}
