package experiment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/report"
)

// matrix builds a table of clients (rows) by queries per client (columns).
func (r *ConcurrencyResult) matrix(title string, cell func(*Cell) string) report.Table {
	t := report.Table{Title: title, Header: []string{"clients / queries per client"}}
	for _, n := range r.Params.PerClient {
		t.Header = append(t.Header, commas(n))
	}
	for _, c := range r.Params.Clients {
		row := []string{strconv.Itoa(c)}
		for _, n := range r.Params.PerClient {
			if x := r.Cell(c, n); x != nil {
				row = append(row, cell(x))
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// SecondsTable is the original's first table: average seconds to run all queries.
func (r *ConcurrencyResult) SecondsTable() report.Table {
	return r.matrix("Total seconds (mysqlslap's average over the iterations)", func(c *Cell) string { return secs(c.AvgSeconds) })
}

// MsTable is the original's second table: milliseconds per query (seconds over queries per client).
func (r *ConcurrencyResult) MsTable() report.Table {
	return r.matrix("Milliseconds per query (seconds / queries per client)", func(c *Cell) string { return strconv.FormatFloat(c.MsPerQuery, 'f', 4, 64) })
}

// P95Table is what the original could not show: the p95 latency of a single query.
func (r *ConcurrencyResult) P95Table() report.Table {
	return r.matrix("p95 latency of one query (ms)", func(c *Cell) string { return msec(c.P95) })
}

func originalTable(title string, v func(i, j int) string) report.Table {
	t := report.Table{Title: title, Header: []string{"clients / queries per client"}}
	for _, n := range OriginalPerClient {
		t.Header = append(t.Header, commas(n))
	}
	for i, c := range OriginalClients {
		row := []string{strconv.Itoa(c)}
		for j := range OriginalPerClient {
			row = append(row, v(i, j))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func (r *ConcurrencyResult) summary() string {
	return fmt.Sprintf("mysqlslap's auto-generated mixed load (INSERTs and primary-key SELECTs on t1 with an AUTO_INCREMENT id, --engine=innodb), %d iterations per cell, the original's queries per client times %g, run by innowarm bench. %s on %s, %s buffer pool.",
		r.Params.Iterations, r.Params.Scale, r.Server, r.Target, fmtBytes(r.PoolBytes))
}

// Markdown is what the experiment prints on stdout.
func (r *ConcurrencyResult) Markdown() string {
	var b strings.Builder
	b.WriteString("## innowarm experiment concurrency\n\n")
	b.WriteString(r.summary() + "\n\n")
	for _, t := range []report.Table{r.SecondsTable(), r.MsTable(), r.P95Table()} {
		b.WriteString(t.Markdown() + "\n")
	}
	b.WriteString("Original (MariaDB 10.0, HDD, 1,000 to 1,000,000 queries per client): ~0.6 ms a query at 1 client, ~1.2 at 10, ~1.6 at 30, ~2.0 at 50, ~3.0 at 100.\n")
	for _, n := range r.Notes {
		b.WriteString("Note: " + n + "\n")
	}
	return b.String()
}

// Page is the concurrency report.
func (r *ConcurrencyResult) Page() report.Page {
	var per []string
	for _, n := range r.Params.PerClient {
		per = append(per, commas(n))
	}
	var clients []string
	for _, c := range r.Params.Clients {
		clients = append(clients, strconv.Itoa(c))
	}
	params := fmt.Sprintf("clients %s, queries per client %s (scale %g), %d iterations, schema %s", strings.Join(clients, ","), strings.Join(per, ","), r.Params.Scale, r.Params.Iterations, r.Params.Schema)
	p := report.Page{
		Title:    "innowarm experiment: concurrency",
		Subtitle: "The MariaDB mixed-load matrix: total time and time per query as clients and queries grow",
		Meta:     r.meta(params),
	}
	p.Sections = append(p.Sections,
		report.Section{Heading: "Total time", Content: []report.Block{report.Text(r.summary()), r.secondsChart(), r.SecondsTable()}},
		report.Section{Heading: "Time per query", Content: []report.Block{
			report.Text("The original's second table divides the total seconds by the queries each client ran; the p95 is the latency of one query as innowarm bench measures it (HdrHistogram, connection set-up excluded)."),
			r.msChart(), r.MsTable(), r.P95Table(),
		}},
		report.Section{Heading: "Original", Content: []report.Block{
			report.Text("MariaDB 10.0 on a hard disk (2015), mysqlslap --auto-generate-sql --auto-generate-sql-add-autoincrement --auto-generate-sql-load-type=mixed --engine=innodb --iterations 3."),
			originalTable("Original total seconds", func(i, j int) string { return secs(OriginalSeconds[i][j]) }),
			originalTable("Original milliseconds per query", func(i, j int) string {
				return strconv.FormatFloat(OriginalSeconds[i][j]*1000/float64(OriginalPerClient[j]), 'f', 4, 64)
			}),
		}},
	)
	if len(r.Notes) > 0 {
		p.Sections = append(p.Sections, report.Section{Heading: "Notes", Content: []report.Block{report.Text(strings.Join(r.Notes, "\n\n"))}})
	}
	return p
}

func (r *ConcurrencyResult) series(v func(*Cell) float64) (groups []string, series []report.BarSeries) {
	for _, c := range r.Params.Clients {
		groups = append(groups, strconv.Itoa(c))
	}
	for _, n := range r.Params.PerClient {
		s := report.BarSeries{Name: perClientName(n)}
		for _, c := range r.Params.Clients {
			if x := r.Cell(c, n); x != nil {
				s.Values = append(s.Values, v(x))
			} else {
				s.Values = append(s.Values, math.NaN())
			}
		}
		series = append(series, s)
	}
	return groups, series
}

func (r *ConcurrencyResult) secondsChart() report.GroupedBarChart {
	g, s := r.series(func(c *Cell) float64 { return c.AvgSeconds })
	return report.GroupedBarChart{Name: "concurrency-seconds", Title: "Total seconds by concurrency and queries per client",
		ValueLabel: "seconds", GroupLabel: "concurrent clients", Groups: g, Series: s, ValueFormat: "%.2f"}
}

func (r *ConcurrencyResult) msChart() report.LineChart {
	c := report.LineChart{Name: "concurrency-ms-per-query", Title: "Milliseconds per query (seconds / queries per client)",
		XLabel: "concurrent clients", YLabel: "ms per query"}
	for _, n := range r.Params.PerClient {
		s := report.Series{Name: perClientName(n)}
		for _, cl := range r.Params.Clients {
			if x := r.Cell(cl, n); x != nil {
				s.X, s.Y = append(s.X, float64(cl)), append(s.Y, x.MsPerQuery)
			}
		}
		c.Series = append(c.Series, s)
	}
	orig := report.Series{Name: "original, 1,000,000 per client (HDD)"}
	for i, cl := range OriginalClients {
		if slices.Contains(r.Params.Clients, cl) {
			orig.X, orig.Y = append(orig.X, float64(cl)), append(orig.Y, OriginalSeconds[i][5]*1000/float64(OriginalPerClient[5]))
		}
	}
	if len(orig.X) > 0 {
		c.Series = append(c.Series, orig)
	}
	return c
}

func perClientName(n int64) string {
	if n == 1 {
		return "1 query per client"
	}
	return commas(n) + " queries per client"
}
