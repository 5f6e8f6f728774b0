package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

var (
	urlAttr      = regexp.MustCompile(`(?i)\s(src|href|xlink:href|action|poster|data)\s*=\s*["']?([^"'\s>]*)`)
	inlineSVGEl  = regexp.MustCompile(`(?s)<svg\b.*?</svg>`)
	cssURL       = regexp.MustCompile(`(?i)url\(\s*['"]?([^'")]*)`)
	externalLink = regexp.MustCompile(`(?i)^(https?:|//|ftp:|file:)`)
)

func pageHTML(t *testing.T, page Page) string {
	t.Helper()
	out, err := page.HTML()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestHTMLIsSelfContained(t *testing.T) {
	html := pageHTML(t, samplePage())
	for _, m := range urlAttr.FindAllStringSubmatch(html, -1) {
		if externalLink.MatchString(m[2]) {
			t.Errorf("external reference %s=%q", m[1], m[2])
		}
	}
	for _, m := range cssURL.FindAllStringSubmatch(html, -1) {
		if !strings.HasPrefix(m[1], "data:") {
			t.Errorf("CSS url(%s) is not inline", m[1])
		}
	}
	// The sample names no URL, so none may appear: not in a namespace, not in a comment.
	for _, s := range []string{"http://", "https://", "<script", "<link", "@import", "<iframe"} {
		if strings.Contains(strings.ToLower(html), s) {
			t.Errorf("report.html contains %q", s)
		}
	}
}

func TestHTMLContainsEveryChartAndTable(t *testing.T) {
	page := samplePage()
	html := pageHTML(t, page)
	charts, err := page.charts()
	if err != nil {
		t.Fatal(err)
	}
	svgs := inlineSVGEl.FindAllString(html, -1)
	if len(svgs) != len(charts) || len(charts) != 4 {
		t.Fatalf("%d inline SVGs for %d charts", len(svgs), len(charts))
	}
	for i, c := range charts {
		if !strings.Contains(html, `<figure class="chart" id="chart-`+c.ChartName()+`">`) {
			t.Errorf("no figure for chart %s", c.ChartName())
		}
		root, text := parseSVG(t, c.ChartName(), []byte(svgs[i]))
		if root != "svg" || !strings.Contains(text, c.ChartTitle()) {
			t.Errorf("inline SVG %d is not chart %s", i, c.ChartName())
		}
		if strings.Contains(svgs[i], `width="`+"720pt") {
			t.Errorf("inline SVG %s keeps a fixed width; it should scale with the page", c.ChartName())
		}
	}
	var tables int
	for _, s := range page.Sections {
		for _, b := range s.Content {
			tb, ok := b.(Table)
			if !ok {
				continue
			}
			tables++
			if !strings.Contains(html, tb.HTML()) {
				t.Errorf("table %q missing", tb.Header)
			}
		}
	}
	if got := strings.Count(html, "<table>"); got != tables || tables != 2 {
		t.Errorf("%d <table> elements for %d tables", got, tables)
	}
	for _, want := range []string{"<title>innowarm experiment: coldstart</title>", "MariaDB 10.11.19",
		"<h2>Warm-up curve</h2>", "<p>The grey bars are the figures of the 2017 article (MySQL 5.7, SSD).</p>"} {
		if !strings.Contains(html, want) {
			t.Errorf("missing %q", want)
		}
	}
}

func TestHTMLEscapesHostileText(t *testing.T) {
	page := Page{
		Title:    hostile,
		Subtitle: hostile,
		Meta:     []Meta{{Name: hostile, Value: hostile}},
		Sections: []Section{{Heading: hostile, Content: []Block{
			Text(hostile),
			Table{Title: hostile, Header: []string{hostile}, Rows: [][]string{{hostile}}},
			BarChart{Name: "h", Title: hostile, Categories: []string{hostile}, Values: []float64{1}},
		}}},
	}
	html := pageHTML(t, page)
	if strings.Contains(html, "<script") || strings.Contains(html, `"x")`) {
		t.Fatalf("hostile text reached the page unescaped:\n%s", html)
	}
	// <title>, <h1>, subtitle, meta name and value, heading, paragraph, caption, th and
	// td: ten escaped copies outside the chart.
	outside := inlineSVGEl.ReplaceAllString(html, "")
	if n := strings.Count(outside, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;o&#39;|&#34;t&#34;"); n != 10 {
		t.Errorf("%d escaped copies outside the chart, want 10:\n%s", n, outside)
	}
	if !strings.Contains(html, `aria-label="&lt;script&gt;`) {
		t.Error("chart aria-label not escaped")
	}
}

func TestPageRejectsDuplicateChartNames(t *testing.T) {
	page := Page{Sections: []Section{
		{Content: []Block{coldstartChart()}},
		{Content: []Block{coldstartChart()}},
	}}
	if _, err := page.HTML(); err == nil || !strings.Contains(err.Error(), "coldstart-times") {
		t.Errorf("duplicate chart names: err = %v", err)
	}
}

func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports", "coldstart")
	page, data := samplePage(), sampleDataValue()
	if err := WriteDir(dir, page, data); err != nil {
		t.Fatal(err)
	}
	want := []string{HTMLFile, JSONFile, MDFile}
	charts, _ := page.charts()
	for _, c := range charts {
		want = append(want, filepath.Join(ChartsDir, c.ChartName()+".svg"), filepath.Join(ChartsDir, c.ChartName()+".png"))
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		switch filepath.Ext(name) {
		case ".svg":
			if err := xml.Unmarshal(b, new(struct{})); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case ".png":
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ChartsDir))
	if len(entries) != 2*len(charts) {
		t.Errorf("%d files in charts/, want %d", len(entries), 2*len(charts))
	}

	var back sampleData
	b, _ := os.ReadFile(filepath.Join(dir, JSONFile))
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if !reflect.DeepEqual(back, data) {
		t.Errorf("report.json round trip: got %+v, want %+v", back, data)
	}

	html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	direct, _ := page.HTML()
	if !bytes.Equal(html, direct) {
		t.Error("report.html differs from Page.HTML")
	}
	md, _ := os.ReadFile(filepath.Join(dir, MDFile))
	if !strings.Contains(string(md), "![Throughput as the hot set grows](charts/hotrows-qps.svg)") ||
		!strings.Contains(string(md), "| ---------------------------------------- | ------: |") {
		t.Errorf("report.md lacks a chart link or a table:\n%s", md)
	}

	// Writing again over an existing report replaces it.
	small := smallPage()
	if err := WriteDir(dir, small, []int{1}); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, JSONFile)); string(b) != "[\n  1\n]\n" {
		t.Errorf("rewritten report.json = %q", b)
	}
}

