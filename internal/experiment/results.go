package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/report"
	"github.com/innowarm/innowarm/internal/units"
)

// Result is what every experiment returns: a Markdown summary for stdout and a report page.
type Result interface {
	Markdown() string
	Page() report.Page
}

// Header is the part of every result that says where and when it ran.
type Header struct {
	Experiment string    `json:"experiment"`
	Started    time.Time `json:"started"`
	Seconds    float64   `json:"seconds"`
	Machine    Machine   `json:"machine"`
	Server     string    `json:"server"`
	Target     string    `json:"target"`
	PoolBytes  int64     `json:"pool_bytes"`
	PoolPages  int64     `json:"pool_pages"`
	PageSize   int       `json:"page_size"`
	FlushMode  string    `json:"innodb_flush_method"`
	LRUDepth   int64     `json:"innodb_lru_scan_depth"`
	LoadEnd    float64   `json:"load_average_1m_end"`
	ReportDir  string    `json:"report_dir,omitempty"`
	Notes      []string  `json:"notes,omitempty"`
}

// begin connects to the target for an experiment and starts its header; log defaults to
// the target's.
func begin(ctx context.Context, t *Target, name string, log *logx.Logger) (*connection.Conn, Header, *logx.Logger, error) {
	if log == nil {
		log = t.Log
	}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, Header{}, nil, err
	}
	return conn, newHeader(ctx, name, t, conn), log, nil
}

func newHeader(ctx context.Context, name string, t *Target, conn *connection.Conn) Header {
	h := Header{Experiment: name, Started: time.Now().UTC(), Machine: machineInfo(), Server: conn.Server.String(),
		PoolBytes: conn.Server.PoolSize, PageSize: conn.Server.PageSize}
	h.Target = t.Kind()
	if t.Sandbox != nil {
		h.Target += " (" + t.Sandbox.Dir + ")"
	} else {
		h.Target += " " + t.Opts.Target()
	}
	if n, err := statusInt(ctx, conn, "Innodb_buffer_pool_pages_total"); err == nil {
		h.PoolPages = n
	}
	_ = conn.DB.QueryRowContext(ctx, "SELECT @@innodb_flush_method, @@innodb_lru_scan_depth").Scan(&h.FlushMode, &h.LRUDepth)
	return h
}

// finish records the run's length and how busy the machine was at its end; a busy machine
// gets a note, since its times are noisy.
func (h *Header) finish(t0 time.Time) {
	h.Seconds = time.Since(t0).Seconds()
	h.LoadEnd = machineInfo().Load1
	if busy := max(h.Machine.Load1, h.LoadEnd); busy > 1.5*float64(h.Machine.CPUs) {
		h.Notes = append(h.Notes, fmt.Sprintf("the machine was busy (load average %.1f at the start, %.1f at the end, on %d CPUs): times and QPS are noisy; buffer-pool misses are not.", h.Machine.Load1, h.LoadEnd, h.Machine.CPUs))
	}
}

// meta is the page metadata every report starts with.
func (h Header) meta(params string) []report.Meta {
	return []report.Meta{
		{Name: "machine", Value: h.Machine.String()},
		{Name: "server", Value: fmt.Sprintf("%s on %s, innodb_buffer_pool_size %s (%s pages of %s), %s, innodb_lru_scan_depth %d", h.Server, h.Target, fmtBytes(h.PoolBytes), commas(h.PoolPages), fmtBytes(int64(h.PageSize)), h.FlushMode, h.LRUDepth)},
		{Name: "parameters", Value: params},
		{Name: "date", Value: h.Started.Format("2006-01-02 15:04:05 UTC") + fmt.Sprintf(", %.0f s", h.Seconds)},
	}
}

// Machine describes the computer the experiment ran on.
type Machine struct {
	OS          string  `json:"os"`
	CPU         string  `json:"cpu"`
	CPUs        int     `json:"cpus"`
	MemoryBytes int64   `json:"memory_bytes"`
	Load1       float64 `json:"load_average_1m"` // at the start: how busy the machine was
}

func machineInfo() Machine {
	m := Machine{OS: runtime.GOOS, CPUs: runtime.NumCPU()}
	if v := keyValue("/etc/os-release", "PRETTY_NAME", "="); v != "" {
		m.OS = strings.Trim(v, `"`)
	}
	m.CPU = keyValue("/proc/cpuinfo", "model name", ":")
	if v := keyValue("/proc/meminfo", "MemTotal", ":"); v != "" {
		kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
		m.MemoryBytes = kb << 10
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return m
}

func (m Machine) String() string {
	parts := []string{m.OS, fmt.Sprintf("%d vCPU", m.CPUs)}
	if m.CPU != "" {
		parts[1] += " (" + m.CPU + ")"
	}
	if m.MemoryBytes > 0 {
		parts = append(parts, fmtBytes(m.MemoryBytes)+" RAM")
	}
	parts = append(parts, fmt.Sprintf("load average %.1f at the start", m.Load1))
	return strings.Join(parts, ", ")
}

// keyValue reads the first "key<sep>value" line of a file.
func keyValue(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// CheckReportDir makes sure the report can be written before a long experiment starts.
func CheckReportDir(dir string) error {
	_, err := PrepareReportDir(dir)
	return err
}

// PrepareReportDir makes sure the report can be written before a long experiment starts,
// creating dir and any missing parents. undo removes the directories it created, deepest
// first and each only while empty, for a run refused or failed before it wrote into them:
// a user test found refused runs leaving empty report directories behind. It never
// removes a directory that existed before, nor one with anything in it.
func PrepareReportDir(dir string) (undo func(), err error) {
	if dir == "" {
		return nil, exitcode.UsageError(fmt.Errorf("the report directory is empty: give --report-dir"))
	}
	var created []string // deepest first
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			break
		}
		created = append(created, d)
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	undo = func() {
		for _, d := range created {
			if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				return // not empty: nor is any parent
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		undo()
		return nil, exitcode.UsageError(fmt.Errorf("cannot create the report directory %s: %w (choose a writable one with --report-dir)", dir, syscallReason(err)))
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		undo()
		return nil, exitcode.UsageError(fmt.Errorf("cannot write to the report directory %s: %w (choose a writable one with --report-dir)", dir, syscallReason(err)))
	}
	f.Close()
	os.Remove(f.Name())
	return undo, nil
}

func syscallReason(err error) error {
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteReport writes the report directory: report.html, report.md, report.json (the
// result itself), charts.
func WriteReport(dir string, r Result) error { return report.WriteDir(dir, r.Page(), r) }

// ReportHTML is the path of a report directory's page.
func ReportHTML(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return filepath.Join(abs, report.HTMLFile)
}

// Formatting helpers for tables.

func commas(n int64) string { return units.Group(n) }

func fmtBytes(n int64) string { return units.FormatBytes(n) }

// secs prints seconds with 3 decimals, as the 2017 article did.
func secs(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// msec prints milliseconds with 2 decimals, or 3 below 1 ms.
func msec(v float64) string {
	if v < 1 {
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func qps(v float64) string { return commas(int64(math.Round(v))) }

func ratio(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}
