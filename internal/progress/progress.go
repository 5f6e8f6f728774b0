// Package progress shows how a long phase advances: on a terminal, mpb bars (a total bar
// with pages, MB/s and ETA, and one line per worker saying what it reads); otherwise,
// timestamped log lines at an interval, so logs of unattended runs stay readable.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/innowarm/innowarm/internal/logx"

	"github.com/innowarm/innowarm/internal/units"
)

// Config describes one phase.
type Config struct {
	Title    string // "warm", "load", ...
	Unit     string // what Total counts: "pages"
	Total    int64
	Bytes    int64 // bytes per unit, for the MB/s figure (the page size)
	Workers  int
	Out      io.Writer     // where bars or lines go (stderr)
	Bars     bool          // draw bars (on a terminal)
	Interval time.Duration // between lines when not drawing bars
	Quiet    bool          // no periodic lines
	// Observe, when set, is told every change of the count (done of total): a long-running
	// caller (the agent's /status) shows the phase's progress without reading its lines.
	Observe func(done, total int64)
}

// IsTerminal reports whether w is a terminal that can show bars: one with a width (a pty
// of zero columns, as under some wrappers, would show nothing).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("TERM") == "dumb" {
		return false
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	return err == nil && cols > 0
}

// Reporter follows one phase.
type Reporter struct {
	cfg     Config
	start   time.Time
	done    atomic.Int64
	paused  atomic.Value // string
	labels  []atomic.Value
	log     *logx.Logger
	p       *mpb.Progress
	total   *mpb.Bar
	workers []*mpb.Bar
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// New starts reporting.
func New(cfg Config) *Reporter {
	if cfg.Unit == "" {
		cfg.Unit = "pages"
	}
	if cfg.Interval <= 0 {
		// A caller that let a negative interval through must not panic the ticker.
		cfg.Interval = 5 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = os.Stderr
	}
	r := &Reporter{cfg: cfg, start: time.Now(), labels: make([]atomic.Value, cfg.Workers), stop: make(chan struct{})}
	r.paused.Store("")
	for i := range r.labels {
		r.labels[i].Store("")
	}
	if cfg.Bars {
		r.p = mpb.New(mpb.WithOutput(cfg.Out), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
		r.log = logx.New(r.p, false)
		r.total = r.p.AddBar(max(cfg.Total, 1),
			mpb.PrependDecorators(decor.Name(cfg.Title+" ", decor.WC{W: len(cfg.Title) + 1}), decor.Any(r.counter, decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.Any(r.rateAndETA, decor.WCSyncSpace)),
		)
		for i := 0; i < cfg.Workers; i++ {
			i := i
			r.workers = append(r.workers, r.p.New(0, mpb.SpinnerStyle().PositionLeft(), mpb.BarWidth(2),
				mpb.PrependDecorators(decor.Name(fmt.Sprintf("  worker %d ", i+1))),
				mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return r.labels[i].Load().(string) })),
				mpb.BarFillerTrim(),
			))
		}
	} else {
		r.log = logx.New(cfg.Out, cfg.Quiet)
		if !cfg.Quiet {
			r.wg.Add(1)
			go r.lines()
		}
	}
	if cfg.Observe != nil {
		cfg.Observe(0, cfg.Total)
	}
	return r
}

// Log is where lines go while the reporter runs (above the bars on a terminal).
func (r *Reporter) Log() *logx.Logger { return r.log }

// SetDone sets how many units are done so far.
func (r *Reporter) SetDone(n int64) {
	r.done.Store(n)
	if r.cfg.Observe != nil {
		r.cfg.Observe(n, r.cfg.Total)
	}
	if r.total != nil {
		if n > r.cfg.Total {
			r.total.SetTotal(n, false)
		}
		r.total.SetCurrent(n)
	}
}

// SetTotal changes the expected total (when an estimate is corrected).
func (r *Reporter) SetTotal(n int64) {
	r.cfg.Total = n
	if r.cfg.Observe != nil {
		r.cfg.Observe(r.done.Load(), n)
	}
	if r.total != nil {
		r.total.SetTotal(max(n, 1), false)
	}
}

// Worker sets what worker i is doing; "" means idle.
func (r *Reporter) Worker(i int, label string) {
	if i >= 0 && i < len(r.labels) {
		r.labels[i].Store(label)
	}
}

// Paused says the phase waits, and why; "" resumes.
func (r *Reporter) Paused(reason string) { r.paused.Store(reason) }

// Finish stops the display; ok=false marks the total bar as aborted.
func (r *Reporter) Finish(ok bool) {
	r.once.Do(func() {
		close(r.stop)
		r.wg.Wait()
		if r.p != nil {
			for _, w := range r.workers {
				w.SetTotal(1, true)
			}
			if ok {
				r.total.SetTotal(max(r.done.Load(), 1), true)
			} else {
				r.total.Abort(false)
			}
			r.p.Wait()
		}
	})
}

// Elapsed since the reporter started.
func (r *Reporter) Elapsed() time.Duration { return time.Since(r.start) }

func (r *Reporter) counter(decor.Statistics) string {
	done, total := r.done.Load(), r.cfg.Total
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	return fmt.Sprintf("%s/%s %s (%.0f%%)", groupDigits(done), groupDigits(total), r.cfg.Unit, pct)
}

func (r *Reporter) rateAndETA(decor.Statistics) string {
	s := r.Status()
	if p := r.paused.Load().(string); p != "" {
		return "paused: " + p
	}
	return s
}

// Status is the one-line summary: rate and ETA.
func (r *Reporter) Status() string {
	done, total := r.done.Load(), r.cfg.Total
	secs := time.Since(r.start).Seconds()
	if secs <= 0 || done <= 0 {
		return "starting"
	}
	rate := float64(done) / secs
	parts := []string{}
	if r.cfg.Bytes > 0 {
		parts = append(parts, fmt.Sprintf("%.0f MB/s", rate*float64(r.cfg.Bytes)/1e6))
	} else {
		parts = append(parts, fmt.Sprintf("%.0f %s/s", rate, r.cfg.Unit))
	}
	if total > done && rate > 0 {
		parts = append(parts, "ETA "+(time.Duration(float64(total-done)/rate*float64(time.Second))).Round(time.Second).String())
	}
	return strings.Join(parts, ", ")
}

func (r *Reporter) lines() {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			line := fmt.Sprintf("%s progress: %s, %s", r.cfg.Title, r.counter(decor.Statistics{}), r.Status())
			if p := r.paused.Load().(string); p != "" {
				line += " (paused: " + p + ")"
			}
			r.log.Infof("%s", line)
		}
	}
}

func groupDigits(n int64) string { return units.Group(n) }
