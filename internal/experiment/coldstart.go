package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/warm"
)

// Coldstart scenarios, in the order they run. Each but the first starts with a cold restart
// of its own.
const (
	ScenarioCold     = "cold"     // cold restart, first pass (cold), second pass (hot)
	ScenarioWarm     = "warm"     // cold restart, innowarm warm, two passes
	ScenarioOldTool  = "old-tool" // cold restart, mysql-warmup style scans, two passes
	ScenarioDump25   = "dump25"   // cold restart, InnoDB's load of a dump at pct 25, one pass
	ScenarioDump100  = "dump100"  // the same at pct 100
	ScenarioManifest = "manifest" // cold restart, innowarm warm --from a snapshot, one pass
)

// ColdstartScenarios lists every scenario id.
var ColdstartScenarios = []string{ScenarioCold, ScenarioWarm, ScenarioOldTool, ScenarioDump25, ScenarioDump100, ScenarioManifest}

// ColdstartOptions configure the coldstart experiment.
type ColdstartOptions struct {
	Schema     string
	Rows       int64
	Queries    int64
	Snapshot   bool          // also warm from a manifest captured after the hot pass
	WarmMethod string        // innowarm warm's --method: auto, native or scan
	Interval   time.Duration // resolution of the warm-up curve
	Seed       uint64
	Dir        string   // where the query file and the manifest are written
	Scenarios  []string // run only these (the cold one always runs); nil: all
	Repeat     int      // runs of every scenario (each after its own cold restart); medians are reported
	KeepData   bool     // leave the schema in place
	Progress   progress.Config
	Log        *logx.Logger
}

// Scenario is one way of starting after a cold restart, and its passes. With repeats,
// Warmup and each pass are the run with the median time, and Repeats holds every run.
type Scenario struct {
	ID      string         `json:"id"`
	Label   string         `json:"label"`
	Restart *Restart       `json:"restart,omitempty"`
	Warmup  *Warmup        `json:"warmup,omitempty"`
	Passes  []*Pass        `json:"passes"`
	Skipped string         `json:"skipped,omitempty"`
	Repeats []*ScenarioRun `json:"repeats,omitempty"`

	runs []*ScenarioRun
}

// ScenarioRun is one run of a scenario: its restart, warm-up and passes.
type ScenarioRun struct {
	Restart *Restart `json:"restart"`
	Warmup  *Warmup  `json:"warmup,omitempty"`
	Passes  []*Pass  `json:"passes"`
}

// aggregate sets the scenario's figures from its runs: the first restart, the warm-up and
// each pass with the median time (the lower one of an even count).
func (s *Scenario) aggregate() {
	if len(s.runs) == 0 {
		return
	}
	median := func(n int, secs func(int) float64) int {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(secs(a), secs(b)) })
		return idx[(n-1)/2]
	}
	s.Restart = s.runs[0].Restart
	if s.runs[0].Warmup != nil {
		s.Warmup = s.runs[median(len(s.runs), func(i int) float64 { return s.runs[i].Warmup.Seconds })].Warmup
	}
	s.Passes = nil
	for p := range s.runs[0].Passes {
		s.Passes = append(s.Passes, s.runs[median(len(s.runs), func(i int) float64 { return s.runs[i].Passes[p].Seconds })].Passes[p])
	}
	if len(s.runs) > 1 {
		s.Repeats = s.runs
	}
}

// Reference is a figure of the 2017 article.
type Reference struct {
	Scenario string  `json:"scenario"`
	Pass     int     `json:"pass"`
	Seconds  float64 `json:"seconds"`
}

// Original2017 are the 2017 article's figures (MySQL 5.7, 10M rows, 256 MiB pool, SSD, one
// connection, 20,000 lookups): cold first pass, the hot second pass, and the first and
// second pass after mysql-warmup.
var Original2017 = []Reference{
	{ScenarioCold, 1, 7.562}, {ScenarioCold, 2, 1.740}, {ScenarioOldTool, 1, 2.132}, {ScenarioOldTool, 2, 1.886},
}

// Original2017Text describes the article's set-up and figures in one line.
const Original2017Text = "MySQL 5.7, 10M rows, 256 MiB pool, SSD: cold 7.562 s, after mysql-warmup 2.132 s, hot 1.740 s, second pass after warm-up 1.886 s"

