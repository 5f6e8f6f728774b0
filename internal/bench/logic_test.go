package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
)

func TestSplitStatementsLikeMysqlslap(t *testing.T) {
	cases := []struct {
		name, script, delim string
		want                []string
		skipped             int
	}{
		{"seed file: one whitespace after each delimiter is skipped",
			"select 1;\nselect 2;\nselect 3;\n", ";", []string{"select 1", "select 2", "select 3"}, 0},
		{"text after the last delimiter is a statement",
			"select 1;select 2", ";", []string{"select 1", "select 2"}, 0},
		{"only one whitespace character is skipped",
			"select 1;\n\nselect 2;", ";", []string{"select 1", "\nselect 2"}, 0},
		{"default delimiter is a newline",
			"SELECT 1\nSELECT 2\n", DefaultDelimiter, []string{"SELECT 1", "SELECT 2"}, 0},
		{"blank statements are dropped and counted",
			"select 1;;  ;select 2;\n\n", ";", []string{"select 1", "select 2"}, 3},
		{"a delimiter of several characters is matched whole",
			"select ';' $$ select 2$$", "$$", []string{"select ';' ", "select 2"}, 0},
		{"no delimiter: one statement",
			"SELECT SLEEP(0.01)", ";", []string{"SELECT SLEEP(0.01)"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, skipped := SplitStatements(c.script, c.delim)
			if !reflect.DeepEqual(got, c.want) || skipped != c.skipped {
				t.Errorf("%s: got %q (%d skipped), want %q (%d skipped)", c.name, got, skipped, c.want, c.skipped)
			}
		})
	}
}

func TestIsWrite(t *testing.T) {
	reads := []string{"select 1", "  SELECT * FROM t", "/* hint */ select 1", "-- c\nSELECT 1", "(SELECT 1) UNION (SELECT 2)",
		"SHOW TABLES", "set @a=1", "DO SLEEP(1)", "with x as (select 1) select * from x", "EXPLAIN SELECT 1", "BEGIN", "COMMIT",
		"select 1; select 2", "/*!50000 select 1 */", "select 'a;delete from t'", "select 1 -- ; delete", "(with x as (select 1) select * from x)", ""}
	writes := []string{"INSERT INTO t VALUES (1)", "update t set a=1", "DELETE FROM t", "REPLACE INTO t VALUES (1)",
		"CREATE TABLE t (a int)", "drop table t", "ALTER TABLE t ADD x INT", "TRUNCATE t", "CALL p()", "LOAD DATA INFILE 'x' INTO TABLE t",
		// Writes behind a read-only first word (a user test deleted rows of a schema bench
		// did not create with each of these).
		"select 1; delete from t where id=3", "/*!50000 delete from t where id=3 */", "/*M! delete from t where id=3 */",
		"set @a=(select 1); delete from t where id=3", "with x as (select 3 as id) delete t from t join x using(id)",
		"explain analyze delete from t", "select 'a\\'; delete from t; -- '", "/*!50000 select 1 */; update t set a=1"}
	for _, s := range reads {
		if IsWrite(s) {
			t.Errorf("IsWrite(%q) = true", s)
		}
	}
	for _, s := range writes {
		if !IsWrite(s) {
			t.Errorf("IsWrite(%q) = false", s)
		}
	}
}

func TestLoadSQLFileOrText(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "q.sql")
	if err := os.WriteFile(file, []byte("select 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, from, err := LoadSQL("query", file); err != nil || text != "select 1;\n" || from != file {
		t.Errorf("file: %q %q %v", text, from, err)
	}
	if text, from, err := LoadSQL("query", "SELECT 1"); err != nil || text != "SELECT 1" || from != "" {
		t.Errorf("text: %q %q %v", text, from, err)
	}
	empty := filepath.Join(dir, "empty.sql")
	if err := os.WriteFile(empty, []byte(" \n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{filepath.Join(dir, "missing.sql"), "queries.sql", "./x", empty, dir, ""} {
		_, _, err := LoadSQL("query", v)
		if err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("LoadSQL(%q) = %v, want a usage error", v, err)
		}
	}
}

func TestParseConcurrency(t *testing.T) {
	got, err := ParseConcurrency("1, 10,50")
	if err != nil || !reflect.DeepEqual(got, []int{1, 10, 50}) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,0", "-3", "x", "1,,2", "20000"} {
		if _, err := ParseConcurrency(bad); err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("ParseConcurrency(%q) = %v, want a usage error", bad, err)
		}
	}
}