// smallPage has one small chart, for tests about WriteDir's behaviour rather than its
// output: rendering is most of their time.
func smallPage() Page {
	return Page{Title: "small", Sections: []Section{{Content: []Block{
		BarChart{Name: "small", Categories: []string{"a", "b"}, Values: []float64{1, 2}},
	}}}}
}

func TestWriteDirUnwritable(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(parent, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "report")
	err := WriteDir(dir, smallPage(), sampleDataValue())
	if err == nil {
		t.Fatal("wrote a report under a regular file")
	}
	if exitcode.Of(err) != exitcode.Usage {
		t.Errorf("exit code %d, want %d (usage): %v", exitcode.Of(err), exitcode.Usage, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, dir) || strings.Count(msg, dir) != 1 {
		t.Errorf("want one line naming %s once, got %q", dir, msg)
	}
}

func TestWriteDirWritesNothingWhenAChartFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	page := smallPage()
	page.Sections = append(page.Sections, Section{Content: []Block{
		BarChart{Name: "broken", Categories: []string{"a"}, Values: []float64{1, 2}},
	}})
	err := WriteDir(dir, page, nil)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err = %v, want one naming the chart", err)
	}
	if _, statErr := os.Stat(dir); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("a failed report left %s behind", dir)
	}
}

func TestWriteDirRejectsUnencodableData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	err := WriteDir(dir, Page{Title: "t"}, map[string]float64{"p95": math.NaN()})
	if err == nil || !strings.Contains(err.Error(), "JSON") {
		t.Errorf("err = %v, want a JSON error", err)
	}
}
