package report

import (
	"image/color"
	"math"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart geometry, in points. 720 pt is 960 CSS pixels: the width of the HTML page's
// content column, so inline SVG text appears at its nominal size.
const (
	chartWidth      = 720 * vg.Length(1)
	chartHeight     = 380 * vg.Length(1)
	dualChartHeight = 600 * vg.Length(1)
	pngDPI          = 144 // sharp on high-density screens, still small files
)

// palette is Okabe & Ito's colour-blind-safe set, ordered so the first colours keep the
// most contrast with each other and with white; yellow comes last because thin lines in it
// are hard to see on white.
var palette = []color.Color{
	rgb(0x00, 0x72, 0xB2), // blue
	rgb(0xE6, 0x9F, 0x00), // orange
	rgb(0x00, 0x9E, 0x73), // bluish green
	rgb(0xD5, 0x5E, 0x00), // vermillion
	rgb(0xCC, 0x79, 0xA7), // reddish purple
	rgb(0x56, 0xB4, 0xE9), // sky blue
	rgb(0x00, 0x00, 0x00), // black
	rgb(0xF0, 0xE4, 0x42), // yellow
}

var (
	referenceColor = rgb(0xA6, 0xA6, 0xA6)
	gridColor      = rgb(0xE3, 0xE3, 0xE3)
	axisColor      = rgb(0x55, 0x55, 0x55)
	textColor      = rgb(0x22, 0x22, 0x22)
	mutedTextColor = rgb(0x55, 0x55, 0x55)
	markerColor    = rgb(0x44, 0x44, 0x44)
)

func rgb(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 0xFF} }

func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// Dash patterns and glyph shapes vary with the series too, so that lines stay apart in
// greyscale print-outs and for readers who cannot tell the colours apart.
var dashPatterns = [][]vg.Length{
	nil,
	{vg.Points(7), vg.Points(3)},
	{vg.Points(2), vg.Points(2.5)},
	{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
	{vg.Points(12), vg.Points(4)},
}

// Filled shapes first: outlines in light colours vanish at this size.
var glyphShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{},
	draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

func seriesLineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: seriesColor(i), Width: vg.Points(2), Dashes: dashPatterns[i%len(dashPatterns)]}
}

func seriesGlyphStyle(i int) draw.GlyphStyle {
	return draw.GlyphStyle{Color: seriesColor(i), Radius: vg.Points(3.5), Shape: glyphShapes[i%len(glyphShapes)]}
}

func textStyle(size vg.Length, bold bool, c color.Color) text.Style {
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{
		Color:   c,
		Font:    font.From(f, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: plot.DefaultTextHandler,
	}
}

var (
	titleStyle      = textStyle(15, true, textColor)
	axisLabelStyle  = textStyle(12, false, textColor)
	tickLabelStyle  = textStyle(11, false, textColor)
	legendStyle     = textStyle(11, false, textColor)
	valueLabelStyle = textStyle(9.5, false, mutedTextColor)
	markerStyle     = textStyle(10.5, true, markerColor)
)

// newPlot returns a plot with the report's look: sans-serif text, thin grey axes and
// room between the tick labels and the axis titles.
func newPlot() *plot.Plot {
	p := plot.New()
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		xa, ya := a.Tick.Label.XAlign, a.Tick.Label.YAlign
		a.Tick.Label = tickLabelStyle
		a.Tick.Label.XAlign, a.Tick.Label.YAlign = xa, ya
		la, lya := a.Label.TextStyle.XAlign, a.Label.TextStyle.YAlign
		a.Label.TextStyle = axisLabelStyle
		a.Label.TextStyle.XAlign, a.Label.TextStyle.YAlign = la, lya
		a.Label.Padding = vg.Points(6)
		a.LineStyle.Color = axisColor
		a.Tick.LineStyle.Color = axisColor
		a.Tick.Length = vg.Points(4)
		a.Padding = vg.Points(2)
	}
	return p
}

// niceTicks returns labelled ticks at 1, 2, 2.5 or 5 times a power of ten covering
// [lo, hi] with about target intervals, and the range they span: the axis is then
// stretched to that range so its ends carry labels.
func niceTicks(lo, hi float64, target int) (ticks []plot.Tick, min, max float64) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(target)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	min = math.Floor(lo/step+1e-9) * step
	max = math.Ceil(hi/step-1e-9) * step
	// One unit for the whole axis: "7.5k" beside "10k", never "7500" beside "10k".
	scale, suffix := 1.0, ""
	switch top := math.Max(math.Abs(min), math.Abs(max)); {
	case top >= 1e6:
		scale, suffix = 1e6, "M"
	case top >= 1e4:
		scale, suffix = 1e3, "k"
	}
	for i := 0; min+float64(i)*step <= max+step/2; i++ {
		// Multiplying rather than accumulating keeps 0.30000000000000004 off the axis.
		v := min + float64(i)*step
		label := trimFloat(v/scale, 4) + suffix
		if v == 0 {
			label = "0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks, min, max
}

// formatNumber prints v for a tick or a bar label: at most three significant digits
// after the point, thousands as k and millions as M so labels stay short.
func formatNumber(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trimFloat(v/1e6, 3) + "M"
	case a >= 1e4:
		return trimFloat(v/1e3, 3) + "k"
	case a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case a == 0:
		return "0"
	default:
		return trimFloat(v, 3)
	}
}

// trimFloat rounds v to sig significant digits without exponent notation and drops
// trailing zeros.
func trimFloat(v float64, sig int) string {
	a := math.Abs(v)
	decimals := 0
	if a > 0 {
		decimals = sig - 1 - int(math.Floor(math.Log10(a)))
	}
	decimals = max(0, min(decimals, 6))
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
