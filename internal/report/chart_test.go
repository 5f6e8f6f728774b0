package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
)

// hostileBars puts user-controlled text everywhere a chart prints text, on the vertical
// layout (short category names).
func hostileBars() BarChart {
	return BarChart{
		Name:       "hostile",
		Title:      "Title " + hostile,
		ValueLabel: "ms & <more>",
		Categories: []string{"a<b", "c&d", `"q"`},
		Values:     []float64{1, 2.5, math.NaN()},
		SeriesName: "s'1",
		References: []float64{0.5, math.NaN(), 3},
	}
}

// pngOf renders each chart's PNG once per test binary: rasterising is the slow part of
// these tests, many times over under -race.
var pngCache sync.Map // chart name → image.Image

func pngOf(t *testing.T, c Chart) image.Image {
	t.Helper()
	if img, ok := pngCache.Load(c.ChartName()); ok {
		return img.(image.Image)
	}
	b, err := RenderPNG(c)
	if err != nil {
		t.Fatalf("%s: %v", c.ChartName(), err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", c.ChartName(), err)
	}
	pngCache.Store(c.ChartName(), img)
	return img
}

func allCharts() []Chart {
	return []Chart{coldstartChart(), warmupChart(), hotrowsChart(), concurrencyChart(), hostileBars()}
}

// parseSVG reads the whole document as strict XML and returns the root element name and
// the concatenated character data.
func parseSVG(t *testing.T, name string, svg []byte) (root string, text string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var sb strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: SVG is not well-formed XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			sb.Write(tok)
			sb.WriteString("\n")
		}
	}
	return root, sb.String()
}

// svgText renders c as SVG and returns the document and its text.
func svgText(t *testing.T, c Chart) ([]byte, string) {
	t.Helper()
	svg, err := RenderSVG(c)
	if err != nil {
		t.Fatalf("%s: %v", c.ChartName(), err)
	}
	_, text := parseSVG(t, c.ChartName(), svg)
	return svg, text
}

func TestChartsRenderValidSVG(t *testing.T) {
	for _, c := range allCharts() {
		svg, err := RenderSVG(c)
		if err != nil {
			t.Fatalf("%s: %v", c.ChartName(), err)
		}
		root, text := parseSVG(t, c.ChartName(), svg)
		if root != "svg" {
			t.Errorf("%s: root element %q, want svg", c.ChartName(), root)
		}
		if !strings.Contains(text, c.ChartTitle()) {
			t.Errorf("%s: title %q not among the SVG's text", c.ChartName(), c.ChartTitle())
		}
		if !bytes.Contains(svg, []byte("'Liberation Sans',Arimo,Arial")) {
			t.Errorf("%s: text has no font fallback", c.ChartName())
		}
	}
}

func TestChartTextIsEscapedAndComplete(t *testing.T) {
	c := hostileBars()
	svg, text := svgText(t, c)
	for _, want := range append([]string{c.Title, c.ValueLabel, c.SeriesName, "reference", "n/a"}, c.Categories...) {
		if !strings.Contains(text, want) {
			t.Errorf("text %q missing from the chart", want)
		}
	}
	if bytes.Contains(svg, []byte("<script")) {
		t.Error("a label became markup")
	}
}

func TestLegendLabelsEverySeriesOnce(t *testing.T) {
	c := warmupChart()
	_, text := svgText(t, c)
	for _, s := range c.Series {
		// One legend entry although the series appears in both panels.
		if n := strings.Count(text, s.Name+"\n"); n != 1 {
			t.Errorf("series %q printed %d times, want once", s.Name, n)
		}
	}
	for _, want := range []string{c.YLabel, c.Lower.YLabel, c.XLabel} {
		if !strings.Contains(text, want) {
			t.Errorf("axis title %q missing", want)
		}
	}
}

func TestKneeMarkerAndLog2Ticks(t *testing.T) {
	c := hotrowsChart()
	_, text := svgText(t, c)
	for _, want := range []string{c.Markers[0].Label, c.Markers[1].Label, "100\n", "200\n", "400\n", "12.8k\n", "102k\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing from the hot-rows chart", want)
		}
	}
}

