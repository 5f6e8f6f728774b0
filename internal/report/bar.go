package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BarChart has one bar per category and, optionally, a reference bar beside each one
// (for example the 2017 article's figures next to this run's).
type BarChart struct {
	Name          string // file stem: charts/NAME.svg
	Title         string
	ValueLabel    string // value axis title with its unit, e.g. "time (s)"
	CategoryLabel string // optional category axis title
	Categories    []string
	Values        []float64 // one per category; NaN draws "n/a" (e.g. a failed scenario)
	SeriesName    string    // legend entry for Values when References are shown; default "this run"
	References    []float64 // optional, one per category; NaN where there is none
	ReferenceName string    // legend entry for References, e.g. "2017 original"
	ValueFormat   string    // fmt verb for the labels on the bars, e.g. "%.2f s"; default: 3 significant digits
}

// GroupedBarChart has a group of bars per category, one bar per series, e.g. the
// concurrency levels as groups and the query counts as series.
type GroupedBarChart struct {
	Name        string
	Title       string
	ValueLabel  string
	GroupLabel  string // optional category axis title, e.g. "concurrent clients"
	Groups      []string
	Series      []BarSeries
	ValueFormat string
}

// BarSeries is one colour of a GroupedBarChart.
type BarSeries struct {
	Name   string
	Values []float64 // one per group; NaN draws "n/a"
}

func (BarChart) isBlock()                    {}
func (c BarChart) ChartName() string         { return c.Name }
func (c BarChart) ChartTitle() string        { return c.Title }
func (GroupedBarChart) isBlock()             {}
func (c GroupedBarChart) ChartName() string  { return c.Name }
func (c GroupedBarChart) ChartTitle() string { return c.Title }

func (c BarChart) figure() (*figure, error) {
	if len(c.Values) != len(c.Categories) {
		return nil, fmt.Errorf("%d values for %d categories", len(c.Values), len(c.Categories))
	}
	name := c.SeriesName
	if name == "" {
		name = "this run"
	}
	bars := []barSeries{{name: name, values: c.Values, color: seriesColor(0), missing: "n/a"}}
	if c.References != nil {
		if len(c.References) != len(c.Categories) {
			return nil, fmt.Errorf("%d reference values for %d categories", len(c.References), len(c.Categories))
		}
		refName := c.ReferenceName
		if refName == "" {
			refName = "reference"
		}
		bars = append(bars, barSeries{name: refName, values: c.References, color: referenceColor})
	}
	return barFigure(c.Title, c.ValueLabel, c.CategoryLabel, c.Categories, bars, c.ValueFormat, len(bars) > 1)
}

func (c GroupedBarChart) figure() (*figure, error) {
	if len(c.Series) == 0 {
		return nil, errors.New("no series")
	}
	var bars []barSeries
	for i, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return nil, fmt.Errorf("series %q has %d values for %d groups", s.Name, len(s.Values), len(c.Groups))
		}
		bars = append(bars, barSeries{name: s.Name, values: s.Values, color: seriesColor(i), missing: "n/a"})
	}
	return barFigure(c.Title, c.ValueLabel, c.GroupLabel, c.Groups, bars, c.ValueFormat, true)
}

type barSeries struct {
	name   string
	values []float64
	color  color.Color
	// missing labels a NaN bar: "n/a" for a measurement that failed, nothing for a
	// reference that does not exist.
	missing string
}

// groupSpan is the share of a category's slot its bars fill; the rest separates groups.
const (
	groupSpan       = 0.8
	maxBarThickness = 64 * vg.Length(1)
)