func plan(t *testing.T, mutate func(*Options)) *Plan {
	t.Helper()
	o := Defaults()
	o.Schema = "s"
	mutate(&o)
	p, err := NewPlan(o)
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	return p
}

func TestNumberOfQueriesSplitsLikeMysqlslap(t *testing.T) {
	q := plan(t, func(o *Options) { o.Query = "a;b;c"; o.Delimiter = ";" })
	if got := q.ClientLimit(8); got != 3 {
		t.Errorf("query file without --number-of-queries: each client runs every statement, got %d", got)
	}
	q = plan(t, func(o *Options) { o.Query = "a"; o.NumberOfQueries = 20000 })
	for clients, want := range map[int]uint64{1: 20000, 8: 2500, 3: 6666, 30000: 0} {
		t.Run(fmt.Sprintf("%d clients", clients), func(t *testing.T) {
			if got := q.ClientLimit(clients); got != want {
				t.Errorf("--number-of-queries 20000, %d clients: %d per client, want %d", clients, got, want)
			}
		})
	}
	a := plan(t, func(o *Options) { o.AutoGenerate = true })
	if got := a.ClientLimit(4); got != 0 {
		t.Errorf("auto without a number: one pass over the list, got %d", got)
	}
	a = plan(t, func(o *Options) { o.AutoGenerate = true; o.Auto.ExecuteNumber = 7 })
	if got := a.ClientLimit(4); got != 7 {
		t.Errorf("--auto-generate-sql-execute-number is per client, got %d", got)
	}
}

func TestAutoLoadPhase(t *testing.T) {
	p := plan(t, func(o *Options) { o.AutoGenerate = true })
	if len(p.LoadStmts) != 100 || !strings.HasPrefix(p.LoadStmts[0].SQL, "CREATE TABLE `t1`") {
		t.Fatalf("load phase: %d statements, first %q", len(p.LoadStmts), p.LoadStmts[0].SQL)
	}
	for _, s := range p.LoadStmts[1:] {
		if !strings.HasPrefix(s.SQL, "INSERT INTO t1 VALUES (") {
			t.Fatalf("load phase statement %q", s.SQL)
		}
	}
	// The query list: unique-query-number + 1 statements, an INSERT then SELECT/INSERT in turn.
	if len(p.QueryStmts) != 11 {
		t.Fatalf("%d queries", len(p.QueryStmts))
	}
	for i, s := range p.QueryStmts {
		wantSelect := i%2 == 1
		if got := strings.HasPrefix(s.SQL, "SELECT intcol1,charcol1 FROM t1"); got != wantSelect {
			t.Errorf("mixed statement %d: %q", i, s.SQL)
		}
	}
}

func TestPlanUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.sql")
	os.WriteFile(empty, nil, 0o644)
	cases := map[string]func(*Options){
		"nothing to run":          func(o *Options) {},
		"auto with query":         func(o *Options) { o.AutoGenerate = true; o.Query = "select 1" },
		"auto with create":        func(o *Options) { o.AutoGenerate = true; o.Create = "create table x (a int)" },
		"unknown load type":       func(o *Options) { o.AutoGenerate = true; o.Auto.LoadType = "reads" },
		"key without a key":       func(o *Options) { o.AutoGenerate = true; o.Auto.LoadType = LoadKey },
		"guid and autoincrement":  func(o *Options) { o.AutoGenerate = true; o.Auto.GUIDPrimary = true; o.Auto.AddAutoincrement = true },
		"execute and number":      func(o *Options) { o.AutoGenerate = true; o.Auto.ExecuteNumber = 3; o.NumberOfQueries = 10 },
		"zero concurrency":        func(o *Options) { o.Query = "select 1"; o.ConcurrencySpec = "0" },
		"zero iterations":         func(o *Options) { o.Query = "select 1"; o.Iterations = 0 },
		"missing file":            func(o *Options) { o.Query = filepath.Join(dir, "nope.sql") },
		"empty file":              func(o *Options) { o.Query = empty },
		"bad int cols":            func(o *Options) { o.AutoGenerate = true; o.IntColsSpec = "x" },
		"no columns":              func(o *Options) { o.AutoGenerate = true; o.IntColsSpec = "0"; o.CharColsSpec = "0" },
		"bad workload":            func(o *Options) { o.Workload = "oltp" },
		"bad dist":                func(o *Options) { o.Workload = WorkloadPointSelect; o.Dist = "zipf:-1" },
		"dist without workload":   func(o *Options) { o.Query = "select 1"; o.Dist = "zipf" },
		"workload with query":     func(o *Options) { o.Workload = WorkloadPointSelect; o.Query = "select 1" },
		"workload with create":    func(o *Options) { o.Workload = WorkloadPointSelect; o.Create = "x" },
		"bad engine":              func(o *Options) { o.Query = "select 1"; o.EngineSpec = "inno db" },
		"tiny report interval":    func(o *Options) { o.Query = "select 1"; o.ReportInterval = time.Microsecond },
		"events without workload": func(o *Options) { o.Query = "select 1"; o.Events = 5 },
	}
	for name, mutate := range cases {
		o := Defaults()
		o.Schema = "s"
		mutate(&o)
		_, err := NewPlan(o)
		if err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: got %v, want a usage error", name, err)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error is not one line: %q", name, err)
		}
	}
}

