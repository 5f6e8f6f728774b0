// Package bench is innowarm's load generator: mysqlslap's command line and generated SQL,
// sysbench-style tables, workloads and key distributions, and per-query latency in
// HdrHistograms. Connection set-up is timed apart from the queries.
package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// Workloads of --workload, run against `bench prepare` tables.
const (
	WorkloadPointSelect = "point-select"
	WorkloadReadOnly    = "read-only"
	WorkloadHotRows     = "hot-rows"
	// WorkloadReadWrite is sysbench's oltp_read_write transaction: the read-only one's
	// reads, then an indexed and a non-indexed UPDATE, a DELETE and an INSERT of the same
	// row. It writes, so it runs only in a schema innowarm bench prepared (or with
	// --allow-writes-in-existing-schema).
	WorkloadReadWrite = "read-write"
)

// Workloads lists the valid --workload values.
var Workloads = []string{WorkloadPointSelect, WorkloadReadOnly, WorkloadReadWrite, WorkloadHotRows}

// I/O modes of the clients (--io, hidden). auto: a thread per client, waiting in raw
// system calls and speaking the protocol directly, as blocking does (through the driver
// over TLS; on Go's network poller beyond 512 clients). loop: event loops, one per CPU,
// each running many clients (the least CPU per query; but a single thread serving many
// clients waits its turn for a CPU as one, and on a busy machine that costs throughput).
// driver: a thread per client through go-sql-driver. netpoll: go-sql-driver on Go's
// network poller.
const (
	IOAuto     = "auto"
	IOLoop     = "loop"
	IOBlocking = "blocking"
	IODriver   = "driver"
	IONetpoll  = "netpoll"
)

// Options is everything `innowarm bench` was asked for, as given on the command line.
type Options struct {
	// What runs.
	Query, Create, PreQuery, PostQuery string // SQL text or a file (mysqlslap style)
	Delimiter                          string
	AutoGenerate                       bool
	Auto                               AutoOptions
	IntColsSpec, CharColsSpec          string // --number-int-cols / --number-char-cols: "N" or "N:1"
	Workload                           string
	Dist                               string
	Tables                             int   // sbtest tables to use; 0: all found
	HotRows                            int64 // hot-rows workload: size of the hot set; 0: 1% of the rows
	RangeSize                          int64 // read-only workload: rows per range query
	// RandSpecIter, RandSpecPct and RandSpecRes tune --dist special (sysbench 1.0's
	// --rand-spec-iter, --rand-spec-pct and --rand-spec-res); nil: sysbench's default (12,
	// 1, 75), so a caller that builds Options itself gets sysbench's special.
	RandSpecIter, RandSpecPct, RandSpecRes *int

	// How much.
	ConcurrencySpec string
	Iterations      int
	NumberOfQueries uint64
	Time            time.Duration
	Events          uint64
	// Rate (--rate) makes a --workload run open loop: this many events per second, all
	// clients together, each started at its scheduled time whether or not earlier ones
	// have finished; one started late because its client was still busy counts its
	// latency from that time (sysbench's --rate). 0: each client runs its next event the
	// moment the last one ends (closed loop).
	Rate   float64
	Commit int
	Detach int

	// Where.
	Schema      string
	EngineSpec  string
	NoDrop      bool
	AllowWrites bool

	// Output.
	CSV            string // "": none; "-": stdout; else a file appended to
	Silent         bool
	OnlyPrint      bool
	JSON           bool
	Histogram      bool
	ReportInterval time.Duration
	IgnoreErrors   bool

	IOMode string

	// KeepIntervalHistograms keeps each --report-interval's latency histogram in
	// Interval.Latency, for a caller in the same process (experiment recovery counts the
	// queries slower than a bound it learns after the run).
	KeepIntervalHistograms bool
}

// Defaults returns mysqlslap's defaults.
func Defaults() Options {
	return Options{
		Delimiter:       DefaultDelimiter,
		Auto:            AutoOptions{LoadType: LoadMixed, UniqueQueryNumber: 10, UniqueWriteNumber: 10, WriteNumber: 100, IntCols: 1, CharCols: 1},
		ConcurrencySpec: "1",
		Iterations:      1,
		RangeSize:       100,
		IOMode:          IOAuto,
	}
}