func barFigure(title, valueLabel, categoryLabel string, categories []string, series []barSeries, valueFormat string, withLegend bool) (*figure, error) {
	n := len(categories)
	if n == 0 {
		return nil, errors.New("no categories")
	}
	lo, hi := 0.0, 0.0
	for _, s := range series {
		for _, v := range s.values {
			if math.IsInf(v, 0) {
				return nil, fmt.Errorf("series %q: infinite value", s.name)
			}
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}

	// Long category names (scenario descriptions) collide under vertical bars; they are
	// then written beside horizontal bars, where they read left to right at any length.
	slot := (chartWidth - vg.Points(100)) / vg.Length(n)
	horizontal := textWidth(tickLabelStyle, categories...) > slot*0.95

	// Room beyond the longest bar for its value label.
	headroom := 0.12
	if horizontal {
		headroom = 0.16
	}
	ticks, vmin, vmax := niceTicks(lo, hi+(hi-lo)*headroom, 6)
	if hi == lo {
		ticks, vmin, vmax = niceTicks(0, 1, 5)
	}

	p := newPlot()
	bars := &barPlot{series: series, horizontal: horizontal, format: valueFormat}
	catTicks := make(plot.ConstantTicks, n)
	for i, name := range categories {
		catTicks[i] = plot.Tick{Value: bars.position(i, n), Label: name}
	}
	grid := plotter.NewGrid()
	grid.Horizontal.Color, grid.Vertical.Color = gridColor, gridColor
	grid.Horizontal.Width, grid.Vertical.Width = vg.Points(0.75), vg.Points(0.75)
	valAxis, catAxis := &p.Y, &p.X
	if horizontal {
		valAxis, catAxis = &p.X, &p.Y
		grid.Horizontal.Color = nil
	} else {
		grid.Vertical.Color = nil
	}
	p.Add(grid, bars)
	valAxis.Min, valAxis.Max = vmin, vmax
	valAxis.Tick.Marker = plot.ConstantTicks(ticks)
	valAxis.Label.Text = valueLabel
	catAxis.Min, catAxis.Max = -0.5, float64(n)-0.5
	catAxis.Tick.Marker = catTicks
	catAxis.Tick.Length = 0
	catAxis.Label.Text = categoryLabel

	f := &figure{title: title, panels: []*plot.Plot{p}, width: chartWidth, height: chartHeight}
	if horizontal {
		perBar := vg.Points(18)
		if len(series) == 1 {
			perBar = vg.Points(22)
		}
		slotH := perBar*vg.Length(len(series)) + vg.Points(12)
		f.height = max(vg.Points(220), vg.Points(130)+slotH*vg.Length(n))
	}
	if withLegend {
		for _, s := range series {
			f.legend = append(f.legend, legendEntry{name: s.name, thumb: swatch{s.color}})
		}
	}
	return f, nil
}

// barPlot draws every series' bars side by side within each category's slot, with the
// value written at the end of each bar when there is room for it.
type barPlot struct {
	series     []barSeries
	horizontal bool
	format     string
}

// position puts category i on the category axis; horizontal charts list the first
// category at the top, as a table would.
func (b *barPlot) position(i, n int) float64 {
	if b.horizontal {
		return float64(n - 1 - i)
	}
	return float64(i)
}

func (b *barPlot) label(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if b.format != "" {
		return fmt.Sprintf(b.format, v)
	}
	return formatNumber(v)
}

func (b *barPlot) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	trCat, trVal := trX, trY
	if b.horizontal {
		trCat, trVal = trY, trX
	}
	n := len(b.series[0].values)
	k := len(b.series)
	slotLen := trCat(1) - trCat(0)
	if slotLen < 0 {
		slotLen = -slotLen
	}
	// A chart of two or three categories would otherwise get slabs for bars.
	barLen := min(slotLen*groupSpan/vg.Length(k), maxBarThickness)

	showLabels := true
	for _, s := range b.series {
		for _, v := range s.values {
			l := b.label(v)
			if b.horizontal && valueLabelStyle.Height(l) > barLen+vg.Points(2) ||
				!b.horizontal && valueLabelStyle.Width(l) > barLen+vg.Points(4) {
				showLabels = false
			}
		}
	}

	zero := trVal(0)
	for i := range n {
		// Bars without a value and without a label (a reference that does not exist)
		// take no room: the remaining bars are centred on their category.
		var shown []int
		for j, s := range b.series {
			if !math.IsNaN(s.values[i]) || s.missing != "" {
				shown = append(shown, j)
			}
		}
		for slot, j := range shown {
			s, v := b.series[j], b.series[j].values[i]
			offset := vg.Length(float64(slot)+0.5-float64(len(shown))/2) * barLen
			if b.horizontal {
				offset = -offset // series order reads top to bottom, matching the legend
			}
			mid := trCat(b.position(i, n)) + offset
			c0, c1 := mid-barLen/2+vg.Points(0.5), mid+barLen/2-vg.Points(0.5)
			if math.IsNaN(v) {
				if showLabels {
					b.drawLabel(c, mid, zero, s.missing, true)
				}
				continue
			}
			end := trVal(v)
			var rect []vg.Point
			if b.horizontal {
				rect = []vg.Point{{X: zero, Y: c0}, {X: end, Y: c0}, {X: end, Y: c1}, {X: zero, Y: c1}}
			} else {
				rect = []vg.Point{{X: c0, Y: zero}, {X: c0, Y: end}, {X: c1, Y: end}, {X: c1, Y: zero}}
			}
			c.FillPolygon(s.color, rect)
			if showLabels {
				b.drawLabel(c, mid, end, b.label(v), v >= 0)
			}
		}
	}
}

func (b *barPlot) drawLabel(c draw.Canvas, mid, end vg.Length, label string, positive bool) {
	sty := valueLabelStyle
	pad := vg.Points(3)
	if b.horizontal {
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
		if !positive {
			sty.XAlign, pad = draw.XRight, -pad
		}
		c.FillText(sty, vg.Point{X: end + pad, Y: mid}, label)
		return
	}
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YBottom
	if !positive {
		sty.YAlign, pad = draw.YTop, -pad
	}
	c.FillText(sty, vg.Point{X: mid, Y: end + pad}, label)
}

// swatch is a legend thumbnail: a filled square in the series colour.
type swatch struct{ color color.Color }

func (swatch) width() vg.Length { return vg.Points(11) }

func (s swatch) Thumbnail(c *draw.Canvas) {
	h := s.width()
	x0, y0 := c.Min.X, c.Center().Y-h/2
	c.FillPolygon(s.color, []vg.Point{
		{X: x0, Y: y0}, {X: x0 + h, Y: y0}, {X: x0 + h, Y: y0 + h}, {X: x0, Y: y0 + h},
	})
}
