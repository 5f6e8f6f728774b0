package report

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LineChart draws named series against a shared X axis, e.g. p95 per second after a
// restart for a cold and a warmed run. With Lower set it becomes a dual view: a second
// panel under the first with the same X axis and legend (p95 above, QPS below), so a
// reader sees both move at the same moment.
type LineChart struct {
	Name    string
	Title   string
	XLabel  string // with its unit, e.g. "seconds since restart"
	YLabel  string
	Series  []Series
	Lower   *LinePanel // optional second panel
	LogX2   bool       // log2 X axis (hot-set sizes that double); every X must be > 0
	Markers []Marker   // vertical lines, e.g. the knee
}

// LinePanel is the lower panel of a dual-view LineChart. A series with the same name as
// one in the upper panel gets the same colour and legend entry.
type LinePanel struct {
	YLabel string
	Series []Series
}

// Series is one line: Y[i] at X[i]. A NaN in Y leaves a gap (a second with no sample).
type Series struct {
	Name string
	X, Y []float64
}

// Marker is a labelled vertical line across the plot at X.
type Marker struct {
	X     float64
	Label string
}

func (LineChart) isBlock()             {}
func (c LineChart) ChartName() string  { return c.Name }
func (c LineChart) ChartTitle() string { return c.Title }

// pointsUpTo is the series length up to which every point also gets a glyph; denser
// series (per-second curves) would be smeared by them.
const pointsUpTo = 40

func (c LineChart) figure() (*figure, error) {
	if len(c.Series) == 0 {
		return nil, errors.New("no series")
	}
	panels := [][]Series{c.Series}
	ylabels := []string{c.YLabel}
	if c.Lower != nil {
		if len(c.Lower.Series) == 0 {
			return nil, errors.New("lower panel has no series")
		}
		panels = append(panels, c.Lower.Series)
		ylabels = append(ylabels, c.Lower.YLabel)
	}

	styleIndex := map[string]int{}
	withPoints := map[string]bool{}
	var order []string
	xmin, xmax := math.Inf(1), math.Inf(-1)
	var xs []float64
	for _, series := range panels {
		for _, s := range series {
			if len(s.X) != len(s.Y) {
				return nil, fmt.Errorf("series %q has %d X values and %d Y values", s.Name, len(s.X), len(s.Y))
			}
			if _, ok := styleIndex[s.Name]; !ok {
				styleIndex[s.Name] = len(order)
				order = append(order, s.Name)
			}
			for i, x := range s.X {
				if math.IsNaN(x) || math.IsInf(x, 0) || math.IsInf(s.Y[i], 0) {
					return nil, fmt.Errorf("series %q: point %d is not a finite number", s.Name, i)
				}
				if c.LogX2 && x <= 0 {
					return nil, fmt.Errorf("series %q: X value %g on a log2 axis (must be > 0)", s.Name, x)
				}
				xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
				xs = append(xs, x)
			}
		}
	}
	for _, m := range c.Markers {
		if math.IsNaN(m.X) || math.IsInf(m.X, 0) || c.LogX2 && m.X <= 0 {
			return nil, fmt.Errorf("marker %q at X %g is outside the axis", m.Label, m.X)
		}
		xmin, xmax = math.Min(xmin, m.X), math.Max(xmax, m.X)
	}
	if math.IsInf(xmin, 0) {
		return nil, errors.New("no data points")
	}

	var xticks []plot.Tick
	if c.LogX2 {
		xticks = log2Ticks(xs, xmin, xmax)
		// A quarter octave of margin keeps the end points off the axis frame.
		xmin, xmax = xmin/math.Pow(2, 0.25), xmax*math.Pow(2, 0.25)
	} else {
		xticks, xmin, xmax = niceTicks(xmin, xmax, 8)
	}

	f := &figure{title: c.Title, width: chartWidth, height: chartHeight}
	if len(panels) == 2 {
		f.height = dualChartHeight
	}
	for pi, series := range panels {
		p := newPlot()
		grid := plotter.NewGrid()
		grid.Horizontal.Color, grid.Vertical.Color = gridColor, gridColor
		grid.Horizontal.Width, grid.Vertical.Width = vg.Points(0.75), vg.Points(0.75)
		p.Add(grid)

		ylo, yhi := 0.0, math.Inf(-1)
		for _, s := range series {
			idx := styleIndex[s.Name]
			for _, seg := range segments(s) {
				line, err := plotter.NewLine(seg)
				if err != nil {
					return nil, fmt.Errorf("series %q: %w", s.Name, err)
				}
				line.LineStyle = seriesLineStyle(idx)
				p.Add(line)
				if len(s.X) <= pointsUpTo {
					withPoints[s.Name] = true
				}
				if len(s.X) <= pointsUpTo || len(seg) == 1 {
					sc, err := plotter.NewScatter(seg)
					if err != nil {
						return nil, fmt.Errorf("series %q: %w", s.Name, err)
					}
					sc.GlyphStyle = seriesGlyphStyle(idx)
					p.Add(sc)
				}
				for _, pt := range seg {
					ylo, yhi = math.Min(ylo, pt.Y), math.Max(yhi, pt.Y)
				}
			}
		}
		if math.IsInf(yhi, 0) {
			yhi = 1
		}
		if len(c.Markers) > 0 {
			p.Add(&markerPlot{markers: c.Markers, labels: pi == 0})
		}

		yticks, ymin, ymax := niceTicks(ylo, yhi*1.04, 6)
		p.Y.Min, p.Y.Max = ymin, ymax
		p.Y.Tick.Marker = plot.ConstantTicks(yticks)
		p.Y.Label.Text = ylabels[pi]
		p.X.Min, p.X.Max = xmin, xmax
		p.X.Tick.Marker = plot.ConstantTicks(xticks)
		if c.LogX2 {
			p.X.Scale = plot.LogScale{}
		}
		if pi == len(panels)-1 {
			p.X.Label.Text = c.XLabel
		}
		f.panels = append(f.panels, p)
	}

	for _, name := range order {
		idx := styleIndex[name]
		f.legend = append(f.legend, legendEntry{name: name, thumb: lineThumb{idx: idx, glyph: withPoints[name]}})
	}
	return f, nil
}

