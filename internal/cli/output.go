package cli

import (
	"fmt"
	"io"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/innowarm/innowarm/internal/report"
)

// kvTable prints aligned "name  value" lines through report.Table.
func kvTable(w io.Writer, rows [][2]string) {
	t := report.Table{Align: []report.Align{report.AlignLeft, report.AlignLeft}}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r[0], r[1]})
	}
	_, _ = io.WriteString(w, t.Plain())
}

// textTable gathers a command's rows for report.Table, the one table renderer of innowarm
// (terminal, Markdown and HTML alike): columns from rightFrom (1-based) are right-aligned.
type textTable struct {
	w io.Writer
	t report.Table
}

func newTable(w io.Writer, header table.Row, rightFrom int) *textTable {
	tt := &textTable{w: w}
	for i, h := range header {
		tt.t.Header = append(tt.t.Header, fmt.Sprint(h))
		align := report.AlignLeft
		if i+1 >= rightFrom {
			align = report.AlignRight
		}
		tt.t.Align = append(tt.t.Align, align)
	}
	return tt
}

// AppendRow adds a row of values, printed with fmt.Sprint.
func (tt *textTable) AppendRow(r table.Row) {
	cells := make([]string, len(r))
	for i, c := range r {
		cells[i] = fmt.Sprint(c)
	}
	tt.t.Rows = append(tt.t.Rows, cells)
}

// AppendFooter adds a last row (a total).
func (tt *textTable) AppendFooter(r table.Row) { tt.AppendRow(r) }

// Render writes the table.
func (tt *textTable) Render() { _, _ = io.WriteString(tt.w, tt.t.Terminal()) }

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