// Mode is what kind of run the options describe.
type Mode int

const (
	ModeQuery    Mode = iota // --query (mysqlslap)
	ModeAuto                 // --auto-generate-sql (mysqlslap)
	ModeWorkload             // --workload against bench prepare tables
)

func (m Mode) String() string {
	return [...]string{"query", "auto-generate-sql", "workload"}[m]
}

// Plan is validated options with every file read and every statement built.
type Plan struct {
	Options
	Mode        Mode
	Concurrency []int
	Engines     []Engine // one empty Engine when --engine was not given
	Key         DistSpec

	LoadStmts  []Statement // load phase (--create or the auto-generated table), in order
	QueryStmts []Statement
	PreStmts   []Statement
	PostStmts  []Statement

	// Writes says whether the run changes data in the schema (the safety rules).
	Writes bool
	// Notes are things the user should know about how the options were read.
	Notes []string
}

func usagef(format string, args ...any) error {
	return exitcode.UsageError(fmt.Errorf(format, args...))
}

// ParseConcurrency reads mysqlslap's --concurrency list "1,10,50".
func ParseConcurrency(spec string) ([]int, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, exitcode.BadValue("Concurrency", "is empty: give a number of clients or a list like 1,10,50")
	}
	var out []int
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		n, err := strconv.Atoi(item)
		if err != nil {
			return nil, exitcode.BadValue("Concurrency", "%q: %q is not a number of clients", spec, item)
		}
		if n < 1 {
			return nil, exitcode.BadValue("Concurrency", "%q: the number of clients must be at least 1, got %d", spec, n)
		}
		if n > 10000 {
			return nil, exitcode.BadValue("Concurrency", "%q: %d clients is more than the 10000 innowarm allows", spec, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseCols reads --number-int-cols / --number-char-cols: "N", or "N:1" to index every
// column (mysqlslap's syntax: the part after ':' is the index flag).
func parseCols(flag, spec string) (n int, index bool, err error) {
	item := spec
	if i := strings.IndexByte(item, ','); i >= 0 { // mysqlslap reads only the first item
		item = item[:i]
	}
	num, opt, hasOpt := strings.Cut(item, ":")
	n, err = strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 0 {
		return 0, false, usagef("--%s %q: want a number of columns, optionally :1 to index them", flag, spec)
	}
	if hasOpt {
		v, err := strconv.Atoi(strings.TrimSpace(opt))
		if err != nil {
			return 0, false, usagef("--%s %q: the part after ':' must be 0 or 1", flag, spec)
		}
		index = v != 0
	}
	return n, index, nil
}

// ParseEngines reads --engine "innodb,memory:max_rows=100".
func ParseEngines(spec string) ([]Engine, error) {
	if spec == "" {
		return []Engine{{}}, nil
	}
	var out []Engine
	for _, item := range strings.Split(spec, ",") {
		name, opt, _ := strings.Cut(strings.TrimSpace(item), ":")
		if name == "" {
			return nil, exitcode.BadValue("Engine", "%q: an empty engine name", spec)
		}
		if strings.ContainsAny(name, " `;'\"") {
			return nil, exitcode.BadValue("Engine", "%q: %q is not an engine name", spec, name)
		}
		out = append(out, Engine{Name: name, Option: opt})
	}
	return out, nil
}

// NewPlan validates o and builds everything a run needs. Errors are usage errors (exit 2).
func NewPlan(o Options) (*Plan, error) {
	p := &Plan{Options: o}
	given := 0
	for _, b := range []bool{o.Query != "", o.AutoGenerate, o.Workload != ""} {
		if b {
			given++
		}
	}
	switch {
	case o.AutoGenerate && (o.Query != "" || o.Create != ""):
		return nil, usagef("--auto-generate-sql cannot be combined with --query or --create: it generates both (mysqlslap refuses this too)")
	case given == 0:
		return nil, usagef("nothing to run: give --query (SQL or a file), --auto-generate-sql, or --workload after 'innowarm bench prepare'")
	case given > 1:
		return nil, usagef("--workload cannot be combined with --query or --auto-generate-sql")
	case o.Workload != "":
		p.Mode = ModeWorkload
	case o.AutoGenerate:
		p.Mode = ModeAuto
	default:
		p.Mode = ModeQuery
	}

	var err error
	if p.Concurrency, err = ParseConcurrency(o.ConcurrencySpec); err != nil {
		return nil, err
	}
	if o.Iterations < 1 {
		return nil, exitcode.BadValue("Iterations", "must be at least 1, got %d", o.Iterations)
	}
	if o.Commit < 0 || o.Detach < 0 {
		return nil, usagef("--commit and --detach must not be negative")
	}
	if o.Time < 0 {
		return nil, exitcode.BadValue("Time", "must not be negative")
	}
	if o.ReportInterval < 0 || (o.ReportInterval > 0 && o.ReportInterval < 10*time.Millisecond) {
		return nil, exitcode.BadValue("ReportInterval", "%s is too short: use 10ms or more", o.ReportInterval)
	}
	switch o.IOMode {
	case "", IOAuto, IOLoop, IOBlocking, IODriver, IONetpoll:
	default:
		return nil, exitcode.BadValue("Io", "%q: want auto, loop, blocking, driver or netpoll", o.IOMode)
	}
	if p.Engines, err = ParseEngines(o.EngineSpec); err != nil {
		return nil, err
	}
	if o.Delimiter == "" {
		p.Delimiter = DefaultDelimiter
	}
	if o.Schema == "" {
		return nil, usagef("the schema name is empty: give --create-schema")
	}
	if o.Dist != "" && p.Mode != ModeWorkload {
		return nil, usagef("--dist applies to --workload runs")
	}
	if o.randSpecGiven() && p.Mode != ModeWorkload {
		return nil, usagef("--rand-spec-pct, --rand-spec-iter and --rand-spec-res apply to --workload runs with --dist special (--rand-spec-iter also to --dist gaussian)")
	}
	if o.Rate < 0 {
		return nil, exitcode.BadValue("Rate", "must not be negative, got %g", o.Rate)
	}
	if o.Rate > 0 && p.Mode != ModeWorkload {
		return nil, usagef("--rate applies to --workload runs")
	}
	if o.Rate > 0 && o.IOMode == IOLoop {
		return nil, usagef("--io loop runs closed loop only: leave --io out with --rate")
	}
	if o.Events > 0 && p.Mode != ModeWorkload {
		return nil, usagef("--events applies to --workload runs; mysqlslap-style runs count queries with --number-of-queries")
	}

	switch p.Mode {
	case ModeWorkload:
		err = p.buildWorkload()
	case ModeAuto:
		err = p.buildAuto()
	default:
		err = p.buildQuery()
	}
	if err != nil {
		return nil, err
	}
	if p.PreStmts, err = p.loadList("pre-query", o.PreQuery); err != nil {
		return nil, err
	}
	if p.PostStmts, err = p.loadList("post-query", o.PostQuery); err != nil {
		return nil, err
	}
	for _, s := range append(append([]Statement{}, p.PreStmts...), p.PostStmts...) {
		if IsWrite(s.SQL) {
			p.Writes = true
		}
	}
	return p, nil
}

func (p *Plan) loadList(flag, value string) ([]Statement, error) {
	if value == "" {
		return nil, nil
	}
	text, _, err := LoadSQL(flag, value)
	if err != nil {
		return nil, err
	}
	stmts, skipped := SplitStatements(text, p.Delimiter)
	if len(stmts) == 0 {
		return nil, usagef("--%s has no statements (delimiter %q)", flag, p.Delimiter)
	}
	if skipped > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("--%s: skipped %d empty statement(s)", flag, skipped))
	}
	out := make([]Statement, len(stmts))
	for i, s := range stmts {
		out[i] = Statement{SQL: s}
	}
	return out, nil
}