// segments splits s at NaN values of Y.
func segments(s Series) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i := range s.X {
		if math.IsNaN(s.Y[i]) {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: s.X[i], Y: s.Y[i]})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// log2Ticks labels the X values themselves when there are few of them (K = 100, 200,
// 400, ... reads better than powers of two), otherwise whole powers of two.
func log2Ticks(xs []float64, xmin, xmax float64) []plot.Tick {
	distinct := map[float64]bool{}
	for _, x := range xs {
		distinct[x] = true
	}
	var values []float64
	if len(distinct) <= 12 {
		for x := range distinct {
			values = append(values, x)
		}
		sort.Float64s(values)
	} else {
		lo, hi := math.Ceil(math.Log2(xmin)), math.Floor(math.Log2(xmax))
		step := math.Max(1, math.Ceil((hi-lo+1)/10))
		for e := lo; e <= hi; e += step {
			values = append(values, math.Pow(2, e))
		}
	}
	ticks := make([]plot.Tick, len(values))
	for i, v := range values {
		ticks[i] = plot.Tick{Value: v, Label: formatNumber(v)}
	}
	return ticks
}

// lineThumb is a legend thumbnail: the series' line with its glyph in the middle.
type lineThumb struct {
	idx   int
	glyph bool
}

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(seriesLineStyle(t.idx), c.Min.X, y, c.Max.X, y)
	if t.glyph {
		c.DrawGlyph(seriesGlyphStyle(t.idx), vg.Point{X: c.Center().X, Y: y})
	}
}

// markerPlot draws dashed vertical lines with their labels at the top of the panel.
type markerPlot struct {
	markers []Marker
	labels  bool
}

func (m *markerPlot) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	line := draw.LineStyle{Color: markerColor, Width: vg.Points(1.25), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
	type span struct{ x0, x1 vg.Length }
	var rows [][]span // labels already placed, per row from the top
	for _, mk := range m.markers {
		x := trX(mk.X)
		c.StrokeLine2(line, x, c.Min.Y, x, c.Max.Y)
	}
	// Labels after all the lines, so no line crosses a label.
	for _, mk := range m.markers {
		x := trX(mk.X)
		if !m.labels || mk.Label == "" {
			continue
		}
		sty := markerStyle
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
		w, h := sty.Width(mk.Label), sty.Height(mk.Label)
		pad := vg.Points(4)
		x0 := x + pad
		if x0+w > c.Max.X {
			x0 = x - pad - w
		}
		// Markers close together (two knees) would print over each other: a label goes
		// to the first row where it collides with nothing.
		row := 0
		for ; row < len(rows); row++ {
			free := true
			for _, sp := range rows[row] {
				if x0 < sp.x1+vg.Points(6) && sp.x0 < x0+w+vg.Points(6) {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		if row == len(rows) {
			rows = append(rows, nil)
		}
		rows[row] = append(rows[row], span{x0, x0 + w})
		y := c.Max.Y - vg.Points(3) - vg.Length(row)*(h+vg.Points(4))
		// A white plate keeps the label legible over grid lines and series.
		c.FillPolygon(rgb(0xFF, 0xFF, 0xFF), []vg.Point{
			{X: x0 - vg.Points(2), Y: y + vg.Points(1)}, {X: x0 + w + vg.Points(2), Y: y + vg.Points(1)},
			{X: x0 + w + vg.Points(2), Y: y - h - vg.Points(1)}, {X: x0 - vg.Points(2), Y: y - h - vg.Points(1)},
		})
		c.FillText(sty, vg.Point{X: x0, Y: y}, mk.Label)
	}
}
