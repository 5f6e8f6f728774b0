package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// File names inside a report directory; docs/report.md describes the layout.
const (
	HTMLFile  = "report.html"
	JSONFile  = "report.json"
	MDFile    = "report.md"
	ChartsDir = "charts"
)

// WriteDir writes the report directory: report.html (self-contained), report.json
// (data, indented), report.md, and charts/NAME.svg and charts/NAME.png for every chart
// of page. Everything is rendered before the directory is touched, so a chart that
// cannot be drawn leaves no half-written report behind. A directory that cannot be
// created or written is a usage error naming it.
func WriteDir(dir string, page Page, data any) error {
	charts, err := page.charts()
	if err != nil {
		return err
	}
	rendered, err := renderAll(charts)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	svgs := map[string][]byte{}
	for i, c := range charts {
		svgs[c.ChartName()] = rendered[i].svg
		files[filepath.Join(ChartsDir, c.ChartName()+".svg")] = rendered[i].svg
		files[filepath.Join(ChartsDir, c.ChartName()+".png")] = rendered[i].png
	}
	js, err := json.MarshalIndent(data, "", "  ")
	if err != nil {
		return fmt.Errorf("report data cannot be written as JSON: %w", err)
	}
	files[JSONFile] = append(js, '\n')
	files[MDFile] = []byte(page.Markdown())
	html, err := page.html(svgs)
	if err != nil {
		return err
	}

	for _, d := range []string{dir, filepath.Join(dir, ChartsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return exitcode.UsageError(fmt.Errorf("cannot create report directory %s: %s (choose a writable directory)", d, reason(err)))
		}
	}
	for name, content := range files {
		if err := writeFile(filepath.Join(dir, name), content); err != nil {
			return err
		}
	}
	// Last, so a report.html on disk means the directory is complete.
	return writeFile(filepath.Join(dir, HTMLFile), html)
}

type renderedChart struct {
	svg, png []byte
	err      error
}

// renderAll draws the charts on all CPUs: rasterising the PNGs is most of the time a
// report takes to write. The first error in chart order is returned.
func renderAll(charts []Chart) ([]renderedChart, error) {
	out := make([]renderedChart, len(charts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(len(charts), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				r := &out[i]
				if r.svg, r.err = RenderSVG(charts[i]); r.err == nil {
					r.png, r.err = RenderPNG(charts[i])
				}
			}
		})
	}
	for i := range charts {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, r := range out {
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, nil
}

func writeFile(path string, content []byte) error {
	err := os.WriteFile(path, content, 0o644)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EISDIR) {
		return exitcode.UsageError(fmt.Errorf("cannot write report file %s: %s (choose a writable directory)", path, reason(err)))
	}
	return fmt.Errorf("cannot write report file %s: %s", path, reason(err))
}

// reason drops the path an *fs.PathError repeats, so the message names it once.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