func TestParseDist(t *testing.T) {
	ok := map[string]DistSpec{
		"":              {Kind: DistUniform},
		"uniform":       {Kind: DistUniform},
		"zipf":          {Kind: DistZipf, S: 0.8},
		"zipf:1.2":      {Kind: DistZipf, S: 1.2},
		"pareto":        {Kind: DistPareto, H: 0.2},
		"pareto:0.1":    {Kind: DistPareto, H: 0.1},
		"hotset:1:90":   {Kind: DistHotset, RowsPct: 1, AccessPct: 90},
		"HOTSET:0.5:99": {Kind: DistHotset, RowsPct: 0.5, AccessPct: 99},
		"special":       {Kind: DistSpecial, SpecIter: 12, SpecPct: 1, SpecRes: 75}, // sysbench 1.0.20's defaults
	}
	for in, want := range ok {
		got, err := ParseDist(in)
		if err != nil || got != want {
			t.Errorf("ParseDist(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"gauss", "zipf:0", "zipf:x", "pareto:1", "pareto:0", "hotset", "hotset:1", "hotset:0:50", "hotset:1:101", "uniform:3", "special:1", "special:1:12:75"} {
		if _, err := ParseDist(bad); err == nil {
			t.Errorf("ParseDist(%q) accepted", bad)
		}
	}
}

// draw counts how often each key comes out of a sampler.
func draw(s Sampler, n int64, draws int) []int {
	r := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, n+1)
	for i := 0; i < draws; i++ {
		k := s.Next(r)
		if k < 1 || k > n {
			panic("key out of range")
		}
		counts[k]++
	}
	return counts
}

func TestDistributions(t *testing.T) {
	const n, draws = 1000, 400000
	// uniform: every key about draws/n times
	u := draw(DistSpec{Kind: DistUniform}.NewSampler(n), n, draws)
	for k := 1; k <= n; k++ {
		if u[k] < 250 || u[k] > 550 {
			t.Fatalf("uniform: key %d drawn %d times", k, u[k])
		}
	}
	// zipf: P(k) ~ 1/k^s, so count(1)/count(2) = 2^s and count(1)/count(10) = 10^s
	for _, s := range []float64{0.8, 1.0, 1.5} {
		z := draw(DistSpec{Kind: DistZipf, S: s}.NewSampler(n), n, draws)
		for _, k := range []int{2, 10} {
			ratio := float64(z[1]) / float64(z[k])
			want := math.Pow(float64(k), s)
			if math.Abs(ratio-want)/want > 0.08 {
				t.Errorf("zipf:%g: count(1)/count(%d) = %.2f, want %.2f", s, k, ratio, want)
			}
		}
	}
	// pareto with h = 0.2: 80% of the accesses go to the first 20% of the keys
	p := draw(DistSpec{Kind: DistPareto, H: 0.2}.NewSampler(n), n, draws)
	first := 0
	for k := 1; k <= n/5; k++ {
		first += p[k]
	}
	if share := float64(first) / draws; math.Abs(share-0.8) > 0.01 {
		t.Errorf("pareto:0.2: the first 20%% of the keys got %.3f of the accesses", share)
	}
	// hotset 1:90: keys 1..10 get 90% of the accesses
	h := draw(DistSpec{Kind: DistHotset, RowsPct: 1, AccessPct: 90}.NewSampler(n), n, draws)
	hot := 0
	for k := 1; k <= 10; k++ {
		hot += h[k]
	}
	if share := float64(hot) / draws; math.Abs(share-0.9) > 0.005 {
		t.Errorf("hotset:1:90: the hot keys got %.3f of the accesses", share)
	}
}

func TestPickHotIsStableAndDistinct(t *testing.T) {
	a, b := pickHot(100000, 500), pickHot(100000, 500)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the hot set differs between runs")
	}
	seen := map[int64]bool{}
	var lo, hi int64 = math.MaxInt64, 0
	for _, id := range a {
		if seen[id] || id < 1 || id > 100000 {
			t.Fatalf("bad hot id %d", id)
		}
		seen[id] = true
		lo, hi = min(lo, id), max(hi, id)
	}
	if hi-lo < 50000 {
		t.Errorf("hot rows are not spread over the table: ids %d..%d", lo, hi)
	}
	if all := pickHot(10, 10); len(all) != 10 {
		t.Errorf("a hot set of the whole table: %v", all)
	}
}

