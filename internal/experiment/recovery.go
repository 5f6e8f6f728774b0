package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/bench"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/warm"
)

// Recovery scenarios, in the order each round runs them. Every one restarts the server cold
// and puts traffic on it the moment it answers.
const (
	RecoveryCold      = "cold"              // nothing but the traffic's own reads
	RecoveryInnoDB25  = "innodb-load-25"    // the server loads its dump at startup, innodb_buffer_pool_dump_pct 25
	RecoveryInnoDB100 = "innodb-load-100"   // the same, dump_pct 100
	RecoverySnapshot  = "innowarm-snapshot" // innowarm warm --from a snapshot, started with the server
	RecoveryIndexes   = "innowarm-indexes"  // innowarm warm of the schema's indexes, started with the server
	RecoveryFailover  = "follow-failover"   // a standby kept by innowarm follow takes the traffic over
)

// RecoveryScenarios lists every scenario id.
var RecoveryScenarios = []string{RecoveryCold, RecoveryInnoDB25, RecoveryInnoDB100, RecoverySnapshot, RecoveryIndexes, RecoveryFailover}

var recoveryLabels = map[string]string{
	RecoveryCold:      "cold",
	RecoveryInnoDB25:  "InnoDB load at startup, dump_pct 25",
	RecoveryInnoDB100: "InnoDB load at startup, dump_pct 100",
	RecoverySnapshot:  "innowarm warm --from snapshot",
	RecoveryIndexes:   "innowarm warm (indexes)",
	RecoveryFailover:  "standby kept by innowarm follow, promoted",
}

// RecoveryOptions configure the recovery experiment.
type RecoveryOptions struct {
	Schema  string
	Rows    int64 // rows of sbtest1: make it several times the pool
	Clients int   // clients of the traffic
	// WriteClients of the Clients run sysbench's read-write transactions instead of point
	// selects (closed loop, whatever Rate says): traffic that also writes, so that the
	// server flushes, purges and (MySQL) holds its loader to innodb_io_capacity while it
	// warms. The curve is the point selects'.
	WriteClients int
	// Rate makes the traffic open loop: this many point selects per second, whatever the
	// server's speed (bench --rate); RateOfHot the same as a share of the hot throughput,
	// measured first by a closed-loop run. Neither: closed loop, the clients at full speed.
	Rate      float64
	RateOfHot float64
	Dist      string // key distribution of the point selects (bench --dist)
	// Duration is how long each scenario's traffic runs after the server answers: long
	// enough for a cold server to get hot.
	Duration time.Duration
	// HotDuration is how long the traffic goes on after each window: those seconds are that
	// run's hot level, measured on the same server a moment later, so that the machine's
	// other work moves the level and the window alike.
	HotDuration time.Duration
	Rounds      int
	Scenarios   []string // run only these (cold always runs); nil: all
	// UnsettledPrimary makes follow-failover follow a primary still warming up: the primary
	// restarts cold as follow starts, serves the traffic for this long (and on until one
	// follow round has ended well), then fails. Zero: the primary has served the scenario
	// before it and is hot.
	UnsettledPrimary time.Duration
	// PoolPagesEvery takes the server's list of its pages this often during the cold and
	// follow-failover runs (0: never), and reports what changed between each two lists
	// (RecoveryRun.Turnover): which pages the traffic read back after they were evicted.
	PoolPagesEvery time.Duration
	WarmMethod     string // innowarm warm's --method
	// WarmByKey and WarmParallel are innowarm warm --from's --by-key and --parallel in the
	// innowarm-snapshot scenario.
	WarmByKey    string
	WarmParallel int
	// WarmPacing is innowarm warm's --max-load, --max-rate and --nice for its scenarios:
	// what each costs in lost seconds is what docs/pacing.md reports.
	WarmPacing     pacing.Config
	WarmPacingText string // as the flags said it
	Dir            string // where the snapshot is written
	KeepData       bool
	Progress       progress.Config
	Log            *logx.Logger
}

// RecoveryParams are the options as the report shows them.
type RecoveryParams struct {
	Rows         int64 `json:"rows"`
	Clients      int   `json:"clients"`
	WriteClients int   `json:"write_clients,omitempty"`
	// UnsettledPrimary is follow-failover's primary's traffic after its cold restart
	// before it failed, in seconds; 0: it was hot.
	UnsettledPrimary float64 `json:"unsettled_primary_s,omitempty"`
	PoolPagesEvery   float64 `json:"pool_pages_every_s,omitempty"`
	// StandbyVolume says how follow-failover's standby reads under a read cap: with a cap
	// of its own, as the primary's (a real standby has its own disk).
	StandbyVolume string  `json:"standby_volume,omitempty"`
	Dist          string  `json:"dist"`
	Duration      float64 `json:"duration_s"`
	HotDuration   float64 `json:"hot_duration_s"`
	Rounds        int     `json:"rounds"`
	Schema        string  `json:"schema"`
	WarmMethod    string  `json:"warm_method"`
	WarmByKey     string  `json:"warm_by_key,omitempty"`
	WarmParallel  int     `json:"warm_parallel,omitempty"`
	WarmPacing    string  `json:"warm_pacing,omitempty"`
	Traffic       string  `json:"traffic"`
	// Rate is the open loop's point selects per second (0: closed loop); CalibratedQPS the
	// closed-loop hot throughput a --rate N% was taken of.
	Rate          float64 `json:"rate_per_s,omitempty"`
	CalibratedQPS float64 `json:"calibrated_hot_qps,omitempty"`
}

