package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jedib0t/go-pretty/v6/text"
)

func scenarioTable() Table {
	return Table{
		Title:  "Scenario times",
		Header: []string{"scenario", "seconds", "ratio", "note"},
		Rows: [][]string{
			{"cold", "7.562", "4.35×", "first pass"},
			{"hot", "1.740", "1.00×", ""},
			{hostile, "—", "n/a", "multi\nline"},
			{"short row"},
		},
	}
}

// unescapedPipe finds the '|' that separate Markdown cells (not "\|" inside one).
var unescapedPipe = regexp.MustCompile(`(^|[^\\])\|`)

func TestMarkdownTableShape(t *testing.T) {
	tb := scenarioTable()
	md := tb.Markdown()
	lines := strings.Split(strings.TrimRight(md, "\n"), "\n")
	if lines[0] != "**Scenario times**" || lines[1] != "" {
		t.Fatalf("caption lines %q", lines[:2])
	}
	lines = lines[2:]
	if len(lines) != len(tb.Rows)+2 {
		t.Fatalf("%d table lines, want header + alignment + %d rows:\n%s", len(lines), len(tb.Rows), md)
	}
	width := -1
	for i, l := range lines {
		// "| a | b |" has columns+1 separators; a second match can overlap the first.
		seps := len(unescapedPipe.FindAllStringIndex(l, -1)) + strings.Count(l, "||")
		if seps != len(tb.Header)+1 {
			t.Errorf("line %d has %d cell separators, want %d: %q", i, seps, len(tb.Header)+1, l)
		}
		if w := text.StringWidthWithoutEscSequences(l); width >= 0 && w != width {
			t.Errorf("line %d is %d wide, others %d: columns are not padded", i, w, width)
		} else {
			width = w
		}
	}
	align := regexp.MustCompile(`^\| -+ \| -+: \| -+: \| -+ \|$`)
	if !align.MatchString(lines[1]) {
		t.Errorf("alignment row %q: want text columns left, number columns right", lines[1])
	}
	if !strings.Contains(md, `\<script>`) || !strings.Contains(md, `'o'\|"t"`) {
		t.Errorf("hostile cell not escaped:\n%s", md)
	}
	if strings.Contains(lines[4], "\n") || !strings.Contains(lines[4], "multi line") {
		t.Errorf("a newline in a cell must not break the row: %q", lines[4])
	}
}

func TestAutoAlignment(t *testing.T) {
	tb := Table{
		Header: []string{"name", "n", "ms", "pct", "mixed", "forced"},
		Rows: [][]string{
			{"a", "1,234", "12.5 ms", "95%", "3", "7"},
			{"b", "-2", "0.1 ms", "—", "x3", "8"},
		},
		Align: []Align{AlignAuto, AlignAuto, AlignAuto, AlignAuto, AlignAuto, AlignCenter},
	}
	want := []Align{AlignLeft, AlignRight, AlignRight, AlignRight, AlignLeft, AlignCenter}
	got := tb.alignments()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %q: alignment %d, want %d", tb.Header[i], got[i], want[i])
		}
	}
	if !strings.Contains(tb.Markdown(), ":-") {
		t.Error("a centred column needs a :---: marker")
	}
}

func TestTerminalTable(t *testing.T) {
	out := scenarioTable().Terminal()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	width := text.StringWidthWithoutEscSequences(lines[0])
	for i, l := range lines {
		if w := text.StringWidthWithoutEscSequences(l); w != width {
			t.Errorf("line %d is %d wide, want %d:\n%s", i, w, width, out)
		}
	}
	if !strings.Contains(out, "scenario") || strings.Contains(out, "SCENARIO") {
		t.Errorf("header must be printed as written:\n%s", out)
	}
	if !strings.Contains(out, "│  7.562 │") && !strings.Contains(out, "│   7.562 │") {
		t.Errorf("numbers should be right-aligned:\n%s", out)
	}
}

func TestHTMLTableEscapes(t *testing.T) {
	out := scenarioTable().HTML()
	if strings.Contains(out, "<script") {
		t.Fatalf("cell text became markup:\n%s", out)
	}
	if !strings.Contains(out, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;o&#39;|&#34;t&#34;") {
		t.Errorf("hostile cell not escaped as expected:\n%s", out)
	}
	if got := strings.Count(out, "<tr>"); got != 5 {
		t.Errorf("%d rows, want header + 4", got)
	}
	if got := strings.Count(out, "<td"); got != 4*4 {
		t.Errorf("%d cells, want 16 (short rows padded)", got)
	}
	if !strings.Contains(out, `<td class="num">7.562</td>`) {
		t.Errorf("numeric cells should carry class num:\n%s", out)
	}
}

func TestEmptyTable(t *testing.T) {
	var tb Table
	if tb.Markdown() != "" || tb.Terminal() != "" || tb.HTML() != "" {
		t.Error("an empty table should render as nothing")
	}
}

func TestPlainAlignsWithoutBorders(t *testing.T) {
	got := Table{Rows: [][]string{{"server", "MariaDB 10.11"}, {"buffer pool", "128 MiB"}, {"x", ""}}, Align: []Align{AlignLeft, AlignLeft}}.Plain()
	want := "server       MariaDB 10.11\nbuffer pool  128 MiB\nx\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
