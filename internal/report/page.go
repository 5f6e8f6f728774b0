// Package report turns experiment results into reports: charts (gonum/plot, rendered
// to SVG and PNG), tables (Markdown, terminal, HTML) and a Page written by WriteDir as a
// report directory with one self-contained HTML file that opens offline. It does no
// database access; the experiment commands measure, this package presents.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"
	"strings"
)

// Page is a whole report.
type Page struct {
	Title    string
	Subtitle string
	Meta     []Meta // machine, server version, parameters, date, ... in display order
	Sections []Section
}

// Meta is one line of a page's metadata.
type Meta struct {
	Name  string
	Value string
}

// Section is a heading and its content in display order.
type Section struct {
	Heading string
	Content []Block
}

// Block is section content: Text, Table, or a Chart (BarChart, GroupedBarChart,
// LineChart).
type Block interface{ isBlock() }

// Text is prose; a blank line starts a new paragraph.
type Text string

var blankLine = regexp.MustCompile(`\n\s*\n`)

func (Text) isBlock() {}

func (t Text) paragraphs() []string {
	var out []string
	for _, p := range blankLine.Split(strings.TrimSpace(string(t)), -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// charts returns the page's charts in order, after checking their names can be files
// and are not used twice.
func (p Page) charts() ([]Chart, error) {
	var out []Chart
	seen := map[string]bool{}
	for _, s := range p.Sections {
		for _, b := range s.Content {
			c, ok := b.(Chart)
			if !ok {
				continue
			}
			if err := checkChartName(c.ChartName()); err != nil {
				return nil, err
			}
			if seen[c.ChartName()] {
				return nil, fmt.Errorf("two charts are named %q; chart names become file names and must be unique", c.ChartName())
			}
			seen[c.ChartName()] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// HTML renders the page as one self-contained HTML document: inline CSS, charts as
// inline SVG, nothing fetched from anywhere.
func (p Page) HTML() ([]byte, error) {
	charts, err := p.charts()
	if err != nil {
		return nil, err
	}
	svgs := map[string][]byte{}
	for _, c := range charts {
		if svgs[c.ChartName()], err = RenderSVG(c); err != nil {
			return nil, err
		}
	}
	return p.html(svgs)
}

var (
	xmlProlog  = regexp.MustCompile(`<\?xml[^>]*\?>\s*`)
	xmlComment = regexp.MustCompile(`<!--[\s\S]*?-->\s*`)
	svgOpenTag = regexp.MustCompile(`<svg\b[^>]*>`)
	svgSizeAtt = regexp.MustCompile(`\s(width|height|xmlns|xmlns:xlink)="[^"]*"`)
)

// inlineSVG adapts a standalone SVG document for embedding in HTML: no XML prolog, and
// no namespace or fixed size attributes (HTML puts <svg> in the SVG namespace itself, and
// CSS scales the chart to the column), so the page holds no URL at all.
func inlineSVG(svg []byte, title string) template.HTML {
	s := xmlComment.ReplaceAllString(xmlProlog.ReplaceAllString(string(svg), ""), "")
	s = svgOpenTag.ReplaceAllStringFunc(s, func(tag string) string {
		tag = svgSizeAtt.ReplaceAllString(tag, "")
		return strings.TrimSuffix(tag, ">") + ` role="img" aria-label="` + template.HTMLEscapeString(title) + `">`
	})
	return template.HTML(s)
}

type htmlBlock struct {
	Paragraphs []string
	Table      template.HTML
	Chart      template.HTML
	ChartName  string
}

type htmlSection struct {
	ID      string
	Heading string
	Blocks  []htmlBlock
}

func (p Page) html(svgs map[string][]byte) ([]byte, error) {
	view := struct {
		Page
		Sections []htmlSection
		TOC      bool
	}{Page: p, TOC: len(p.Sections) >= 3}
	for i, s := range p.Sections {
		hs := htmlSection{ID: fmt.Sprintf("section-%d", i+1), Heading: s.Heading}
		for _, b := range s.Content {
			switch b := b.(type) {
			case Text:
				hs.Blocks = append(hs.Blocks, htmlBlock{Paragraphs: b.paragraphs()})
			case Table:
				hs.Blocks = append(hs.Blocks, htmlBlock{Table: template.HTML(b.HTML())})
			case Chart:
				hs.Blocks = append(hs.Blocks, htmlBlock{Chart: inlineSVG(svgs[b.ChartName()], b.ChartTitle()), ChartName: b.ChartName()})
			case nil:
			default:
				return nil, fmt.Errorf("section %q: unsupported block %T", s.Heading, b)
			}
		}
		view.Sections = append(view.Sections, hs)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, view); err != nil {
		return nil, fmt.Errorf("render HTML: %w", err)
	}
	return buf.Bytes(), nil
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { margin: 0; background: #f4f5f7; color: #222; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Liberation Sans", Arial, sans-serif; }
main { max-width: 1000px; margin: 0 auto; padding: 28px 20px 48px; }
header { background: #fff; border-radius: 8px; padding: 20px 24px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h1 { font-size: 26px; margin: 0 0 4px; }
.subtitle { color: #555; font-size: 16px; margin: 0 0 12px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 12px 0 0; font-size: 14px; }
dl.meta dt { color: #666; }
dl.meta dd { margin: 0; font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; overflow-wrap: anywhere; }
nav { margin-top: 14px; font-size: 14px; }
nav a { margin-right: 14px; color: #0060a0; text-decoration: none; }
section { background: #fff; border-radius: 8px; padding: 8px 24px 20px; margin-top: 20px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h2 { font-size: 20px; margin: 16px 0 10px; border-bottom: 1px solid #e3e3e3; padding-bottom: 6px; }
p { margin: 8px 0; max-width: 80ch; }
figure.chart { margin: 16px 0; }
figure.chart svg { display: block; width: 100%; height: auto; }
.table-wrap { overflow-x: auto; margin: 14px 0; }
table { border-collapse: collapse; font-size: 14px; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 0 0 6px; }
th, td { padding: 5px 12px; border-bottom: 1px solid #e3e3e3; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; border-bottom: 2px solid #cfd3d8; }
tbody tr:nth-child(even) { background: #fafbfc; }
.num { text-align: right; white-space: nowrap; }
.center { text-align: center; }
@media print { body { background: #fff; } section, header { box-shadow: none; } figure.chart { break-inside: avoid; } }
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{- if .Subtitle}}
<p class="subtitle">{{.Subtitle}}</p>
{{- end}}
{{- if .Meta}}
<dl class="meta">
{{- range .Meta}}
<dt>{{.Name}}</dt><dd>{{.Value}}</dd>
{{- end}}
</dl>
{{- end}}
{{- if .TOC}}
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Heading}}</a>{{end}}</nav>
{{- end}}
</header>
{{- range .Sections}}
<section id="{{.ID}}">
{{- if .Heading}}
<h2>{{.Heading}}</h2>
{{- end}}
{{- range .Blocks}}
{{- range .Paragraphs}}
<p>{{.}}</p>
{{- end}}
{{- if .Table}}
<div class="table-wrap">
{{.Table}}</div>
{{- end}}
{{- if .Chart}}
<figure class="chart" id="chart-{{.ChartName}}">
{{.Chart}}</figure>
{{- end}}
{{- end}}
</section>
{{- end}}
</main>
</body>
</html>
`))

var markdownTextEscaper = strings.NewReplacer(`\`, `\\`, `<`, `\<`, "`", "\\`", `*`, `\*`, `[`, `\[`, `]`, `\]`)

// Markdown renders the page as Markdown; charts become image links to
// charts/NAME.svg, relative to the report directory.
func (p Page) Markdown() string {
	var b strings.Builder
	b.WriteString("# " + markdownTextEscaper.Replace(p.Title) + "\n\n")
	if p.Subtitle != "" {
		b.WriteString(markdownTextEscaper.Replace(p.Subtitle) + "\n\n")
	}
	for _, m := range p.Meta {
		b.WriteString("- **" + markdownTextEscaper.Replace(m.Name) + "**: " + markdownTextEscaper.Replace(m.Value) + "\n")
	}
	if len(p.Meta) > 0 {
		b.WriteString("\n")
	}
	for _, s := range p.Sections {
		if s.Heading != "" {
			b.WriteString("## " + markdownTextEscaper.Replace(s.Heading) + "\n\n")
		}
		for _, blk := range s.Content {
			switch blk := blk.(type) {
			case Text:
				for _, para := range blk.paragraphs() {
					b.WriteString(markdownTextEscaper.Replace(para) + "\n\n")
				}
			case Table:
				b.WriteString(blk.Markdown() + "\n")
			case Chart:
				fmt.Fprintf(&b, "![%s](charts/%s.svg)\n\n", markdownTextEscaper.Replace(blk.ChartTitle()), blk.ChartName())
			}
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
