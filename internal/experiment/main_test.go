package experiment_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/experiment"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/report"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// testPool is small so that small tables are several times the pool (hotrows); the
// experiments' own sandboxes get the same page-cleaner setting for small pools. MySQL reads
// about 1,000 pages of its own (data dictionary, undo) at startup: its pool is larger by that.
func testPool() int64 {
	if f := os.Getenv(sandbox.FlavorEnv); strings.HasPrefix(f, "mysql") {
		return 32 << 20
	}
	return 16 << 20
}

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandboxtest.Options{PoolSize: testPool(), ServerArgs: experiment.SmallPoolArgs(testPool())})
}

// target runs experiments on the shared test server; its log goes to the test log.
func target(t *testing.T) *experiment.Target {
	t.Helper()
	return experiment.OnSandbox(sandboxtest.Server(t), logx.New(testWriter{t}, false))
}

func quiet() progress.Config { return progress.Config{Out: io.Discard, Quiet: true} }

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// checkReport writes the report and checks that every chart is there, as SVG and PNG
// files and embedded in the page, and that the JSON holds the data.
func checkReport(t *testing.T, r experiment.Result, charts ...string) map[string]any {
	t.Helper()
	dir := filepath.Join(sandboxtest.Dir(t), "report")
	if err := experiment.CheckReportDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := experiment.WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, report.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		for _, ext := range []string{".svg", ".png"} {
			fi, err := os.Stat(filepath.Join(dir, report.ChartsDir, c+ext))
			if err != nil || fi.Size() < 1000 {
				t.Errorf("chart %s%s: %v", c, ext, err)
			}
		}
		if !strings.Contains(string(html), `id="chart-`+c+`"`) {
			t.Errorf("report.html does not embed chart %s", c)
		}
	}
	if n := strings.Count(string(html), "<svg"); n != len(charts) {
		t.Errorf("report.html embeds %d SVGs, want %d", n, len(charts))
	}
	if strings.Contains(string(html), "http://") && !strings.Contains(string(html), "http://www.w3.org") {
		t.Errorf("report.html refers to the network")
	}
	md, err := os.ReadFile(filepath.Join(dir, report.MDFile))
	if err != nil || !strings.Contains(string(md), "| ") {
		t.Errorf("report.md has no table: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, report.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return data
}

// schemaExists says whether the shared server has the schema.
func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	var n int
	if err := sandboxtest.Reconnect(t).DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}