func reference(id string, pass int) float64 {
	for _, r := range Original2017 {
		if r.Scenario == id && r.Pass == pass {
			return r.Seconds
		}
	}
	return 0
}

// ColdstartParams are the options as the report shows them.
type ColdstartParams struct {
	Rows       int64  `json:"rows"`
	Queries    int64  `json:"queries"`
	Schema     string `json:"schema"`
	WarmMethod string `json:"warm_method"`
	Snapshot   bool   `json:"snapshot"`
	Interval   string `json:"interval"`
	Repeat     int    `json:"repeat"`
}

// ColdstartResult is everything the coldstart experiment measured.
type ColdstartResult struct {
	Header
	Params    ColdstartParams  `json:"parameters"`
	Data      *TableInfo       `json:"table"`
	Fits      bool             `json:"data_fits_in_pool"`
	QueryFile string           `json:"query_file"`
	Lookups   int64            `json:"lookups"`
	Dumps     []*innodbDump    `json:"innodb_dumps,omitempty"`
	Manifest  *snapshot.Result `json:"manifest,omitempty"`
	Scenarios []*Scenario      `json:"scenarios"`
	Original  []Reference      `json:"original_2017"`
}

// Hot is the hot pass: the cold scenario's second pass.
func (r *ColdstartResult) Hot() *Pass { return r.Pass(ScenarioCold, 2) }

// Pass finds a scenario's pass (1-based), or nil.
func (r *ColdstartResult) Pass(id string, n int) *Pass {
	for _, s := range r.Scenarios {
		if s.ID == id && n >= 1 && n <= len(s.Passes) {
			return s.Passes[n-1]
		}
	}
	return nil
}