func (p *Plan) buildQuery() error {
	text, file, err := LoadSQL("query", p.Query)
	if err != nil {
		return err
	}
	stmts, skipped := SplitStatements(text, p.Delimiter)
	what := "--query"
	if file != "" {
		what = "--query file " + file
	}
	if len(stmts) == 0 {
		return usagef("%s has no statements (delimiter %q)", what, p.Delimiter)
	}
	if skipped > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s: skipped %d empty statement(s)", what, skipped))
	}
	for _, s := range stmts {
		p.QueryStmts = append(p.QueryStmts, Statement{SQL: s})
		if IsWrite(s) {
			p.Writes = true
		}
	}
	if p.Options.Create != "" {
		create, err := p.loadList("create", p.Options.Create)
		if err != nil {
			return err
		}
		if p.EngineSpec != "" {
			create[0].Kind = kindCreateTable // mysqlslap adds the engine to the first one
		}
		p.LoadStmts = create
		p.Writes = true
	}
	return nil
}

func (p *Plan) buildAuto() error {
	a := &p.Auto
	a.LoadType = strings.ToLower(strings.TrimSpace(a.LoadType))
	if a.LoadType == "" {
		a.LoadType = LoadMixed
	}
	valid := false
	for _, t := range LoadTypes {
		valid = valid || t == a.LoadType
	}
	if !valid {
		return exitcode.BadValue("AutoGenerateSqlLoadType", "%q: want one of %s", p.Options.Auto.LoadType, strings.Join(LoadTypes, ", "))
	}
	if a.AddAutoincrement && a.GUIDPrimary {
		return usagef("use either --auto-generate-sql-guid-primary or --auto-generate-sql-add-autoincrement, not both")
	}
	if a.LoadType == LoadKey && !a.keyed() {
		return usagef("--auto-generate-sql-load-type=key needs a primary key: add --auto-generate-sql-add-autoincrement or --auto-generate-sql-guid-primary")
	}
	if p.NumberOfQueries > 0 && a.ExecuteNumber > 0 {
		return usagef("use either --auto-generate-sql-execute-number or --number-of-queries, not both")
	}
	if a.WriteNumber < 1 {
		return exitcode.BadValue("AutoGenerateSqlWriteNumber", "must be at least 1 (it counts the CREATE TABLE)")
	}
	if a.SecondaryIndexes < 0 {
		return exitcode.BadValue("AutoGenerateSqlSecondaryIndexes", "must not be negative")
	}
	var err error
	if p.IntColsSpec != "" {
		if a.IntCols, a.IntIndex, err = parseCols("number-int-cols", p.IntColsSpec); err != nil {
			return err
		}
	}
	if p.CharColsSpec != "" {
		if a.CharCols, a.CharIndex, err = parseCols("number-char-cols", p.CharColsSpec); err != nil {
			return err
		}
	}
	if a.IntCols == 0 && a.CharCols == 0 {
		return usagef("--number-int-cols and --number-char-cols are both 0: t1 would have no columns to query")
	}
	create, queries := generateAuto(*a)
	p.LoadStmts = loadPhase(create, true, a.WriteNumber)
	p.QueryStmts = queries
	p.Writes = true // the load phase fills t1; see Writes for the load type itself
	return nil
}