func TestChartsRenderNonBlankPNG(t *testing.T) {
	for _, c := range allCharts() {
		img := pngOf(t, c)
		size := img.Bounds().Size()
		if size.X < 1000 || size.Y < 400 {
			t.Errorf("%s: %v pixels is too small for a report", c.ChartName(), size)
		}
		inked, colours := inkStats(img)
		if inked < 0.03 || colours < 3 {
			t.Errorf("%s: looks blank: %.1f%% non-white pixels, %d colours", c.ChartName(), inked*100, colours)
		}
	}
}

// TestSeriesColoursAreDrawn checks the data itself reached the image, not just the
// frame, title and legend: every series colour covers far more pixels than its legend
// swatch alone would.
func TestSeriesColoursAreDrawn(t *testing.T) {
	cases := []struct {
		chart     Chart
		colours   []color.Color
		minPixels int
	}{
		{coldstartChart(), []color.Color{palette[0], referenceColor}, 5000},
		{concurrencyChart(), []color.Color{palette[0], palette[1], palette[2]}, 1000},
		{hotrowsChart(), []color.Color{palette[0], palette[1]}, 2000},
		{warmupChart(), []color.Color{palette[0], palette[1], palette[2]}, 2000},
	}
	for _, tc := range cases {
		t.Run(tc.chart.ChartName(), func(t *testing.T) {
			img := pngOf(t, tc.chart)
			for _, c := range tc.colours {
				if n := countColour(img, c); n < tc.minPixels {
					t.Errorf("%s: %d pixels of %v, want at least %d", tc.chart.ChartName(), n, c, tc.minPixels)
				}
			}
		})
	}
}

func countColour(img image.Image, c color.Color) int {
	rgba := toRGBA(img)
	wr, wg, wb, _ := c.RGBA()
	near := func(a uint8, b uint32) bool { return max(uint32(a), b>>8)-min(uint32(a), b>>8) < 0x18 }
	n := 0
	for i := 0; i+3 < len(rgba.Pix); i += 4 {
		if near(rgba.Pix[i], wr) && near(rgba.Pix[i+1], wg) && near(rgba.Pix[i+2], wb) {
			n++
		}
	}
	return n
}

// toRGBA gives direct access to the pixels: image.At per pixel is too slow under -race.
func toRGBA(img image.Image) *image.RGBA {
	if rgba, ok := img.(*image.RGBA); ok {
		return rgba
	}
	rgba := image.NewRGBA(img.Bounds())
	draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
	return rgba
}

// inkStats returns the share of clearly non-white pixels and how many distinct
// saturated colours there are (bars and lines, not anti-aliased greys).
func inkStats(img image.Image) (float64, int) {
	rgba := toRGBA(img)
	var inked, total int
	colours := map[[3]uint8]bool{}
	for i := 0; i+3 < len(rgba.Pix); i += 4 {
		r, g, b := rgba.Pix[i], rgba.Pix[i+1], rgba.Pix[i+2]
		total++
		if r < 0xE0 || g < 0xE0 || b < 0xE0 {
			inked++
		}
		if max(r, g, b)-min(r, g, b) > 0x40 {
			colours[[3]uint8{r >> 4, g >> 4, b >> 4}] = true
		}
	}
	return float64(inked) / float64(total), len(colours)
}

func TestBarChartLayoutFollowsLabelLength(t *testing.T) {
	short, err := hostileBars().figure()
	if err != nil {
		t.Fatal(err)
	}
	long, err := coldstartChart().figure()
	if err != nil {
		t.Fatal(err)
	}
	// Vertical bars put the categories on X; horizontal ones put them on Y.
	if ticks := short.panels[0].X.Tick.Marker.Ticks(0, 1); len(ticks) != 3 || ticks[0].Label != "a<b" {
		t.Errorf("short labels: X ticks %v, want the three categories", ticks)
	}
	if ticks := long.panels[0].Y.Tick.Marker.Ticks(0, 1); len(ticks) != 7 {
		t.Errorf("long labels: Y ticks %v, want the seven categories", ticks)
	}
	if long.height <= chartHeight {
		t.Errorf("horizontal chart with 7 categories and references is only %v tall", long.height)
	}
}