// RecoveryRun is one restart under traffic.
type RecoveryRun struct {
	Round int `json:"round"`
	// HotLevel is the traffic's seconds after the window, on the server recovered: the level
	// the run's metrics are measured by.
	HotLevel   HotLevel        `json:"hot"`
	Restart    *Restart        `json:"restart"`
	Curve      []RecoveryPoint `json:"curve"`
	Pool       []PoolPoint     `json:"pool,omitempty"`
	Metrics    RecoveryMetrics `json:"metrics"`
	Warm       *RecoveryWarm   `json:"warm,omitempty"`
	Follow     *FailoverFollow `json:"follow,omitempty"`             // follow-failover: what follow did before
	Writes     *WriteTraffic   `json:"writes,omitempty"`             // the write clients' transactions during the run
	LoadStatus string          `json:"server_load_status,omitempty"` // Innodb_buffer_pool_load_status at the end
	Turnover   []PoolTurnover  `json:"turnover,omitempty"`           // --pool-pages-every: what changed between the pool's lists
	Errors     int64           `json:"query_errors,omitempty"`
	// HotCurve is the traffic's seconds after the window: what HotLevel is measured from.
	HotCurve []RecoveryPoint `json:"hot_curve,omitempty"`
}

// PoolPoint is the pool's fill at a moment of a run, and the pages read from disk so far
// because a query missed (Innodb_buffer_pool_reads, counted from the run's first sample):
// on a full pool each such read evicts a page, which tells a dip caused by evicting pages
// the traffic still wanted from one caused by anything else.
//
// The other counters tell a read stall (misses served slower than the disk allows) from
// its causes: the server's own other reads (loads, read-ahead), queries waiting on
// something else than the disk, or the disk's reads spent by another process.
type PoolPoint struct {
	T      float64 `json:"t_s"`
	Pages  int64   `json:"data_pages"`
	Misses int64   `json:"missed_pages"`
	// Reads is the server's page reads of data files so far (Innodb_data_reads): misses,
	// read-ahead and loads together.
	Reads     int64 `json:"data_reads,omitempty"`
	ReadAhead int64 `json:"read_ahead_pages,omitempty"` // linear and random read-ahead so far
	Free      int64 `json:"free_pages"`
	// Pending is the server's reads in flight (Innodb_data_pending_reads), Running its
	// statements running (Threads_running) at the moment.
	Pending int64 `json:"pending_reads"`
	Running int64 `json:"threads_running"`
	// ServerReadBytes is what the server process has had read from storage so far
	// (/proc/PID/io; -1 when not a local process), CgroupReads the read operations of the
	// block-I/O cgroup innowarm runs in (-1 when none has counters).
	ServerReadBytes int64 `json:"server_read_bytes"`
	CgroupReads     int64 `json:"cgroup_reads"`
	// DeviceReads is the reads completed by the block device holding the server's data
	// directory, every process's, so far; DeviceInFlight its I/Os in flight at the moment
	// (-1: not a local process). A stall with the device's I/Os in flight and none
	// completing is the device's; one with none in flight is above it.
	DeviceReads    int64 `json:"device_reads"`
	DeviceInFlight int64 `json:"device_in_flight"`
	// MadeYoung and NotMadeYoung: accesses to pages of the old sublist that moved them to
	// the young one, and that did not (a page's first access never does, nor one within
	// innodb_old_blocks_time of it), so far (MariaDB's status; -1 where the server has
	// no such status, as MySQL).
	MadeYoung    int64 `json:"made_young"`
	NotMadeYoung int64 `json:"not_made_young"`
}

// RecoveryWarm is what a warm started with the server did.
type RecoveryWarm struct {
	Warmup
	// Start is when it began, in seconds after the server answered (negative: it was
	// waiting for the server and connected before the restart's own check did).
	Start float64 `json:"start_s"`
	Error string  `json:"error,omitempty"`
	// Unfinished: the warm was still running when the window ended (a paced warm that
	// yields to the traffic may take longer than the window); it is not an error.
	Unfinished bool `json:"unfinished,omitempty"`
}

// RecoveryScenario is a scenario's runs and their medians.
type RecoveryScenario struct {
	ID      string         `json:"id"`
	Label   string         `json:"label"`
	Skipped string         `json:"skipped,omitempty"`
	Runs    []*RecoveryRun `json:"runs,omitempty"`
	// Median holds each metric's median over the runs; Typical is the run whose lost
	// seconds are the median, the one the chart shows.
	Median  RecoveryMetrics `json:"median"`
	Typical int             `json:"typical_run"`
	// PoolT90 is the median time until the pool held 90% of the hot pool's data pages (-1:
	// not within the window).
	PoolT90 float64 `json:"pool_t90_s"`
}

// WriteTraffic is what the write clients did during a run, window and hot level together.
type WriteTraffic struct {
	Clients      int     `json:"clients"`
	Transactions int64   `json:"transactions"`
	TPS          float64 `json:"tps"`
	Errors       int64   `json:"errors"` // deadlocks and lock waits rolled back
}

// DiskRead is the disk's read speed, measured on a data file in the same run.
type DiskRead struct {
	File       string  `json:"file"`
	SeqMBps    float64 `json:"sequential_mb_per_s"` // 1 MiB reads, O_DIRECT
	RandomIOPS float64 `json:"random_16k_iops"`     // 16 KiB reads, 8 at a time, O_DIRECT
	RandomMBps float64 `json:"random_16k_mb_per_s"` // the same in MB/s
	Note       string  `json:"note,omitempty"`
	Bytes      int64   `json:"sequential_bytes_read"`
}

// RecoveryResult is everything the recovery experiment measured.
type RecoveryResult struct {
	Header
	Params    RecoveryParams      `json:"parameters"`
	Data      *TableInfo          `json:"table"`
	HotQPS    float64             `json:"hot_qps"`      // median of the runs' hot levels
	HotNoise  float64             `json:"hot_noise_cv"` // median of their seconds' variation
	Disk      *DiskRead           `json:"disk,omitempty"`
	HotSet    int64               `json:"hot_set_pages"` // the snapshot's pages: the hot set
	HotBytes  int64               `json:"hot_set_bytes"`
	Limit     float64             `json:"physical_limit_s"` // hot set bytes over sequential disk reads
	Dumps     []*innodbDump       `json:"innodb_dumps,omitempty"`
	Manifest  *snapshot.Result    `json:"manifest,omitempty"`
	Scenarios []*RecoveryScenario `json:"scenarios"`
	// Ratios are innowarm's median lost seconds over other scenarios'; NoRatio says why a
	// pair has none (a term at or below zero, or within the hot level's noise).
	Ratios  map[string]float64 `json:"lost_ratios,omitempty"`
	NoRatio map[string]string  `json:"no_lost_ratio,omitempty"`
}