// Scenario finds a scenario by id, or nil.
func (r *ColdstartResult) Scenario(id string) *Scenario {
	for _, s := range r.Scenarios {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// ValidateColdstart checks the options that need no server. A zero Interval or Repeat is
// refused: Coldstart fills their defaults before it validates, so a 0 here is the user's
// (a user test: --repeat 0 ran once, silently).
func ValidateColdstart(o ColdstartOptions) error {
	switch {
	case o.Rows < 1:
		return exitcode.BadValue("Rows", "must be at least 1, got %d", o.Rows)
	case o.Rows > 2_000_000_000:
		return exitcode.BadValue("Rows", "%d is more than an INT id holds", o.Rows)
	case o.Queries < 1:
		return exitcode.BadValue("Queries", "must be at least 1, got %d", o.Queries)
	case o.Interval < 50*time.Millisecond:
		return exitcode.BadValue("Interval", "%s: use 50ms or more", o.Interval)
	case o.Repeat < 1 || o.Repeat > 100:
		return exitcode.BadValue("Repeat", "%d: use 1 to 100", o.Repeat)
	}
	switch o.WarmMethod {
	case "", warm.MethodAuto, warm.MethodNative, warm.MethodScan:
	default:
		return exitcode.BadValue("WarmMethod", "%q: use auto, native or scan", o.WarmMethod)
	}
	for _, s := range o.Scenarios {
		if !slices.Contains(ColdstartScenarios, s) {
			return exitcode.UsageError(fmt.Errorf("scenario %q: use %s", s, strings.Join(ColdstartScenarios, ", ")))
		}
	}
	return nil
}

// coldRun is one run of the coldstart experiment.
type coldRun struct {
	t      *Target
	o      ColdstartOptions
	log    *logx.Logger
	conn   *connection.Conn
	res    *ColdstartResult
	native warm.NativeAccess
	dumps  map[int]*innodbDump
	// answered is when the server last answered after a restart.
	answered time.Time
	// roomKnown: Fits was checked against the pool less the server's own pages after a
	// restart.
	roomKnown bool
}

// Coldstart runs the 2017 mysql-warmup benchmark: 20,000 lookups of distinct keys after
// cold restarts, cold and hot, after innowarm warm, after the old tool's scans, after
// InnoDB's own dump/load at 25% and 100%, and (Snapshot) after a warm from a manifest.
func Coldstart(ctx context.Context, t *Target, o ColdstartOptions) (res *ColdstartResult, err error) {
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if err := ValidateColdstart(o); err != nil {
		return nil, err
	}
	if !t.CanRestart() {
		return nil, exitcode.BadValue("RestartCmd", "is needed: coldstart restarts the server cold (e.g. 'systemctl restart mariadb'); or run it on a sandbox by leaving out the connection options")
	}
	if o.Schema == "" {
		o.Schema = "innowarm_coldstart"
	}
	if o.WarmMethod == "" {
		o.WarmMethod = warm.MethodAuto
	}
	if o.Dir == "" {
		return nil, exitcode.UsageError(errors.New("coldstart needs a directory for its query file"))
	}
	conn, h, log, err := begin(ctx, t, "coldstart", o.Log)
	if err != nil {
		return nil, err
	}
	r := &coldRun{t: t, o: o, log: log, conn: conn, dumps: map[int]*innodbDump{}}
	defer func() { r.conn.Close() }()
	r.res = &ColdstartResult{Header: h, Original: Original2017,
		Params: ColdstartParams{Rows: o.Rows, Queries: o.Queries, Schema: o.Schema, WarmMethod: o.WarmMethod, Snapshot: o.Snapshot, Interval: o.Interval.String(), Repeat: o.Repeat}}
	t0 := time.Now()
	defer r.res.finish(t0)

	if err := r.checkServer(ctx); err != nil {
		return nil, err
	}
	if err := claimSchema(ctx, r.conn, o.Schema, log); err != nil {
		return nil, err
	}
	defer dropExperimentSchema(ctx, t, o.Schema, o.KeepData, log)
	if r.native.OK {
		restore, err := preserveDumpFile(r.conn, log)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	if err := r.build(ctx); err != nil {
		return nil, err
	}
	// Repeats go round all scenarios in turn, so that a busy spell of the machine does not
	// fall on the runs of one scenario only.
	for rep := 1; rep <= o.Repeat; rep++ {
		for _, id := range ColdstartScenarios {
			if err := r.scenario(ctx, id, rep); err != nil {
				return r.res, err
			}
		}
	}
	return r.res, nil
}

// checkServer finds out whether dumps can be taken and restarts will be cold.
func (r *coldRun) checkServer(ctx context.Context) error {
	r.native = warm.CheckNative(ctx, r.conn)
	if r.t.Sandbox != nil {
		return nil
	}
	var loadAtStartup bool
	if err := r.conn.DB.QueryRowContext(ctx, "SELECT @@innodb_buffer_pool_load_at_startup").Scan(&loadAtStartup); err != nil {
		return fmt.Errorf("read innodb_buffer_pool_load_at_startup: %w", err)
	}
	if loadAtStartup && !r.native.OK {
		return exitcode.UsageError(fmt.Errorf("the server loads its buffer pool at startup (innodb_buffer_pool_load_at_startup=ON) and innowarm cannot set its dump file aside (%s), so a restart would not be cold: run innowarm on the database host, or turn the setting off", r.native.Reason))
	}
	if loadAtStartup {
		r.res.Notes = append(r.res.Notes, "the server loads its buffer pool at startup: innowarm sets its dump file aside during the experiment and turns innodb_buffer_pool_dump_at_shutdown off before each restart, so restarts are cold; the file is put back at the end")
	}
	return nil
}

// build creates test_data and the query file.
func (r *coldRun) build(ctx context.Context) error {
	o := r.o
	info, err := buildTestData(ctx, r.conn, o.Schema, o.Rows, r.progress(), r.log)
	if err != nil {
		return err
	}
	r.res.Data = info
	r.res.Fits = r.res.PoolPages > 0 && float64(info.Pages) <= 0.9*float64(r.res.PoolPages)
	r.res.QueryFile = filepath.Join(o.Dir, fmt.Sprintf("benchmark_query_%d_rows.sql", o.Queries))
	n, err := writeLookups(ctx, r.conn, o.Schema, o.Rows, o.Queries, o.Seed, r.res.QueryFile)
	if err != nil {
		return err
	}
	r.res.Lookups = n
	if n < o.Queries {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("the table has %d rows: the query file has %d lookups, not %d", o.Rows, n, o.Queries))
	}
	r.log.Infof("test_data: %s rows, %s pages (%s); buffer pool %s pages: %s; %d lookups in %s",
		commas(info.Rows), commas(info.Pages), fmtBytes(info.Bytes), commas(r.res.PoolPages), fitsText(r.res.Fits), n, r.res.QueryFile)
	return nil
}

func fitsText(fits bool) string {
	if fits {
		return "the data fits"
	}
	return "the data does not fit"
}

func (r *coldRun) progress() progress.Config {
	p := r.o.Progress
	p.Title, p.Unit, p.Total = "", "", 0
	return p
}

func (r *coldRun) wanted(id string) bool {
	return id == ScenarioCold || r.o.Scenarios == nil || slices.Contains(r.o.Scenarios, id)
}

var scenarioLabels = map[string]string{
	ScenarioCold:     "cold restart",
	ScenarioWarm:     "innowarm warm",
	ScenarioOldTool:  "old-tool scans",
	ScenarioDump25:   "InnoDB load 25%",
	ScenarioDump100:  "InnoDB load 100%",
	ScenarioManifest: "warm from manifest",
}

// scenario runs one scenario: a cold restart, its warm-up, its passes.
func (r *coldRun) scenario(ctx context.Context, id string, rep int) error {
	if !r.wanted(id) || id == ScenarioManifest && !r.o.Snapshot {
		return nil
	}
	s := r.res.Scenario(id)
	if s == nil {
		s = &Scenario{ID: id, Label: scenarioLabels[id]}
		r.res.Scenarios = append(r.res.Scenarios, s)
	}
	if s.Skipped != "" {
		return nil
	}
	passes := 1
	var warmup func() (*Warmup, error)
	prog := r.progress()
	switch id {
	case ScenarioCold:
		passes = 2
	case ScenarioWarm:
		passes = 2
		warmup = func() (*Warmup, error) {
			return innowarmWarm(ctx, r.conn, r.o.Schema, r.o.WarmMethod, pacing.Config{}, prog, r.log)
		}
	case ScenarioOldTool:
		passes = 2
		warmup = func() (*Warmup, error) { return oldToolScans(ctx, r.conn, r.o.Schema, r.log) }
	case ScenarioDump25, ScenarioDump100:
		pct := 25
		if id == ScenarioDump100 {
			pct = 100
		}
		d := r.dumps[pct]
		if d == nil {
			s.Skipped = r.dumpSkipReason()
			r.log.Infof("skipped %s: %s", s.Label, s.Skipped)
			return nil
		}
		warmup = func() (*Warmup, error) { return innodbLoad(ctx, r.conn, d, prog, r.log) }
	case ScenarioManifest:
		if r.res.Manifest == nil {
			s.Skipped = "no manifest was captured"
			return nil
		}
		path := r.res.Manifest.Path
		warmup = func() (*Warmup, error) {
			return manifestWarm(ctx, r.conn, path, manifestWarmOptions{Method: r.o.WarmMethod}, prog, r.log)
		}
	}
	if r.o.Repeat > 1 {
		r.log.Infof("== scenario: %s (run %d of %d)", s.Label, rep, r.o.Repeat)
	} else {
		r.log.Infof("== scenario: %s", s.Label)
	}
	run := &ScenarioRun{}
	var err error
	if run.Restart, err = r.restart(ctx); err != nil {
		return err
	}
	if warmup != nil {
		w, err := warmup()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: %w", s.Label, err)
		}
		run.Warmup = w
		r.log.Infof("%s: %s in %.2f s, %s pages read (%.0f MB/s), %s pages added to the pool", s.Label, w.Method, w.Seconds, commas(w.PagesRead), w.MBps, commas(w.PagesAdded))
	}
	names := []string{"1st", "2nd"}
	if id == ScenarioCold {
		names = []string{"1st (cold)", "2nd (hot)"}
	}
	for i := 0; i < passes; i++ {
		start := time.Since(r.answered).Seconds()
		p, err := runPass(ctx, r.conn, passSpec{name: s.Label + ", " + names[i] + " pass", schema: r.o.Schema, query: r.res.QueryFile,
			delimiter: ";", interval: r.o.Interval, quiet: r.o.Progress.Quiet}, r.log)
		if err != nil {
			return err
		}
		p.Name, p.Start = names[i], start
		run.Passes = append(run.Passes, p)
	}
	s.runs = append(s.runs, run)
	s.aggregate()
	if id == ScenarioCold && rep == 1 {
		if err := r.afterHotPass(ctx); err != nil {
			return err
		}
	}
	r.ratios()
	return nil
}

func (r *coldRun) dumpSkipReason() string {
	if !r.native.OK {
		return "innowarm cannot reach the server's dump file: " + r.native.Reason
	}
	return "no dump was taken"
}

// afterHotPass keeps what the baselines need from the hot pool: InnoDB's dumps at 25% and
// 100%, and a manifest.
func (r *coldRun) afterHotPass(ctx context.Context) error {
	if r.native.OK && (r.wanted(ScenarioDump25) || r.wanted(ScenarioDump100)) {
		for _, pct := range []int{25, 100} {
			if !r.wanted(map[int]string{25: ScenarioDump25, 100: ScenarioDump100}[pct]) {
				continue
			}
			d, err := dumpNow(ctx, r.conn, pct, r.log)
			if err != nil {
				return err
			}
			r.dumps[pct] = d
			r.res.Dumps = append(r.res.Dumps, d)
		}
	}
	if r.o.Snapshot && r.wanted(ScenarioManifest) {
		m, err := captureManifest(ctx, r.conn, r.o.Schema, filepath.Join(r.o.Dir, "hot.manifest"), r.log)
		if err != nil {
			return err
		}
		r.res.Manifest = m
	}
	return nil
}

// restart restarts the server cold and reconnects.
func (r *coldRun) restart(ctx context.Context) (*Restart, error) {
	if r.t.Sandbox == nil {
		// An existing server must neither write its dump at shutdown nor find one at
		// startup; the variable resets to the server's setting with every restart.
		if _, err := r.conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_dump_at_shutdown = OFF"); err != nil {
			r.log.Warnf("could not turn innodb_buffer_pool_dump_at_shutdown off before the restart: %v", err)
		}
	}
	r.conn.Close()
	rs, err := r.t.ColdRestart(ctx)
	if err != nil {
		return nil, err
	}
	r.answered = time.Now()
	if r.conn, err = r.t.Connect(ctx); err != nil {
		return nil, fmt.Errorf("reconnect after the restart: %w", err)
	}
	if rs.PoolPages, err = statusInt(ctx, r.conn, "Innodb_buffer_pool_pages_data"); err != nil {
		return nil, err
	}
	if d := r.res.Data; d != nil && d.Space != 0 {
		if rs.TablePages, err = residentPages(ctx, r.conn, d.Space); err != nil {
			return nil, err
		}
		if rs.TablePages > d.Pages/10 {
			rs.Note = fmt.Sprintf("%d pages of test_data were in the pool right after the restart: it was not cold", rs.TablePages)
			r.log.Warnf("%s", rs.Note)
		}
	}
	r.log.Infof("cold restart in %.1f s: %s; %d pages in the pool, %d of them test_data's", rs.Seconds, rs.Cold, rs.PoolPages, rs.TablePages)
	// What the server reads for itself at startup takes room too: MySQL's data dictionary
	// and undo pages fill most of a 16 MiB pool. The data fits in what is left.
	if d := r.res.Data; d != nil && !r.roomKnown && r.res.PoolPages > 0 {
		r.roomKnown = true
		room := r.res.PoolPages - (rs.PoolPages - rs.TablePages)
		if fits := float64(d.Pages) <= 0.9*float64(room); fits != r.res.Fits {
			r.res.Fits = fits
			r.log.Infof("the server holds %s pages of its own after a restart, leaving %s for test_data's %s: %s", commas(rs.PoolPages-rs.TablePages), commas(max(room, 0)), commas(d.Pages), fitsText(fits))
		}
	}
	return &rs, nil
}

// ratios sets every pass's time relative to the (median) hot pass.
func (r *coldRun) ratios() {
	hot := r.res.Hot()
	if hot == nil || hot.Seconds <= 0 {
		return
	}
	for _, s := range r.res.Scenarios {
		for _, run := range s.runs {
			for _, p := range run.Passes {
				p.RatioToHot = p.Seconds / hot.Seconds
			}
		}
	}
}