func TestChartInputErrors(t *testing.T) {
	cases := map[string]Chart{
		"values/categories": BarChart{Name: "x", Categories: []string{"a", "b"}, Values: []float64{1}},
		"references":        BarChart{Name: "x", Categories: []string{"a"}, Values: []float64{1}, References: []float64{1, 2}},
		"no categories":     BarChart{Name: "x"},
		"infinite":          BarChart{Name: "x", Categories: []string{"a"}, Values: []float64{math.Inf(1)}},
		"bad name":          BarChart{Name: "../x", Categories: []string{"a"}, Values: []float64{1}},
		"empty name":        BarChart{Categories: []string{"a"}, Values: []float64{1}},
		"group length":      GroupedBarChart{Name: "x", Groups: []string{"1"}, Series: []BarSeries{{Name: "s", Values: []float64{1, 2}}}},
		"no series":         GroupedBarChart{Name: "x", Groups: []string{"1"}},
		"x/y length":        LineChart{Name: "x", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1}}}},
		"log2 zero":         LineChart{Name: "x", LogX2: true, Series: []Series{{Name: "s", X: []float64{0, 2}, Y: []float64{1, 1}}}},
		"log2 marker":       LineChart{Name: "x", LogX2: true, Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1, 1}}}, Markers: []Marker{{X: -1}}},
		"NaN x":             LineChart{Name: "x", Series: []Series{{Name: "s", X: []float64{math.NaN()}, Y: []float64{1}}}},
		"no lines":          LineChart{Name: "x"},
		"empty lower":       LineChart{Name: "x", Series: []Series{{Name: "s", X: []float64{1}, Y: []float64{1}}}, Lower: &LinePanel{}},
		"no points":         LineChart{Name: "x", Series: []Series{{Name: "s"}}},
	}
	for name, c := range cases {
		if _, err := RenderSVG(c); err == nil {
			t.Errorf("%s: rendered without error", name)
		}
		if _, err := RenderPNG(c); err == nil {
			t.Errorf("%s: PNG rendered without error", name)
		}
	}
}

func TestDegenerateDataStillRenders(t *testing.T) {
	nan := math.NaN()
	cases := []Chart{
		BarChart{Name: "all-failed", Categories: []string{"a", "b"}, Values: []float64{nan, nan}},
		BarChart{Name: "zeros", Categories: []string{"a"}, Values: []float64{0}},
		BarChart{Name: "negative", Categories: []string{"a", "b"}, Values: []float64{-2, 3}},
		LineChart{Name: "one-point", Series: []Series{{Name: "s", X: []float64{5}, Y: []float64{7}}}},
		LineChart{Name: "log2-one-x", LogX2: true, Series: []Series{{Name: "s", X: []float64{100, 100}, Y: []float64{1, 2}}}},
		LineChart{Name: "gaps", Series: []Series{{Name: "s", X: []float64{1, 2, 3}, Y: []float64{nan, 2, nan}}}},
		LineChart{Name: "dense-log2", LogX2: true, Series: []Series{{Name: "s", X: seq(1, 60), Y: seq(1, 60)}}},
	}
	for _, c := range cases {
		t.Run(c.ChartName(), func(t *testing.T) {
			svg, err := RenderSVG(c)
			if err != nil {
				t.Errorf("%s: %v", c.ChartName(), err)
				return
			}
			parseSVG(t, c.ChartName(), svg)
		})
	}
}

func seq(from, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(from + i)
	}
	return out
}

func TestNiceTicks(t *testing.T) {
	ticks, lo, hi := niceTicks(0, 7.562*1.16, 6)
	if lo != 0 || hi != 10 {
		t.Errorf("range [%g, %g], want [0, 10]", lo, hi)
	}
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, " "); got != "0 2 4 6 8 10" {
		t.Errorf("labels %q", got)
	}
	ticks, _, _ = niceTicks(0, 14100, 6)
	labels = labels[:0]
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, " "); got != "0 2.5k 5k 7.5k 10k 12.5k 15k" {
		t.Errorf("labels %q: an axis should use one unit", got)
	}
	ticks, _, _ = niceTicks(0, 0.3, 3)
	for _, tk := range ticks {
		if len(tk.Label) > 4 {
			t.Errorf("label %q carries floating-point noise", tk.Label)
		}
	}
}

func TestFormatNumber(t *testing.T) {
	cases := map[float64]string{0: "0", 1.7401: "1.74", 7.562: "7.56", 0.0312: "0.0312", 250: "250",
		1600: "1600", 12800: "12.8k", 102400: "102k", 2.5e6: "2.5M", -3.25: "-3.25", math.NaN(): "n/a"}
	for v, want := range cases {
		if got := formatNumber(v); got != want {
			t.Errorf("formatNumber(%g) = %q, want %q", v, got, want)
		}
	}
}
