package report

import (
	"fmt"
	"math"
	"os"
	"testing"
)

// hostile is text as a user's schema could name things: markup, entities, quotes, a
// pipe that would split a Markdown cell.
const hostile = `<script>alert("x")</script> & 'o'|"t"`

func coldstartChart() BarChart {
	nan := math.NaN()
	return BarChart{
		Name:       "coldstart-times",
		Title:      "20,000 unique-key lookups after a restart",
		ValueLabel: "time (s)",
		Categories: []string{
			"cold (first pass)", "hot (second pass)", "after innowarm warm",
			"after old-tool scans", "after dump/load 25%", "after dump/load 100%",
			"after warm from manifest",
		},
		Values:        []float64{6.912, 1.601, 1.702, 2.044, 4.310, 1.688, 1.650},
		SeriesName:    "this run",
		References:    []float64{7.562, 1.740, nan, 2.132, nan, nan, nan},
		ReferenceName: "2017 original",
		ValueFormat:   "%.2f s",
	}
}

func warmupChart() LineChart {
	curve := func(name string, start, floor, tau float64, qpsMax float64) (Series, Series) {
		p95 := Series{Name: name}
		qps := Series{Name: name}
		for s := 0; s <= 120; s++ {
			x := float64(s)
			p := floor + (start-floor)*math.Exp(-x/tau) + 0.4*math.Sin(x/3)
			p95.X, p95.Y = append(p95.X, x), append(p95.Y, p)
			qps.X, qps.Y = append(qps.X, x), append(qps.Y, qpsMax*(1-0.9*math.Exp(-x/tau)))
		}
		return p95, qps
	}
	coldP, coldQ := curve("cold restart", 38, 2.1, 25, 11800)
	warmP, warmQ := curve("after innowarm warm", 4, 2.0, 3, 12100)
	dumpP, dumpQ := curve("after dump/load 100%", 9, 2.0, 8, 11950)
	coldP.Y[40] = math.NaN() // a second without samples leaves a gap
	return LineChart{
		Name:   "warmup-curve",
		Title:  "Warm-up after restart: p95 latency and throughput per second",
		XLabel: "seconds since restart",
		YLabel: "p95 latency (ms)",
		Series: []Series{coldP, warmP, dumpP},
		Lower:  &LinePanel{YLabel: "queries per second", Series: []Series{coldQ, warmQ, dumpQ}},
	}
}

func hotrowsChart() LineChart {
	random := Series{Name: "random hot rows"}
	clustered := Series{Name: "clustered hot rows"}
	for k := 100.0; k <= 102400; k *= 2 {
		random.X, random.Y = append(random.X, k), append(random.Y, 14000/(1+math.Pow(k/12800, 3)))
		clustered.X, clustered.Y = append(clustered.X, k), append(clustered.Y, 14500/(1+math.Pow(k/51200, 3)))
	}
	return LineChart{
		Name:    "hotrows-qps",
		Title:   "Throughput as the hot set grows",
		XLabel:  "hot rows K (log2 scale)",
		YLabel:  "queries per second",
		Series:  []Series{random, clustered},
		LogX2:   true,
		Markers: []Marker{{X: 12800, Label: "knee: random set stops fitting"}, {X: 51200, Label: "knee (clustered)"}},
	}
}

func concurrencyChart() GroupedBarChart {
	groups := []string{"1", "10", "30", "50", "100"}
	var series []BarSeries
	for _, q := range []int{1000, 10000, 100000} {
		s := BarSeries{Name: fmt.Sprintf("%d queries", q)}
		for i, c := range []float64{1, 10, 30, 50, 100} {
			s.Values = append(s.Values, float64(q)/(8000*math.Min(c, 2)+float64(i)*300))
		}
		series = append(series, s)
	}
	return GroupedBarChart{
		Name:        "concurrency-seconds",
		Title:       "Total time by concurrency",
		ValueLabel:  "total time (s)",
		GroupLabel:  "concurrent clients",
		Groups:      groups,
		Series:      series,
		ValueFormat: "%.2f",
	}
}

func samplePage() Page {
	return Page{
		Title:    "innowarm experiment: coldstart",
		Subtitle: "Buffer-pool warm-up after a restart, compared with the 2017 article",
		Meta: []Meta{
			{"machine", "debian-12, 2 vCPU, 3.8 GiB RAM, NVMe"},
			{"server", "MariaDB 10.11.19"},
			{"parameters", "innodb_buffer_pool_size=256M, rows=10,000,000, lookups=20,000, O_DIRECT"},
			{"schema", hostile},
			{"date", "2025-06-01 12:00:00 UTC"},
		},
		Sections: []Section{
			{Heading: "Cold start", Content: []Block{
				Text("Each scenario restarts the server cold, optionally warms the pool, then times 20,000 unique-key lookups.\n\nThe grey bars are the figures of the 2017 article (MySQL 5.7, SSD)."),
				coldstartChart(),
				Table{
					Title:  "Scenario times",
					Header: []string{"scenario", "seconds", "QPS", "p95 (ms)", "pool misses", "warm-up (s)", "ratio to hot", "2017 (s)"},
					Rows: [][]string{
						{"cold (first pass)", "6.912", "2,894", "4.10", "19,874", "—", "4.32×", "7.562"},
						{"hot (second pass)", "1.601", "12,492", "0.21", "0", "—", "1.00×", "1.740"},
						{"after innowarm warm", "1.702", "11,751", "0.25", "12", "3.9", "1.06×", "—"},
						{"after old-tool scans", "2.044", "9,785", "0.31", "1,204", "41.2", "1.28×", "2.132"},
						{hostile, "n/a", "", "", "", "", "", ""},
					},
				},
			}},
			{Heading: "Warm-up curve", Content: []Block{
				Text("Per-second p95 and QPS after the restart."),
				warmupChart(),
			}},
			{Heading: "Hot rows", Content: []Block{hotrowsChart()}},
			{Heading: "Concurrency matrix", Content: []Block{
				concurrencyChart(),
				Table{
					Header: []string{"concurrency", "1000 queries (ms/query)", "10000 queries (ms/query)", "p95 (ms)"},
					Rows:   [][]string{{"1", "0.125", "0.125", "0.31"}, {"10", "0.059", "0.058", "0.9"}, {"100", "0.053", "0.052", "7.7"}},
				},
			}},
		},
	}
}

type sampleData struct {
	Experiment string             `json:"experiment"`
	Seconds    map[string]float64 `json:"seconds"`
	Notes      []string           `json:"notes"`
}

func sampleDataValue() sampleData {
	return sampleData{
		Experiment: "coldstart",
		Seconds:    map[string]float64{"cold": 6.912, "hot": 1.601},
		Notes:      []string{hostile},
	}
}

// TestWriteSampleReport writes the sample report to $INNOWARM_REPORT_SAMPLE_DIR so a
// person can open it (or screenshot it headless) and judge the look; it is skipped
// otherwise.
func TestWriteSampleReport(t *testing.T) {
	dir := os.Getenv("INNOWARM_REPORT_SAMPLE_DIR")
	if dir == "" {
		t.Skip("set INNOWARM_REPORT_SAMPLE_DIR to write a sample report there")
	}
	if err := WriteDir(dir, samplePage(), sampleDataValue()); err != nil {
		t.Fatal(err)
	}
	t.Logf("sample report in %s", dir)
}
