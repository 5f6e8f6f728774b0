package report

import (
	"html"
	"regexp"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// Align is a table column's alignment.
type Align int

const (
	AlignAuto Align = iota // right for columns of numbers, left otherwise
	AlignLeft
	AlignRight
	AlignCenter
)

// Table is a header and rows of already formatted cells. Rows shorter than the widest
// row are padded with empty cells.
type Table struct {
	Title  string // optional caption
	Header []string
	Rows   [][]string
	Align  []Align // per column; missing entries are AlignAuto
}

func (Table) isBlock() {}

// numericCell matches "7.562", "-3", "1,234", "12.5 ms", "2.1x", "95%": a number with an
// optional short unit, which reads best right-aligned.
var numericCell = regexp.MustCompile(`^[-+]?[0-9][0-9,]*(\.[0-9]+)?\s?[%×xA-Za-zµ/]{0,4}$`)

// emptyCell is what tables print for "no value"; it does not decide a column's alignment.
func emptyCell(s string) bool {
	switch strings.TrimSpace(s) {
	case "", "-", "—", "n/a":
		return true
	}
	return false
}

// shape returns the column count and every row padded to it.
func (t Table) shape() (int, [][]string) {
	n := len(t.Header)
	for _, r := range t.Rows {
		n = max(n, len(r))
	}
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = make([]string, n)
		copy(rows[i], r)
	}
	return n, rows
}

// alignments resolves AlignAuto per column.
func (t Table) alignments() []Align {
	n, rows := t.shape()
	out := make([]Align, n)
	for col := range n {
		if col < len(t.Align) && t.Align[col] != AlignAuto {
			out[col] = t.Align[col]
			continue
		}
		numeric, seen := true, false
		for _, r := range rows {
			cell := strings.TrimSpace(r[col])
			if emptyCell(cell) {
				continue
			}
			seen = true
			if !numericCell.MatchString(cell) {
				numeric = false
				break
			}
		}
		out[col] = AlignLeft
		if numeric && seen {
			out[col] = AlignRight
		}
	}
	return out
}

func (t Table) header() []string {
	n, _ := t.shape()
	h := make([]string, n)
	copy(h, t.Header)
	return h
}

var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, `|`, `\|`, `<`, `\<`, "`", "\\`", `*`, `\*`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// Markdown renders the table as GitHub-flavoured Markdown with padded columns, so it
// also reads well as plain text on a terminal. Cell text is escaped: a '|' in a schema
// name cannot split a cell and '<' cannot start HTML.
func (t Table) Markdown() string {
	n, rows := t.shape()
	if n == 0 {
		return ""
	}
	align := t.alignments()
	cells := make([][]string, 0, len(rows)+1)
	for _, r := range append([][]string{t.header()}, rows...) {
		esc := make([]string, n)
		for i, c := range r {
			esc[i] = markdownEscaper.Replace(c)
		}
		cells = append(cells, esc)
	}
	widths := make([]int, n)
	for i := range widths {
		widths[i] = 3 // the shortest alignment marker, "---"
	}
	for _, r := range cells {
		for i, c := range r {
			widths[i] = max(widths[i], text.StringWidthWithoutEscSequences(c))
		}
	}

	var b strings.Builder
	if t.Title != "" {
		b.WriteString("**" + markdownEscaper.Replace(t.Title) + "**\n\n")
	}
	writeRow := func(r []string) {
		b.WriteString("|")
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-text.StringWidthWithoutEscSequences(c))
			if align[i] == AlignRight {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	writeRow(cells[0])
	b.WriteString("|")
	for i, w := range widths {
		switch align[i] {
		case AlignRight:
			b.WriteString(" " + strings.Repeat("-", w-1) + ": |")
		case AlignCenter:
			b.WriteString(" :" + strings.Repeat("-", w-2) + ": |")
		default:
			b.WriteString(" " + strings.Repeat("-", w) + " |")
		}
	}
	b.WriteString("\n")
	for _, r := range cells[1:] {
		writeRow(r)
	}
	return b.String()
}

// Terminal renders the table with box-drawing lines for a terminal.
// Plain renders the rows as aligned columns with no borders, no header and two spaces
// between columns: the "name  value" lines of a status or settings listing.
func (t Table) Plain() string {
	n, rows := t.shape()
	if n == 0 {
		return ""
	}
	w := table.NewWriter()
	style := table.StyleDefault
	style.Options = table.OptionsNoBordersAndSeparators
	style.Box.PaddingLeft, style.Box.PaddingRight = "", "  "
	w.SetStyle(style)
	for _, r := range rows {
		w.AppendRow(toRow(r))
	}
	var configs []table.ColumnConfig
	for i, a := range t.alignments() {
		al := text.AlignLeft
		if a == AlignRight {
			al = text.AlignRight
		}
		configs = append(configs, table.ColumnConfig{Number: i + 1, Align: al})
	}
	w.SetColumnConfigs(configs)
	var out strings.Builder
	for _, line := range strings.Split(w.Render(), "\n") {
		out.WriteString(strings.TrimRight(line, " "))
		out.WriteByte('\n')
	}
	return out.String()
}

func (t Table) Terminal() string {
	n, rows := t.shape()
	if n == 0 {
		return ""
	}
	w := table.NewWriter()
	style := table.StyleLight
	style.Format.Header = text.FormatDefault // keep "p95 (ms)" as written, not upper-cased
	w.SetStyle(style)
	if t.Title != "" {
		w.SetTitle(t.Title)
	}
	w.AppendHeader(toRow(t.header()))
	for _, r := range rows {
		w.AppendRow(toRow(r))
	}
	var configs []table.ColumnConfig
	for i, a := range t.alignments() {
		al := text.AlignLeft
		switch a {
		case AlignRight:
			al = text.AlignRight
		case AlignCenter:
			al = text.AlignCenter
		}
		configs = append(configs, table.ColumnConfig{Number: i + 1, Align: al, AlignHeader: al})
	}
	w.SetColumnConfigs(configs)
	return w.Render() + "\n"
}

func toRow(cells []string) table.Row {
	r := make(table.Row, len(cells))
	for i, c := range cells {
		r[i] = c
	}
	return r
}

// HTML renders the table as an escaped HTML fragment.
func (t Table) HTML() string {
	n, rows := t.shape()
	if n == 0 {
		return ""
	}
	align := t.alignments()
	class := func(i int) string {
		switch align[i] {
		case AlignRight:
			return ` class="num"`
		case AlignCenter:
			return ` class="center"`
		}
		return ""
	}
	var b strings.Builder
	b.WriteString("<table>\n")
	if t.Title != "" {
		b.WriteString("<caption>" + html.EscapeString(t.Title) + "</caption>\n")
	}
	b.WriteString("<thead><tr>")
	for i, h := range t.header() {
		b.WriteString("<th" + class(i) + ">" + html.EscapeString(h) + "</th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for i, c := range r {
			b.WriteString("<td" + class(i) + ">" + html.EscapeString(c) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	return b.String()
}