func TestMysqlslapSeconds(t *testing.T) {
	for in, want := range map[float64]string{7.562: "7.562", 0.0004: "0.000", 1.7399: "1.740", 12: "12.000"} {
		t.Run(fmt.Sprint(in), func(t *testing.T) {
			if got := mysqlslapSeconds(in); got != want {
				t.Errorf("mysqlslapSeconds(%g) = %s, want %s", in, got, want)
			}
		})
	}
}

func TestLevelAveragesWholeMilliseconds(t *testing.T) {
	l := newLevel("", 2)
	for i, s := range []float64{1.0009, 1.5, 2.25} {
		l.add(&roundResult{iteration: i + 1, clients: 2, seconds: s, querySec: s, queries: 100, hist: newHist()})
	}
	l.finish(false)
	// mysqlslap: (1000 + 1500 + 2250) / 3 = 1583 ms, integer division
	if l.AvgSeconds != 1.583 || l.MinSeconds != 1.0 || l.MaxSeconds != 2.25 || l.QueriesPerClient != 50 {
		t.Errorf("avg %.3f min %.3f max %.3f per client %d", l.AvgSeconds, l.MinSeconds, l.MaxSeconds, l.QueriesPerClient)
	}
}

// TestPacerSchedule: an open-loop client's events are its share of the rate apart, the
// clients' first events interleave, a late event reports how late it starts, and a
// schedule past the round's deadline ends the client.
func TestPacerSchedule(t *testing.T) {
	start := time.Now()
	p := newPacer(100, 4, 2, start) // 100/s over 4 clients: each every 40 ms; client 2 starts at 20 ms
	if p.interval != 40*time.Millisecond || !p.next.Equal(start.Add(20*time.Millisecond)) {
		t.Fatalf("interval %s, first event at +%s: want 40ms and +20ms", p.interval, p.next.Sub(start))
	}
	st := &roundState{}
	p.next = time.Now().Add(-time.Second) // a second behind its schedule
	lag, ok := p.wait(st, false, time.Time{})
	if !ok || lag < time.Second {
		t.Errorf("a late event: lag %s ok %v, want >= 1s", lag, ok)
	}
	if again, _ := p.wait(st, false, time.Time{}); again != 0 {
		t.Errorf("the event's second statement waits again: lag %s", again)
	}
	before := p.next
	p.eventDone()
	if p.next.Sub(before) != p.interval || p.started {
		t.Errorf("eventDone moved the schedule by %s", p.next.Sub(before))
	}
	p.next = time.Now().Add(time.Hour)
	if _, ok := p.wait(st, true, time.Now().Add(time.Second)); ok {
		t.Errorf("an event scheduled after the deadline runs")
	}
	if closed := newPacer(0, 4, 2, start); closed.interval != 0 {
		t.Errorf("no rate: interval %s", closed.interval)
	} else if lag, ok := closed.wait(st, false, time.Time{}); lag != 0 || !ok {
		t.Errorf("closed loop waits: %s %v", lag, ok)
	}
}

func TestIntervalSlowerThan(t *testing.T) {
	h := newHist()
	for range 90 {
		record(h, time.Millisecond)
	}
	for range 10 {
		record(h, 50*time.Millisecond)
	}
	iv := Interval{Latency: h}
	if n := iv.SlowerThan(10 * time.Millisecond); n != 10 {
		t.Errorf("%d queries slower than 10 ms, want 10", n)
	}
	if n := iv.SlowerThan(100 * time.Millisecond); n != 0 {
		t.Errorf("%d queries slower than 100 ms, want 0", n)
	}
	if n := (Interval{}).SlowerThan(time.Millisecond); n != 0 {
		t.Errorf("no histogram: %d", n)
	}
}