func (p *Plan) buildWorkload() error {
	switch p.Workload {
	case WorkloadPointSelect, WorkloadReadOnly, WorkloadHotRows:
	case WorkloadReadWrite:
		p.Writes = true
	default:
		return exitcode.BadValue("Workload", "%q: want one of %s", p.Workload, strings.Join(Workloads, ", "))
	}
	for flag, set := range map[string]bool{
		"create": p.Options.Create != "", "number-of-queries": p.NumberOfQueries > 0, "commit": p.Commit > 0,
		"only-print": p.OnlyPrint, "engine": p.EngineSpec != "", "csv": p.CSV != "",
	} {
		if set {
			return usagef("--%s applies to --query/--auto-generate-sql runs, not to --workload (use --events or --time)", flag)
		}
	}
	d, err := ParseDist(p.Options.Dist)
	if err != nil {
		return err
	}
	if p.Key, err = p.applyRandSpec(d); err != nil {
		return err
	}
	if p.Tables < 0 || p.HotRows < 0 || p.RangeSize < 1 {
		return usagef("--tables and --hot-rows must not be negative, --range-size must be at least 1")
	}
	if p.Time == 0 && p.Events == 0 {
		p.Time = 10 * time.Second // sysbench's default
	}
	if p.Rate > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("open loop: %g events/s, all clients together; an event started late because its client was still busy counts from its scheduled start", p.Rate))
	}
	return nil
}