// Scenario finds a scenario by id, or nil.
func (r *RecoveryResult) Scenario(id string) *RecoveryScenario {
	for _, s := range r.Scenarios {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// ValidateRecovery checks the options that need no server.
func ValidateRecovery(o RecoveryOptions) error {
	switch {
	case o.Rows < 1 || o.Rows > 2_000_000_000:
		return exitcode.BadValue("Rows", "%d: use 1 to 2,000,000,000", o.Rows)
	case o.Clients < 1 || o.Clients > 1000:
		return exitcode.BadValue("Clients", "%d: use 1 to 1000", o.Clients)
	case o.WriteClients < 0 || o.WriteClients >= o.Clients:
		return exitcode.BadValue("WriteClients", "%d of %d clients: leave at least one client of point selects", o.WriteClients, o.Clients)
	case o.Duration < 2*time.Second:
		return exitcode.BadValue("Duration", "%s: use 2s or more", o.Duration)
	case o.HotDuration < 2*time.Second:
		return exitcode.BadValue("HotDuration", "%s: use 2s or more", o.HotDuration)
	case o.UnsettledPrimary < 0 || (o.UnsettledPrimary > 0 && o.UnsettledPrimary < time.Second):
		return exitcode.BadValue("UnsettledPrimary", "%s: use 1s or more", o.UnsettledPrimary)
	case o.UnsettledPrimary > 0 && o.Scenarios != nil && !slices.Contains(o.Scenarios, RecoveryFailover):
		return exitcode.BadValue("UnsettledPrimary", "is for the %s scenario: add it to the scenarios", RecoveryFailover)
	case o.PoolPagesEvery < 0 || (o.PoolPagesEvery > 0 && o.PoolPagesEvery < time.Second):
		return exitcode.BadValue("PoolPagesEvery", "%s: use 1s or more", o.PoolPagesEvery)
	case o.Rounds < 1 || o.Rounds > 50:
		return exitcode.BadValue("Rounds", "%d: use 1 to 50", o.Rounds)
	case o.Rate < 0 || o.RateOfHot < 0 || o.RateOfHot > 1:
		return exitcode.BadValue("Rate", "give queries per second, or a share of the hot throughput from 1%% to 100%%")
	case o.Rate > 0 && o.RateOfHot > 0:
		return exitcode.BadValue("Rate", "give a rate or a share of the hot throughput, not both")
	}
	if _, err := bench.ParseDist(o.Dist); err != nil {
		return err
	}
	switch o.WarmMethod {
	case "", warm.MethodAuto, warm.MethodNative, warm.MethodScan:
	default:
		return exitcode.BadValue("WarmMethod", "%q: use auto, native or scan", o.WarmMethod)
	}
	if o.WarmByKey != "" && !slices.Contains(warm.ByKeyModes, o.WarmByKey) {
		return exitcode.BadValue("WarmByKey", "%q: use %s", o.WarmByKey, strings.Join(warm.ByKeyModes, ", "))
	}
	if o.WarmParallel < 0 {
		return exitcode.BadValue("WarmParallel", "%d: give a number of sessions, or 0 for the default", o.WarmParallel)
	}
	for _, s := range o.Scenarios {
		if !slices.Contains(RecoveryScenarios, s) {
			return exitcode.UsageError(fmt.Errorf("scenario %q: use %s", s, strings.Join(RecoveryScenarios, ", ")))
		}
	}
	return nil
}

type recRun struct {
	t      *Target
	o      RecoveryOptions
	log    *logx.Logger
	conn   *connection.Conn
	res    *RecoveryResult
	native warm.NativeAccess
	dumps  map[int]*innodbDump
	// hotPool is the hot pool's data pages, the level PoolT90 is measured by.
	hotPool int64
	// rate is the open loop's point selects per second; 0: closed loop.
	rate float64
	// standby is follow-failover's second sandbox, made before the first round; under a
	// read cap standbyVol is its own volume (the same cap, not shared with the primary).
	standby    *sandbox.Sandbox
	standbyVol *ioVolume
}

// openLoop sets the traffic's rate: as given, or the share of the hot throughput of a
// closed-loop run as long as a scenario's (the server's own traffic warms it first).
func (r *recRun) openLoop(ctx context.Context) error {
	o := r.o
	if o.RateOfHot > 0 {
		r.log.Infof("calibrating: closed-loop traffic for %s to measure the hot throughput the open loop's rate is %.0f%% of", o.Duration+o.HotDuration, 100*o.RateOfHot)
		rep, _, err := r.traffic(ctx, o.Duration+o.HotDuration)
		if err != nil {
			return fmt.Errorf("calibrate the open loop's rate: %w", err)
		}
		var tail []RecoveryPoint
		for _, p := range curveOf(rep, time.Time{}) {
			if p.T-p.Len/2 > o.Duration.Seconds() {
				tail = append(tail, p)
			}
		}
		hot := hotLevel(tail)
		if hot.QPS <= 0 {
			return errors.New("calibrate the open loop's rate: the closed-loop run measured no throughput")
		}
		r.res.Params.CalibratedQPS = hot.QPS
		r.rate = o.RateOfHot * hot.QPS
		r.log.Infof("hot throughput %.0f qps (closed loop, %d clients of point selects): the open loop runs %.0f point selects/s", hot.QPS, o.Clients-o.WriteClients, r.rate)
	}
	if r.rate > 0 {
		r.res.Params.Rate = r.rate
		r.res.Params.Traffic = fmt.Sprintf("open loop: %.0f point selects/s", r.rate)
		if o.RateOfHot > 0 {
			r.res.Params.Traffic += fmt.Sprintf(" (%.0f%% of the %.0f qps a closed loop served hot)", 100*o.RateOfHot, r.res.Params.CalibratedQPS)
		}
		r.res.Params.Traffic += fmt.Sprintf(" over %d clients (innowarm bench --workload point-select --rate --dist %s), each query's latency counted from its scheduled start, from the moment the server answers", o.Clients-o.WriteClients, o.Dist)
	}
	r.res.Params.Traffic += r.writersText()
	return nil
}

// Recovery restarts the server cold under live traffic, scenario after scenario, and
// records throughput and p95 each second from the moment it answers: how long until the
// server is hot again and how much service its users lost on the way, cold, with InnoDB's
// own load at startup, and with innowarm's warms started with the server.
func Recovery(ctx context.Context, t *Target, o RecoveryOptions) (*RecoveryResult, error) {
	if o.Schema == "" {
		o.Schema = "innowarm_recovery"
	}
	if o.Dist == "" {
		o.Dist = "pareto"
	}
	if o.WarmMethod == "" {
		o.WarmMethod = warm.MethodAuto
	}
	if err := ValidateRecovery(o); err != nil {
		return nil, err
	}
	if !t.CanRestart() {
		return nil, exitcode.BadValue("RestartCmd", "is needed: recovery restarts the server cold; or run it on a sandbox by leaving out the connection options")
	}
	if o.Dir == "" {
		return nil, exitcode.UsageError(errors.New("recovery needs a directory for its snapshot"))
	}
	conn, h, log, err := begin(ctx, t, "recovery", o.Log)
	if err != nil {
		return nil, err
	}
	r := &recRun{t: t, o: o, log: log, conn: conn, dumps: map[int]*innodbDump{}}
	defer func() { r.conn.Close() }()
	defer r.dropStandby(ctx)
	r.res = &RecoveryResult{Header: h, Params: RecoveryParams{Rows: o.Rows, Clients: o.Clients, Dist: o.Dist, Duration: o.Duration.Seconds(),
		HotDuration: o.HotDuration.Seconds(), Rounds: o.Rounds, Schema: o.Schema, WarmMethod: o.WarmMethod, WarmByKey: o.WarmByKey, WarmParallel: o.WarmParallel, WarmPacing: o.WarmPacingText,
		WriteClients: o.WriteClients, UnsettledPrimary: o.UnsettledPrimary.Seconds(), PoolPagesEvery: o.PoolPagesEvery.Seconds(),
		Traffic: fmt.Sprintf("closed loop: %d clients of point selects (innowarm bench --workload point-select --dist %s), from the moment the server answers", o.Clients-o.WriteClients, o.Dist)}}
	r.rate = o.Rate
	t0 := time.Now()
	defer r.res.finish(t0)
	r.native = warm.CheckNative(ctx, r.conn)
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
	if t.Sandbox != nil {
		was := t.Sandbox.LoadAtStartup
		defer func() { t.Sandbox.LoadAtStartup = was }()
	}
	if _, err := bench.Prepare(ctx, r.conn, bench.PrepareOptions{Schema: o.Schema, Tables: 1, Rows: o.Rows, Engine: "InnoDB", Threads: 1, AllowWrites: true}, log); err != nil {
		return nil, err
	}
	r.res.Data = &TableInfo{Name: "sbtest1", Rows: o.Rows}
	if err := measureTable(ctx, r.conn, o.Schema, r.res.Data); err != nil {
		return nil, err
	}
	log.Infof("sbtest1: %s rows, %s pages (%s); pool %s (%s pages): the table is %.1f times the pool",
		commas(o.Rows), commas(r.res.Data.Pages), fmtBytes(r.res.Data.Bytes), fmtBytes(r.res.PoolBytes), commas(r.res.PoolPages), float64(r.res.Data.Pages)/float64(max(r.res.PoolPages, 1)))
	r.res.Disk = r.measureDisk(ctx)
	if err := r.openLoop(ctx); err != nil {
		return r.res, err
	}
	for _, id := range RecoveryScenarios {
		if r.wanted(id) {
			r.res.Scenarios = append(r.res.Scenarios, &RecoveryScenario{ID: id, Label: recoveryLabels[id]})
		}
	}
	// follow-failover's standby is a copy of the primary's files, taken with the primary
	// stopped: taken now, so that every failover run follows a primary that has served the
	// traffic since the scenario before it. Taken at the first failover run, it left that
	// run following a primary restarted cold for the copy, itself still warming up.
	if r.wanted(RecoveryFailover) && r.t.Sandbox != nil {
		if _, err := r.makeStandby(ctx); err != nil {
			return r.res, fmt.Errorf("standby: %w", err)
		}
	}
	// Rounds go round all scenarios in turn, so that a busy spell of the machine does not
	// fall on the runs of one scenario only.
	for round := 1; round <= o.Rounds; round++ {
		for _, s := range r.res.Scenarios {
			if err := r.scenario(ctx, s, round); err != nil {
				return r.res, err
			}
		}
	}
	r.summarize()
	return r.res, nil
}

func (r *recRun) wanted(id string) bool {
	return id == RecoveryCold || r.o.Scenarios == nil || slices.Contains(r.o.Scenarios, id)
}

// scenario runs one scenario once: a cold restart under traffic.
func (r *recRun) scenario(ctx context.Context, s *RecoveryScenario, round int) error {
	if s.Skipped != "" {
		return nil
	}
	var beforeStart func() error
	var startWarm func(ctx context.Context, conn *connection.Conn) (*Warmup, error)
	prog := progress.Config{Out: io.Discard, Quiet: true}
	quietLog := logx.New(r.log.Writer(), true)
	switch s.ID {
	case RecoveryInnoDB25, RecoveryInnoDB100:
		pct := map[string]int{RecoveryInnoDB25: 25, RecoveryInnoDB100: 100}[s.ID]
		d := r.dumps[pct]
		switch {
		case r.t.Sandbox == nil:
			s.Skipped = "needs a sandbox: innodb_buffer_pool_load_at_startup is read at startup only"
		case !r.native.OK:
			s.Skipped = "innowarm cannot reach the server's dump file: " + r.native.Reason
		case d == nil:
			s.Skipped = "no dump was taken"
		}
		if s.Skipped != "" {
			r.log.Infof("skipped %s: %s", s.Label, s.Skipped)
			return nil
		}
		path := r.conn.Server.DumpFilePath()
		beforeStart = func() error {
			r.t.Sandbox.LoadAtStartup = true
			return dumpfile.Write(path, d.pages)
		}
		defer func() {
			r.t.Sandbox.LoadAtStartup = false
			os.Remove(path)
		}()
	case RecoverySnapshot:
		if r.res.Manifest == nil {
			s.Skipped = "no snapshot was captured"
			return nil
		}
		path := r.res.Manifest.Path
		startWarm = func(ctx context.Context, conn *connection.Conn) (*Warmup, error) {
			return manifestWarm(ctx, conn, path, manifestWarmOptions{Method: r.o.WarmMethod, ByKey: r.o.WarmByKey, Parallel: r.o.WarmParallel, UnderTraffic: true, Pacing: r.o.WarmPacing}, prog, quietLog)
		}
	case RecoveryIndexes:
		startWarm = func(ctx context.Context, conn *connection.Conn) (*Warmup, error) {
			return innowarmWarm(ctx, conn, r.o.Schema, r.o.WarmMethod, r.o.WarmPacing, prog, quietLog)
		}
	case RecoveryFailover:
		if r.t.Sandbox == nil {
			s.Skipped = "needs a sandbox: the standby is a second sandbox holding a physical copy of the primary's data"
			r.log.Infof("skipped %s: %s", s.Label, s.Skipped)
			return nil
		}
	}
	r.log.Infof("== %s (round %d of %d)", s.Label, round, r.o.Rounds)
	var run *RecoveryRun
	var err error
	if s.ID == RecoveryFailover {
		run, err = r.failover(ctx)
	} else {
		run, err = r.underTraffic(ctx, beforeStart, startWarm)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", s.Label, err)
	}
	run.Round = round
	s.Runs = append(s.Runs, run)
	m := run.Metrics
	r.log.Infof("%s: lost %.1f s, t50 %s, t95 %s (at hot's own floor of %.0f%%: %s), first 5 s %.0f%% of hot, worst p95 %.2f ms; hot %.0f qps (seconds vary by %.1f%%)%s",
		s.Label, m.Lost, tText(m.T50), tText(m.T95), 100*run.HotLevel.floorLevel(), tText(m.T95Floor), 100*m.Served5, m.WorstP95, run.HotLevel.QPS, 100*run.HotLevel.Noise, warmText(run.Warm))
	if run.HotLevel.Stalled > 0 {
		r.log.Warnf("%s: the hot seconds after the window stalled for %.0f s (under half their median): this run's hot level, and the lost seconds measured by it, are too low",
			s.Label, run.HotLevel.Stalled)
	}
	if r.rate > 0 {
		r.log.Infof("%s: p95 within 1.5x hot (%.2f ms) from %s (within hot's own ceiling of %.1fx: %s); %d queries slower than %.1f ms (10x hot p95)",
			s.Label, run.HotLevel.P95, tText(m.P95Settled), run.HotLevel.ceilingLevel(), tText(m.P95SettledCeiling), m.Slow, m.SlowMs)
	}
	if s.ID == RecoveryCold && round == 1 {
		// The cold run left the pool as the traffic wants it: keep what the warm-ups load.
		if err := r.keepHotSet(ctx); err != nil {
			return err
		}
	}
	return nil
}

func tText(t float64) string {
	if t < 0 {
		return "not reached"
	}
	return fmt.Sprintf("%.1f s", t)
}

func warmText(w *RecoveryWarm) string {
	if w == nil {
		return ""
	}
	switch {
	case w.Error != "":
		return "; warm failed: " + w.Error
	case w.Unfinished:
		return fmt.Sprintf("; warm from %.2f s, still warming when the traffic ended", w.Start)
	}
	return fmt.Sprintf("; warm from %.2f s for %.2f s, %s pages read (%.0f MB/s)", w.Start, w.Seconds, commas(w.PagesRead), w.MBps)
}

// keepHotSet takes, from the pool the cold run left hot, InnoDB's dumps and innowarm's
// snapshot that the other scenarios load.
func (r *recRun) keepHotSet(ctx context.Context) error {
	if r.native.OK {
		for _, pct := range []int{25, 100} {
			id := map[int]string{25: RecoveryInnoDB25, 100: RecoveryInnoDB100}[pct]
			if !r.wanted(id) {
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
	m, err := captureManifest(ctx, r.conn, r.o.Schema, filepath.Join(r.o.Dir, "hot.manifest"), r.log)
	if err != nil {
		return err
	}
	r.res.Manifest = m
	r.res.HotSet = m.Entries
	r.res.HotBytes = r.res.HotSet * int64(r.conn.Server.PageSize)
	if d := r.res.Disk; d != nil && d.SeqMBps > 0 {
		r.res.Limit = float64(r.res.HotBytes) / 1e6 / d.SeqMBps
	}
	return nil
}

// traffic runs the point selects on the server for d.
func (r *recRun) traffic(ctx context.Context, d time.Duration) (*bench.Report, *WriteTraffic, error) {
	return r.trafficOn(ctx, r.t.Opts, d)
}

// writersText is what the traffic's description says of the write clients.
func (r *recRun) writersText() string {
	if r.o.WriteClients == 0 {
		return ""
	}
	return fmt.Sprintf("; beside them %d clients of read-write transactions (innowarm bench --workload read-write --dist %s, closed loop)", r.o.WriteClients, r.o.Dist)
}

// trafficOn runs the point selects (closed loop, or open at r.rate) for d on the server
// at opts, on connections of their own, and the write clients' transactions beside them.
func (r *recRun) trafficOn(ctx context.Context, opts connection.Options, d time.Duration) (*bench.Report, *WriteTraffic, error) {
	var writes *WriteTraffic
	var writeErr error
	var writing sync.WaitGroup
	if r.o.WriteClients > 0 {
		writing.Add(1)
		go func() {
			defer writing.Done()
			rep, err := r.load(ctx, opts, bench.WorkloadReadWrite, r.o.WriteClients, 0, d)
			if err != nil {
				writeErr = fmt.Errorf("write clients: %w", err)
				return
			}
			l := rep.Runs[0]
			writes = &WriteTraffic{Clients: r.o.WriteClients, Transactions: l.Events, TPS: l.EPS, Errors: l.Errors}
		}()
	}
	rep, err := r.load(ctx, opts, bench.WorkloadPointSelect, r.o.Clients-r.o.WriteClients, r.rate, d)
	writing.Wait()
	if err != nil {
		return nil, nil, err
	}
	if writeErr != nil {
		return nil, nil, writeErr
	}
	return rep, writes, nil
}

// load runs one bench workload for d: clients connections, closed loop or open at rate.
func (r *recRun) load(ctx context.Context, opts connection.Options, workload string, clients int, rate float64, d time.Duration) (*bench.Report, error) {
	o := bench.Defaults()
	o.Workload, o.Schema, o.Dist, o.Tables = workload, r.o.Schema, r.o.Dist, 1
	o.ConcurrencySpec, o.Time, o.ReportInterval = fmt.Sprint(clients), d, time.Second
	o.IgnoreErrors = true
	o.Rate, o.KeepIntervalHistograms = rate, rate > 0
	// The schema carries the experiment's mark (claimSchema), not bench's: the write
	// clients may write there, and nowhere else.
	o.AllowWrites = workload == bench.WorkloadReadWrite
	plan, err := bench.NewPlan(o)
	if err != nil {
		return nil, err
	}
	admin, err := connection.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	rep, err := bench.Run(ctx, plan, bench.Env{Admin: admin, Sink: &bench.Sink{}, Log: logx.New(r.log.Writer(), true)})
	if err != nil {
		return nil, err
	}
	if len(rep.Runs) == 0 || len(rep.Runs[0].Iterations) == 0 {
		return nil, errors.New("the traffic measured nothing")
	}
	return rep, nil
}

// curveOf turns bench's intervals into a curve on a clock that starts at answered (zero:
// at the clients' start).
func curveOf(rep *bench.Report, answered time.Time) []RecoveryPoint {
	l := rep.Runs[0]
	offset := 0.0
	if !answered.IsZero() {
		offset = l.Iterations[0].Started.Sub(answered).Seconds()
	}
	var out []RecoveryPoint
	for _, iv := range l.Intervals {
		if iv.Seconds < 0.5 {
			// The stub of an interval the clients ended in: too short for a rate.
			continue
		}
		out = append(out, RecoveryPoint{T: offset + iv.Elapsed, Len: iv.Seconds, QPS: iv.QPS, P95: iv.P95, iv: iv})
	}
	return out
}

// underTraffic restarts the server cold and runs the traffic from the moment it answers for
// the scenario's duration; beforeStart prepares the server's start, startWarm (if any) is
// started before the server, waits for it and warms beside the traffic.
func (r *recRun) underTraffic(ctx context.Context, beforeStart func() error, startWarm func(context.Context, *connection.Conn) (*Warmup, error)) (*RecoveryRun, error) {
	run := &RecoveryRun{}
	var warmDone sync.WaitGroup
	wctx, cancelWarm := context.WithCancel(ctx)
	defer func() { cancelWarm(); warmDone.Wait() }()
	var started *RecoveryWarm
	var warmBegan time.Time
	launch := func() {
		if startWarm == nil {
			return
		}
		started = &RecoveryWarm{}
		warmDone.Add(1)
		go func() {
			defer warmDone.Done()
			// As 'innowarm warm --wait-for-server' does: connect the moment the server answers.
			conn, err := connection.WaitOpen(wctx, r.t.Opts, 5*time.Minute, nil)
			if err != nil {
				started.Error = err.Error()
				return
			}
			defer conn.Close()
			if _, err := warm.TakeOverStartupLoad(wctx, conn); err != nil {
				started.Error = err.Error()
				return
			}
			warmBegan = time.Now()
			res, err := startWarm(wctx, conn)
			if res != nil {
				started.Warmup = *res
			}
			if err != nil && wctx.Err() == nil {
				started.Error = err.Error()
			}
		}()
	}
	r.conn.Close()
	rs, err := r.restartWith(ctx, beforeStart, launch)
	if err != nil {
		return nil, err
	}
	answered := time.Now()
	run.Restart = &rs

	done := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		run.Pool, run.LoadStatus = r.samplePool(ctx, r.t.Opts, r.serverPid(ctx), answered, done)
	}()
	if r.o.PoolPagesEvery > 0 && beforeStart == nil && startWarm == nil && r.native.OK {
		// Cold only: a warm's native load or the server's own would wait for the dump file.
		sampled.Add(1)
		go func() {
			defer sampled.Done()
			run.Turnover = r.sampleTurnover(ctx, r.t.Opts, answered, done)
		}()
	}
	rep, writes, err := r.traffic(ctx, r.o.Duration+r.o.HotDuration)
	close(done)
	sampled.Wait()
	if err != nil {
		return nil, err
	}
	run.Writes = writes
	cancelWarm()
	warmDone.Wait()
	r.measureRun(run, rep, answered)
	if r.conn, err = r.t.Connect(ctx); err != nil {
		return nil, fmt.Errorf("reconnect after the run: %w", err)
	}
	if run.HotLevel.PoolPages, err = statusInt(ctx, r.conn, "Innodb_buffer_pool_pages_data"); err != nil {
		return nil, err
	}
	r.hotPool = max(r.hotPool, run.HotLevel.PoolPages)
	if started != nil {
		run.Warm = started
		if !warmBegan.IsZero() {
			started.Start = warmBegan.Sub(answered).Seconds()
		}
		started.Unfinished = started.Error == "" && started.Seconds == 0
	}
	return run, nil
}

// measureRun cuts the traffic's seconds into the run's window and its hot level, and
// measures the window against that level.
func (r *recRun) measureRun(run *RecoveryRun, rep *bench.Report, answered time.Time) {
	window := r.o.Duration.Seconds()
	for _, p := range curveOf(rep, answered) {
		if p.T-p.Len/2 <= window { // most of the interval lies in the window
			run.Curve = append(run.Curve, p)
		} else {
			run.HotCurve = append(run.HotCurve, p)
		}
	}
	run.HotLevel = hotLevel(run.HotCurve)
	next := run.HotCurve[:min(len(run.HotCurve), 1)] // the window's last second's right neighbour
	run.Metrics = recoveryMetrics(run.Curve, run.HotLevel.QPS, next...)
	noiseFloorMetrics(&run.Metrics, run.Curve, run.HotLevel, next...)
	if r.rate > 0 {
		openLoopMetrics(&run.Metrics, run.Curve, run.HotLevel, next...)
	}
	run.Errors = rep.Runs[0].Errors
}

// samplePool reads the pool's data pages and read counters every half second until done,
// and the server's load status at the end. pid is the server's process when it runs on
// this host (0: not known). Counters are counted from the first sample.
func (r *recRun) samplePool(ctx context.Context, opts connection.Options, pid int, answered time.Time, done <-chan struct{}) ([]PoolPoint, string) {
	conn, err := connection.Open(ctx, opts)
	if err != nil {
		return nil, ""
	}
	defer conn.Close()
	var out []PoolPoint
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var first *PoolPoint
	for {
		if p, ok := samplePoolOnce(ctx, conn, pid); ok {
			if first == nil {
				f := p
				first = &f
			}
			p.T = time.Since(answered).Seconds()
			p.Misses -= first.Misses
			p.Reads -= first.Reads
			p.ReadAhead -= first.ReadAhead
			if p.ServerReadBytes >= 0 {
				p.ServerReadBytes -= first.ServerReadBytes
			}
			if p.CgroupReads >= 0 {
				p.CgroupReads -= first.CgroupReads
			}
			if p.DeviceReads >= 0 {
				p.DeviceReads -= first.DeviceReads
			}
			if p.MadeYoung >= 0 {
				p.MadeYoung -= first.MadeYoung
				p.NotMadeYoung -= first.NotMadeYoung
			}
			out = append(out, p)
		}
		select {
		case <-done:
			var status string
			_ = conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(new(string), &status)
			return out, status
		case <-ctx.Done():
			return out, ""
		case <-tick.C:
		}
	}
}

// samplePoolOnce reads one sample's counters, not yet made relative to the first; the
// counters a server may lack read as zero.
func samplePoolOnce(ctx context.Context, conn *connection.Conn, pid int) (PoolPoint, bool) {
	st, err := conn.SomeGlobalStatus(ctx, "Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_reads", "Innodb_data_reads",
		"Innodb_buffer_pool_read_ahead", "Innodb_buffer_pool_read_ahead_rnd", "Innodb_buffer_pool_pages_free",
		"Innodb_data_pending_reads", "Threads_running", "Innodb_buffer_pool_pages_made_young", "Innodb_buffer_pool_pages_made_not_young")
	if err != nil {
		return PoolPoint{}, false
	}
	pages, ok1 := st["innodb_buffer_pool_pages_data"]
	misses, ok2 := st["innodb_buffer_pool_reads"]
	if !ok1 || !ok2 {
		return PoolPoint{}, false
	}
	devReads, devInFlight := deviceReads(pid)
	return PoolPoint{Pages: pages, Misses: misses, Reads: st["innodb_data_reads"], DeviceReads: devReads, DeviceInFlight: devInFlight,
		ReadAhead: st["innodb_buffer_pool_read_ahead"] + st["innodb_buffer_pool_read_ahead_rnd"],
		Free:      st["innodb_buffer_pool_pages_free"], Pending: st["innodb_data_pending_reads"], Running: st["threads_running"],
		ServerReadBytes: processReadBytes(pid), CgroupReads: cgroupReadOps(pid), MadeYoung: someOr(st, "innodb_buffer_pool_pages_made_young", -1),
		NotMadeYoung: someOr(st, "innodb_buffer_pool_pages_made_not_young", -1)}, true
}

// someOr is the value of status variable name (in lower case), or dflt where the server has none.
func someOr(st map[string]int64, name string, dflt int64) int64 {
	if v, ok := st[name]; ok {
		return v
	}
	return dflt
}

// restartWith restarts the server cold; on a sandbox beforeStart runs once it is down and
// afterStop is called just before it starts (a warm that waits for it), on a server
// restarted by command both run after it answers.
func (r *recRun) restartWith(ctx context.Context, beforeStart func() error, afterStop func()) (Restart, error) {
	var rs Restart
	sb := r.t.Sandbox
	if sb == nil {
		rs, err := r.t.ColdRestart(ctx)
		if err != nil {
			return rs, err
		}
		if beforeStart != nil {
			if err := beforeStart(); err != nil {
				return rs, err
			}
		}
		afterStop()
		return rs, nil
	}
	t0 := time.Now()
	if _, err := sb.Stop(ctx); err != nil {
		return rs, err
	}
	drop := sandbox.DropPageCache()
	switch {
	case drop == "dropped":
		rs.Cold = "pool empty, OS page cache dropped"
	case !sb.BufferedIO:
		rs.Cold = "pool empty; data files use O_DIRECT, so the OS cache does not serve InnoDB reads"
	default:
		rs.Cold = "pool empty, but the OS page cache may still hold data pages"
		rs.Note = "not fully cold"
	}
	if beforeStart != nil {
		if err := beforeStart(); err != nil {
			return rs, err
		}
	}
	afterStop()
	if _, err := sb.Start(ctx); err != nil {
		return rs, fmt.Errorf("cold restart of the sandbox: %w", err)
	}
	rs.Seconds = time.Since(t0).Seconds()
	return rs, nil
}

// summarize sets each scenario's medians and the ratios of innowarm's lost seconds.
func (r *recRun) summarize() {
	var hots, noise []float64
	for _, s := range r.res.Scenarios {
		for _, rn := range s.Runs {
			hots, noise = append(hots, rn.HotLevel.QPS), append(noise, rn.HotLevel.Noise)
		}
	}
	r.res.HotQPS, r.res.HotNoise = medianOf(hots), medianOf(noise)
	coldHot := map[int]float64{} // by round
	if cs := r.res.Scenario(RecoveryCold); cs != nil {
		for _, rn := range cs.Runs {
			coldHot[rn.Round] = rn.HotLevel.QPS
		}
	}
	for _, s := range r.res.Scenarios {
		if len(s.Runs) == 0 {
			continue
		}
		var t50, t95, t95f, lost, worst, served, pool, settled, settledCeiling, slow, slowMs, lostCold []float64
		for _, rn := range s.Runs {
			if hot := coldHot[rn.Round]; hot > 0 && s.ID != RecoveryCold {
				rn.Metrics.LostAtColdsHot = recoveryMetrics(rn.Curve, hot).Lost
				lostCold = append(lostCold, rn.Metrics.LostAtColdsHot)
			}
			m := rn.Metrics
			t50, t95, lost, worst, served = append(t50, m.T50), append(t95, m.T95), append(lost, m.Lost), append(worst, m.WorstP95), append(served, m.Served5)
			t95f = append(t95f, m.T95Floor)
			settled, slow, slowMs = append(settled, m.P95Settled), append(slow, float64(m.Slow)), append(slowMs, m.SlowMs)
			settledCeiling = append(settledCeiling, m.P95SettledCeiling)
			pool = append(pool, poolTime(rn.Pool, 0.9*float64(r.hotPool)))
		}
		s.Median = RecoveryMetrics{T50: medianTime(t50), T95: medianTime(t95), T95Floor: medianTime(t95f), Lost: medianOf(lost), WorstP95: medianOf(worst), Served5: medianOf(served), Window: s.Runs[0].Metrics.Window}
		if len(lostCold) > 0 {
			s.Median.LostAtColdsHot = medianOf(lostCold)
		}
		if r.rate > 0 {
			s.Median.P95Settled, s.Median.Slow, s.Median.SlowMs = medianTime(settled), int64(medianOf(slow)), medianOf(slowMs)
			s.Median.P95SettledCeiling = medianTime(settledCeiling)
		}
		s.PoolT90 = medianTime(pool)
		for i, rn := range s.Runs {
			if rn.Metrics.Lost == s.Median.Lost {
				s.Typical = i
				break
			}
		}
	}
	r.res.Ratios, r.res.NoRatio = lostRatios(r.res)
}

// lostRatios are innowarm's median lost seconds over the others', where both are lost
// service: above zero and above the hot level's noise over the window (its seconds'
// variation times the window). A user test found "-5.43×" (innowarm's runs above hot on a
// 2 s window) and "13.19×" against a cold run that lost 0.013 s in seconds that varied by
// 23%: figures of noise, printed as results.
func lostRatios(res *RecoveryResult) (map[string]float64, map[string]string) {
	ratios, none := map[string]float64{}, map[string]string{}
	for _, w := range []string{RecoverySnapshot, RecoveryIndexes} {
		ws := res.Scenario(w)
		if ws == nil || len(ws.Runs) == 0 {
			continue
		}
		noise := res.HotNoise * ws.Median.Window
		for _, base := range []string{RecoveryCold, RecoveryInnoDB25, RecoveryInnoDB100} {
			bs := res.Scenario(base)
			if bs == nil || len(bs.Runs) == 0 {
				continue
			}
			k := w + "/" + base
			switch {
			case bs.Median.Lost <= 0 || ws.Median.Lost <= 0:
				none[k] = fmt.Sprintf("no ratio: %.1f s against %.1f s lost (one at or below zero)", ws.Median.Lost, bs.Median.Lost)
			case bs.Median.Lost <= noise || ws.Median.Lost <= noise:
				none[k] = fmt.Sprintf("no ratio: %.1f s against %.1f s lost, within the hot level's noise over the window (%.1f s: its seconds vary by %.1f%%)", ws.Median.Lost, bs.Median.Lost, noise, 100*res.HotNoise)
			default:
				ratios[k] = ws.Median.Lost / bs.Median.Lost
			}
		}
	}
	return ratios, none
}

// poolTime is when the pool first held level data pages, or -1.
func poolTime(pool []PoolPoint, level float64) float64 {
	for _, p := range pool {
		if float64(p.Pages) >= level {
			return p.T
		}
	}
	return -1
}

// serverPid is the experiment's server process when it is a sandbox on this host, else 0.
func (r *recRun) serverPid(ctx context.Context) int {
	if r.t.Sandbox == nil {
		return 0
	}
	return r.t.Sandbox.Status(ctx).Pid
}
