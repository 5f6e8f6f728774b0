package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart is a figure of a report: BarChart, GroupedBarChart or LineChart. Its name is
// the file stem under charts/ and must be unique within a page.
type Chart interface {
	Block
	ChartName() string
	ChartTitle() string
	figure() (*figure, error)
}

// figure is what every chart type lowers to: a title, a legend drawn above the plot
// area (where it cannot hide data), and one panel, or two stacked panels sharing the
// X axis.
type figure struct {
	title  string
	legend []legendEntry
	panels []*plot.Plot
	width  vg.Length
	height vg.Length
}

type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

var chartNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func checkChartName(name string) error {
	if !chartNamePattern.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("chart name %q: use letters, digits, '-', '_' or '.', starting with a letter or digit (it becomes a file name)", name)
	}
	return nil
}

// RenderSVG draws c as a standalone SVG document. Text uses Liberation Sans (the font the
// layout was measured with) and falls back to the metric-compatible Arimo/Arial, so
// labels keep their width in browsers without Liberation.
func RenderSVG(c Chart) ([]byte, error) {
	return render(c, func(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) }, fixSVGFonts)
}

// RenderPNG draws c as a PNG image at 144 dpi.
func RenderPNG(c Chart) ([]byte, error) {
	return render(c, func(w, h vg.Length) vg.CanvasWriterTo {
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))}
	}, nil)
}

func render(c Chart, newCanvas func(w, h vg.Length) vg.CanvasWriterTo, post func([]byte) []byte) (out []byte, err error) {
	if err := checkChartName(c.ChartName()); err != nil {
		return nil, err
	}
	// gonum/plot panics on some inputs it cannot draw; a report written after a long
	// experiment should fail with an error naming the chart, not crash.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("chart %s: cannot draw: %v", c.ChartName(), r)
		}
	}()
	f, err := c.figure()
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.ChartName(), err)
	}
	canvas := newCanvas(f.width, f.height)
	f.draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.ChartName(), err)
	}
	out = buf.Bytes()
	if post != nil {
		out = post(out)
	}
	return out, nil
}

// fixSVGFonts widens vgsvg's single font family into a fallback list. User text is
// escaped by vgsvg (a quote becomes &#34;), so the pattern only meets style attributes.
func fixSVGFonts(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte(`style="font-family:Liberation Sans;`),
		[]byte(`style="font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;`))
}

func (f *figure) draw(c draw.Canvas) {
	c.SetColor(rgb(0xFF, 0xFF, 0xFF))
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, vg.Points(10), -vg.Points(14), vg.Points(8), -vg.Points(10))

	if f.title != "" {
		sty := titleStyle
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y}, f.title)
		c.Max.Y -= sty.Height(f.title) + vg.Points(8)
	}
	if len(f.legend) > 0 {
		c.Max.Y -= drawLegend(c, f.legend) + vg.Points(6)
	}
	switch len(f.panels) {
	case 1:
		f.panels[0].Draw(c)
	case 2:
		tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(14)}
		canvases := plot.Align([][]*plot.Plot{{f.panels[0]}, {f.panels[1]}}, tiles, c)
		f.panels[0].Draw(canvases[0][0])
		f.panels[1].Draw(canvases[1][0])
	default:
		panic(fmt.Sprintf("figure with %d panels", len(f.panels)))
	}
}

// drawLegend lays the entries out in centred rows from the top of c, wrapping when a
// row is full, and returns the height used.
func drawLegend(c draw.Canvas, entries []legendEntry) vg.Length {
	const (
		gap    = 6
		spacer = 22
	)
	sty := legendStyle
	rowH := sty.FontExtents().Height + vg.Points(3)
	thumbW := func(e legendEntry) vg.Length {
		if s, ok := e.thumb.(interface{ width() vg.Length }); ok {
			return s.width()
		}
		return vg.Points(26)
	}
	width := func(e legendEntry) vg.Length { return thumbW(e) + vg.Points(gap) + sty.Width(e.name) }

	var rows [][]legendEntry
	var rowWidths []vg.Length
	avail := c.Max.X - c.Min.X
	for _, e := range entries {
		w := width(e)
		n := len(rows)
		if n == 0 || rowWidths[n-1]+vg.Points(spacer)+w > avail {
			rows = append(rows, nil)
			rowWidths = append(rowWidths, -vg.Points(spacer))
			n++
		}
		rows[n-1] = append(rows[n-1], e)
		rowWidths[n-1] += vg.Points(spacer) + w
	}

	y := c.Max.Y
	for i, row := range rows {
		x := c.Center().X - rowWidths[i]/2
		for _, e := range row {
			thumb := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - rowH + vg.Points(3)},
				Max: vg.Point{X: x + thumbW(e), Y: y - vg.Points(2)},
			}}
			e.thumb.Thumbnail(&thumb)
			st := sty
			st.YAlign = draw.YCenter
			c.FillText(st, vg.Point{X: x + thumbW(e) + vg.Points(gap), Y: y - rowH/2}, e.name)
			x += width(e) + vg.Points(spacer)
		}
		y -= rowH
	}
	return vg.Length(len(rows)) * rowH
}

// textWidth is the widest line of any of labels in sty.
func textWidth(sty text.Style, labels ...string) vg.Length {
	var w vg.Length
	for _, l := range labels {
		w = max(w, sty.Width(l))
	}
	return w
}