func (o *Options) randSpecGiven() bool {
	return o.RandSpecIter != nil || o.RandSpecPct != nil || o.RandSpecRes != nil
}

// applyRandSpec sets special's parameters given on the command line (and gaussian's
// iterations). sysbench takes any integer, and some divide by zero or put keys outside the
// range; the iterations are capped too, as each key of the bell costs that many draws in a
// client.
func (p *Plan) applyRandSpec(d DistSpec) (DistSpec, error) {
	if !p.randSpecGiven() {
		return d, nil
	}
	switch {
	case d.Kind == DistGaussian && (p.RandSpecPct != nil || p.RandSpecRes != nil):
		return d, usagef("--rand-spec-pct and --rand-spec-res apply to --dist special, not gaussian (which takes --rand-spec-iter alone, as sysbench's)")
	case d.Kind != DistSpecial && d.Kind != DistGaussian:
		return d, usagef("--rand-spec-pct, --rand-spec-iter and --rand-spec-res apply to --dist special, not %s (--rand-spec-iter also to --dist gaussian)", d)
	}
	if v := p.RandSpecIter; v != nil {
		if *v < 1 || *v > 1000 {
			return d, exitcode.BadValue("RandSpecIter", "%d: want 1 to 1000 draws per bell key", *v)
		}
		d.SpecIter = *v
	}
	if v := p.RandSpecPct; v != nil {
		if *v < 0 || *v > 100 {
			return d, exitcode.BadValue("RandSpecPct", "%d: want a percentage of the range, 0 to 100", *v)
		}
		d.SpecPct = *v
	}
	if v := p.RandSpecRes; v != nil {
		if *v < 0 || *v > 100 {
			return d, exitcode.BadValue("RandSpecRes", "%d: want a percentage of the keys, 0 to 100", *v)
		}
		d.SpecRes = *v
	}
	return d, nil
}

// Transactions says whether the workload's events are transactions (sysbench's read-only
// and read-write), counted and reported as such.
func (p *Plan) Transactions() bool {
	return p.Mode == ModeWorkload && (p.Workload == WorkloadReadOnly || p.Workload == WorkloadReadWrite)
}

// AutoWrites reports whether the auto-generated queries themselves write (the load types
// mixed, write and update), as opposed to the load phase that fills t1.
func (p *Plan) AutoWrites() bool { return p.Mode == ModeAuto && writesData(p.Auto.LoadType) }

// ClientLimit is how many queries each client runs, as mysqlslap computes it:
// --auto-generate-sql-execute-number (mysqlslap honours it for --query runs too), else --number-of-queries divided by the clients (the remainder is not run), else
// one per statement. Zero means one pass through the statement list.
func (p *Plan) ClientLimit(clients int) uint64 {
	switch {
	case p.Auto.ExecuteNumber > 0:
		return p.Auto.ExecuteNumber
	case p.NumberOfQueries > 0:
		return p.NumberOfQueries / uint64(clients)
	case p.Mode == ModeQuery:
		return uint64(len(p.QueryStmts))
	}
	return 0
}

// LoadTypeName is what mysqlslap's CSV prints as the load type (its default "mixed" even
// for --query runs).
func (p *Plan) LoadTypeName() string {
	if p.Mode == ModeWorkload {
		return p.Workload
	}
	return p.Auto.LoadType
}
