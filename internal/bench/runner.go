package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
)

// Env is what a run needs from its caller.
type Env struct {
	Admin *connection.Conn // control connection: schema work, pre/post queries, KILL QUERY
	Sink  *Sink
	Log   *logx.Logger

	// Test knobs: use the marker table instead of a schema comment, and generate rows on
	// the client instead of with the Sequence engine.
	MarkerTable bool
	ClientLoad  bool
}

// Run runs the plan: every engine, every concurrency level, every iteration.
func Run(ctx context.Context, p *Plan, env Env) (*Report, error) {
	if env.Log == nil {
		env.Log = logx.Default()
	}
	r := &runner{p: p, env: env, log: env.Log, sch: newSchemas(env.Admin)}
	r.sch.markerTable = env.MarkerTable
	r.report = &Report{Tool: "innowarm bench", Mode: p.Mode.String(), Schema: p.Schema, Server: env.Admin.Server.String(), LoadType: p.LoadTypeName()}
	if p.Mode == ModeWorkload {
		r.report.Dist = p.Key.String()
	}
	defer r.close()
	err := r.run(ctx)
	cerr := r.cleanup()
	if err == nil {
		err = cerr
	}
	if err != nil {
		return r.report, err
	}
	return r.report, nil
}

type runner struct {
	p      *Plan
	env    Env
	log    *logx.Logger
	sch    *schemas
	ctl    *connection.Session
	dial   *dialer
	report *Report

	state         SchemaState
	createdSchema bool // this run created the schema (it carries the mark)
	t1Created     bool // auto-generated t1 created in a schema that is not innowarm's
	keys          []string
	tables        []sbTable
	hotIDs        []int64
}

func (r *runner) close() {
	if r.ctl != nil {
		r.ctl.Close()
	}
}

func (r *runner) run(ctx context.Context) error {
	p := r.p
	var err error
	if r.ctl, err = r.env.Admin.NewSession(ctx); err != nil {
		return err
	}
	if r.state, err = r.sch.State(ctx, p.Schema); err != nil {
		return err
	}
	if err := r.checkSafety(ctx); err != nil {
		return err
	}
	if err := r.setupDialer(ctx); err != nil {
		return err
	}
	for _, n := range p.Notes {
		r.log.Infof("%s", n)
	}
	if p.Mode == ModeWorkload {
		return r.runWorkload(ctx)
	}
	return r.runSlap(ctx)
}

// checkSafety enforces the schema rules: innowarm creates and drops only schemas it created,
// runs in any existing schema without dropping it, and writes into a schema it did not
// create only when told to.
func (r *runner) checkSafety(ctx context.Context) error {
	p, st := r.p, r.state
	name := QuoteIdent(p.Schema)
	if p.Mode == ModeWorkload {
		if !st.Exists {
			return usagef("schema %s does not exist: create the tables first with 'innowarm bench prepare --create-schema %s'", name, p.Schema)
		}
		if p.Writes && !st.Owned && !p.AllowWrites {
			return usagef("schema %s was not created by innowarm and --pre-query/--post-query write to it: give --allow-writes-in-existing-schema to run there anyway", name)
		}
		return nil
	}
	if !st.Exists || st.Owned {
		return nil
	}
	// An existing schema that is not innowarm's.
	if !p.AllowWrites {
		switch {
		case p.Mode == ModeAuto && p.AutoWrites():
			return usagef("schema %s exists and was not created by innowarm: the %s load type writes, so it runs only in a schema innowarm creates (pick a new --create-schema) or with --allow-writes-in-existing-schema", name, p.Auto.LoadType)
		case p.Mode == ModeQuery && p.Writes:
			return usagef("schema %s exists and was not created by innowarm, and the run writes to it (%s): pick a new --create-schema, or give --allow-writes-in-existing-schema", name, firstWrite(p))
		case p.Mode == ModeAuto && p.Writes && (len(p.PreStmts) > 0 || len(p.PostStmts) > 0) && anyWrite(append(append([]Statement{}, p.PreStmts...), p.PostStmts...)):
			return usagef("schema %s exists and was not created by innowarm, and --pre-query/--post-query write to it: give --allow-writes-in-existing-schema to run there anyway", name)
		}
	}
	if p.Mode == ModeAuto {
		has, err := r.sch.hasTable(ctx, p.Schema, "t1")
		if err != nil {
			return err
		}
		if has {
			return usagef("schema %s already has a table t1 and was not created by innowarm: innowarm never drops a table it did not create; pick a new --create-schema", name)
		}
	}
	r.log.Infof("schema %s exists and was not created by innowarm: running there, and it will not be dropped", name)
	return nil
}

func anyWrite(stmts []Statement) bool {
	for _, s := range stmts {
		if IsWrite(s.SQL) {
			return true
		}
	}
	return false
}

func firstWrite(p *Plan) string {
	if len(p.LoadStmts) > 0 {
		return "--create: " + shorten(p.LoadStmts[0].SQL, 60)
	}
	for _, list := range [][]Statement{p.PreStmts, p.QueryStmts, p.PostStmts} {
		for _, s := range list {
			if IsWrite(s.SQL) {
				return shorten(strings.TrimSpace(s.SQL), 60)
			}
		}
	}
	return "a write statement"
}

// shorten cuts s to n characters for messages.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (r *runner) setupDialer(ctx context.Context) error {
	cfg, err := r.env.Admin.Opts.Config()
	if err != nil {
		return err
	}
	cfg.DBName = r.p.Schema
	cfg.MultiStatements = r.p.Mode != ModeWorkload // as mysqlslap connects
	cfg.InterpolateParams = false
	var maxPacket int64
	if err := r.env.Admin.DB.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&maxPacket); err == nil && maxPacket > 0 {
		cfg.MaxAllowedPacket = int(maxPacket) // saves the driver a round trip per connection
	}
	r.dial = &dialer{base: cfg}
	return nil
}

// maxBlockingClients is the most clients that get blocking connections (and a P each);
// more use Go's network poller.
const maxBlockingClients = 512

// spareProcs are the Ps left over for the rest of the process while every client holds
// one: none. With an idle P around, every time a client goes through the scheduler the
// runtime wakes a thread to look for work on it and puts it back to sleep: thousands of
// futex calls and context switches a second at 32 clients. The rest of the process
// (interval reports, signals, KILL QUERY) runs when the runtime preempts a client, which
// it does to every goroutine that has run for 10 ms without a break (as a client in raw
// system calls seems to): the preemption signal also ends a long statement's wait
// (blockingConn.wait). Yielding more often than that costs more than it saves.
const spareProcs = 0

// chooseIO decides how the clients of a round talk to the server (see IOAuto).
func (r *runner) chooseIO(clients int) {
	d := r.dial
	tls := d.base.TLS != nil
	d.loop, d.blocking, d.raw = false, false, false
	switch mode := r.p.IOMode; {
	case mode == IONetpoll || !blockingIOSupported:
	case mode == IOLoop && loopSupported && !tls && r.p.Detach == 0:
		d.loop, d.blocking, d.raw = true, true, true
	case mode == IODriver:
		d.blocking = clients <= 1024 // the runtime's limit on GOMAXPROCS
	case mode == IOBlocking:
		d.blocking = clients <= 1024
		d.raw = d.blocking && !tls
	default: // auto: a thread per client, protocol spoken directly
		d.blocking = clients <= maxBlockingClients
		d.raw = d.blocking && !tls
	}
}

// use selects the schema on the control session.
func (r *runner) use(ctx context.Context) error {
	_, err := r.ctl.Exec(ctx, "USE "+QuoteIdent(r.p.Schema))
	return err
}

// runSlap runs mysqlslap-style: per engine, per concurrency level, per iteration: load
// phase, pre-queries, the clients, post-queries.
func (r *runner) runSlap(ctx context.Context) error {
	p := r.p
	if !r.state.Exists {
		if err := r.sch.CreateOwned(ctx, r.ctl, p.Schema); err != nil {
			return err
		}
		r.createdSchema, r.state = true, SchemaState{Exists: true, Owned: true}
		r.log.Infof("created schema %s", QuoteIdent(p.Schema))
	}
	if err := r.use(ctx); err != nil {
		return fmt.Errorf("use schema %s: %w", QuoteIdent(p.Schema), err)
	}
	for ei, eng := range p.Engines {
		for li, clients := range p.Concurrency {
			limit := p.ClientLimit(clients)
			spec := roundSpec{clients: clients, limit: limit}
			if p.Time > 0 {
				spec.deadline = p.Time
				spec.cycle = p.Auto.ExecuteNumber == 0 && p.NumberOfQueries == 0
			}
			if limit == 0 && !spec.cycle && p.NumberOfQueries > 0 {
				r.log.Warnf("--number-of-queries %d is less than the %d clients: each client runs the statement list once, as mysqlslap does", p.NumberOfQueries, clients)
			}
			load := func(it int) error { return r.loadPhase(ctx, eng, ei == 0 && li == 0 && it == 1) }
			if err := r.level(ctx, eng.Name, spec, load); err != nil {
				return err
			}
		}
		if err := r.endEngine(ctx); err != nil {
			return err
		}
	}
	return nil
}

// level runs one concurrency level: for each iteration before (if any), the pre-queries,
// the clients, the post-queries; then it prints the level's result.
func (r *runner) level(ctx context.Context, engine string, spec roundSpec, before func(it int) error) error {
	lvl := newLevel(engine, spec.clients)
	for it := 1; it <= r.p.Iterations; it++ {
		if before != nil {
			if err := before(it); err != nil {
				return err
			}
		}
		if err := r.runList(ctx, "pre-query", r.p.PreStmts); err != nil {
			return err
		}
		spec.iteration = it
		rr, err := r.round(ctx, spec)
		if rr != nil {
			lvl.add(rr)
		}
		if err != nil {
			return err
		}
		if err := r.runList(ctx, "post-query", r.p.PostStmts); err != nil {
			return err
		}
	}
	r.emitLevel(lvl)
	return nil
}

// loadPhase is mysqlslap's start of an iteration when it creates something (--create or
// --auto-generate-sql): a fresh schema, the load statements, the primary key list.
func (r *runner) loadPhase(ctx context.Context, eng Engine, first bool) error {
	p := r.p
	if len(p.LoadStmts) == 0 {
		return nil
	}
	switch {
	case r.state.Owned:
		// mysqlslap drops and re-creates its schema for every iteration.
		if err := r.sch.DropOwned(ctx, r.ctl, p.Schema); err != nil {
			return err
		}
		if err := r.sch.CreateOwned(ctx, r.ctl, p.Schema); err != nil {
			return err
		}
		if err := r.use(ctx); err != nil {
			return err
		}
	case p.Mode == ModeAuto:
		// Someone else's schema: only our own t1 is dropped and re-created.
		if r.t1Created {
			if _, err := r.ctl.Exec(ctx, "DROP TABLE IF EXISTS `t1`"); err != nil {
				return fmt.Errorf("drop table t1: %w", err)
			}
		}
		r.t1Created = true
	case !first:
		// Someone else's schema and the user's --create: it ran once, the tables stay.
		return nil
	}
	if p.Mode == ModeQuery && !r.state.Owned && first && p.Iterations > 1 {
		r.log.Infof("--create runs once in schema %s, which innowarm did not create: its tables are kept across iterations", QuoteIdent(p.Schema))
	}
	for _, s := range p.LoadStmts {
		q := eng.apply(s)
		if _, err := r.ctl.Exec(ctx, q); err != nil {
			return queryError("--create", q, err)
		}
	}
	r.keys = nil
	if p.Mode == ModeAuto && p.Auto.keyed() {
		if strings.Contains(strings.ToLower(eng.Name), "blackhole") {
			r.keys = []string{onlyPrintKey}
			return nil
		}
		err := r.ctl.Query(ctx, "SELECT id from t1", nil, func(rows *sql.Rows) error {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			r.keys = append(r.keys, k)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the primary keys of t1: %w", err)
		}
		if len(r.keys) == 0 {
			return fmt.Errorf("t1 has no rows to look up: the load phase inserted none")
		}
	}
	return nil
}

// endEngine is the end of an engine's runs: mysqlslap drops the schema when it created
// something; innowarm drops only what it created, and nothing with --no-drop.
func (r *runner) endEngine(ctx context.Context) error {
	p := r.p
	if p.NoDrop || len(p.LoadStmts) == 0 {
		return nil
	}
	if r.state.Owned {
		if err := r.sch.DropOwned(ctx, r.ctl, p.Schema); err != nil {
			return err
		}
		r.state = SchemaState{}
		r.createdSchema = false
		if err := r.sch.CreateOwned(ctx, r.ctl, p.Schema); err != nil { // for the next engine
			return err
		}
		r.state, r.createdSchema = SchemaState{Exists: true, Owned: true}, true
		return r.use(ctx)
	}
	if r.t1Created {
		if _, err := r.ctl.Exec(ctx, "DROP TABLE IF EXISTS `t1`"); err != nil {
			return fmt.Errorf("drop table t1: %w", err)
		}
		r.t1Created = false
	}
	return nil
}

// cleanup drops what the run created, also after an error or an interrupt.
func (r *runner) cleanup() error {
	if r.ctl == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := r.p
	if p.NoDrop {
		if r.createdSchema {
			r.log.Infof("kept schema %s (--no-drop); 'innowarm bench cleanup --create-schema %s' drops it", QuoteIdent(p.Schema), p.Schema)
		}
		return nil
	}
	if r.createdSchema {
		if err := r.sch.DropOwned(ctx, r.ctl, p.Schema); err != nil {
			return err
		}
		r.createdSchema = false
	}
	if r.t1Created {
		if _, err := r.ctl.Exec(ctx, "DROP TABLE IF EXISTS "+QuoteIdent(p.Schema)+".`t1`"); err != nil {
			return fmt.Errorf("drop table t1: %w", err)
		}
	}
	return nil
}

func (r *runner) runList(ctx context.Context, what string, stmts []Statement) error {
	for _, s := range stmts {
		if _, err := r.ctl.Exec(ctx, s.SQL); err != nil {
			return queryError("--"+what, s.SQL, err)
		}
	}
	return nil
}

// queryError names the statement and the server's message.
func queryError(what, q string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%s statement failed: %s: %w", what, shorten(q, 200), err)
}

// roundSpec is one run of the clients.
type roundSpec struct {
	clients   int
	iteration int
	limit     uint64        // queries per client (mysqlslap); 0: one pass over the list
	cycle     bool          // run the list until the deadline
	deadline  time.Duration // --time
	events    uint64        // --events (workload), for all clients together
}

// roundState is shared by the clients of a round.
type roundState struct {
	stop     atomic.Bool
	deadline time.Time
	events   atomic.Uint64

	mu       sync.Mutex
	firstErr error
	stopped  chan struct{} // closed when a client fails
	stopOnce sync.Once
}

func (st *roundState) fail(err error) {
	st.mu.Lock()
	if st.firstErr == nil {
		st.firstErr = err
	}
	st.mu.Unlock()
	st.stop.Store(true)
	st.stopOnce.Do(func() { close(st.stopped) })
}

// worker is one client.
type worker struct {
	idx  int
	r    *runner
	st   *roundState
	rec  *recorder
	conn atomic.Pointer[wconn]
	busy atomic.Bool
	done atomic.Bool
	rng  *rand.Rand

	connects   []time.Duration // connection set-up times
	reconnects int64
	errCodes   map[string]int64
	errCount   int64
	buf        []byte
	in, out    []byte // protocol buffers (execRaw)
	inLen      int
	parser     respParser
	args       []driver.Value
	prepared   []sbStmts // per table, workload runs
}

// connect opens the client's connection and readies it; the time it takes is connection
// set-up, recorded apart from the queries.
func (w *worker) connect(ctx context.Context) error {
	t0 := time.Now()
	c, err := w.r.dial.open(ctx)
	if err != nil {
		return err
	}
	if w.r.p.Commit > 0 {
		if err := c.exec("SET AUTOCOMMIT=0"); err != nil {
			c.close()
			return err
		}
	}
	if w.r.p.Mode == ModeWorkload {
		if err := w.prepareStatements(c); err != nil {
			c.close()
			return err
		}
	}
	w.connects = append(w.connects, time.Since(t0))
	w.conn.Store(c)
	return nil
}

func (w *worker) reconnect(ctx context.Context) error {
	if old := w.conn.Load(); old != nil {
		old.close()
	}
	w.parser.caps, w.inLen = caps{}, 0
	w.reconnects++
	return w.connect(ctx)
}

// exec runs one statement and says how long it took.
func (w *worker) exec(c *wconn, q string) (time.Duration, error) {
	w.busy.Store(true)
	t0 := time.Now()
	err := c.exec(q)
	d := time.Since(t0)
	w.busy.Store(false)
	return d, err
}

func (w *worker) execStmt(st driver.Stmt, args []driver.Value) (time.Duration, error) {
	w.busy.Store(true)
	t0 := time.Now()
	_, err := st.Exec(args)
	d := time.Since(t0)
	w.busy.Store(false)
	return d, err
}

// failed handles a failed statement: counted with --ignore-errors when the server refused
// it, otherwise the end of the round. It reports whether the client must stop.
func (w *worker) failed(q string, err error) bool {
	if w.st.stop.Load() {
		return true // stopping anyway: this is a statement killed on the way out
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && w.r.p.IgnoreErrors {
		w.rec.failed()
		w.errCount++
		key := fmt.Sprintf("%d %s", me.Number, shorten(me.Message, 80))
		if len(w.errCodes) < 1000 {
			w.errCodes[key]++
		} else {
			w.errCodes["other"]++
		}
		return false
	}
	hint := ""
	if me != nil {
		hint = " (--ignore-errors counts failed queries and goes on)"
	}
	w.st.fail(fmt.Errorf("client %d: query failed: %s: %w%s", w.idx+1, shorten(q, 200), err, hint))
	return true
}

func (w *worker) expired(now time.Time) bool {
	return !w.st.deadline.IsZero() && now.After(w.st.deadline)
}

// keyed builds "... WHERE id =  'key'" without allocating: the driver copies the text
// into its packet buffer before Exec returns, so the string may alias w.buf.
func (w *worker) keyed(s string) string {
	keys := w.r.keys
	w.buf = append(w.buf[:0], s...)
	w.buf = append(w.buf, " '"...)
	w.buf = append(w.buf, keys[w.rng.IntN(len(keys))]...)
	w.buf = append(w.buf, '\'')
	return unsafe.String(unsafe.SliceData(w.buf), len(w.buf))
}

// program makes the client's program for a round.
func (w *worker) program(spec roundSpec) program {
	if w.r.p.Mode == ModeWorkload {
		return newWorkloadProgram(w, spec)
	}
	return newSlapProgram(w, spec)
}

// runThreaded runs the client's program on its own thread, a statement at a time, with a
// fresh connection every --detach queries.
func (w *worker) runThreaded(ctx context.Context, spec roundSpec) {
	p := w.r.p
	prog := w.program(spec)
	var detachedAt uint64
	for !w.st.stop.Load() {
		expired := spec.deadline > 0 && w.expired(time.Now())
		s, ok := prog.next(expired)
		if !ok {
			return
		}
		if n := prog.queries(); s.record && p.Detach > 0 && n > 0 && n%uint64(p.Detach) == 0 && n != detachedAt {
			detachedAt = n
			if err := w.reconnect(ctx); err != nil {
				w.st.fail(fmt.Errorf("client %d: reconnect (--detach): %w", w.idx+1, err))
				return
			}
		}
		var d time.Duration
		var err error
		switch {
		case w.r.dial.raw:
			d, err = w.execRaw(s)
		case s.ps != nil:
			args := w.args[:s.nargs]
			for i := range args {
				args[i] = s.args[i]
			}
			d, err = w.execStmt(s.ps.ds, args)
		default:
			d, err = w.exec(w.conn.Load(), s.text)
		}
		if err != nil {
			if w.failed(s.describe(), err) {
				return
			}
			prog.done(s, true)
			continue
		}
		if s.record {
			var ev int64
			if s.event {
				ev = 1
			}
			w.rec.ok(d, ev)
		}
		prog.done(s, false)
	}
}

// execRaw sends a statement and reads its answer in the protocol, on the client's own
// thread (see proto.go): no decoding, no allocation.
func (w *worker) execRaw(s step) (time.Duration, error) {
	bc := w.conn.Load().sock.(*blockingConn)
	if w.parser.caps == (caps{}) {
		cp, ok := sniffCaps(bc.hello)
		if !ok {
			return 0, errors.New("cannot read the capabilities the connection negotiated")
		}
		w.parser.caps = cp
	}
	w.out = w.out[:0]
	if s.ps != nil {
		w.out = appendExecute(w.out, s.ps.id, s.args[:s.nargs])
	} else {
		w.out = appendCommand(w.out, comQuery, s.text)
	}
	w.parser.reset()
	refused := false
	w.busy.Store(true)
	t0 := time.Now()
	_, err := bc.Write(w.out)
	for err == nil {
		if w.inLen == len(w.in) {
			w.in = append(w.in, make([]byte, max(len(w.in), 16<<10))...)
		}
		var n int
		if n, err = bc.Read(w.in[w.inLen:]); err != nil {
			break
		}
		w.inLen += n
		used, done := w.parser.feed(w.in[:w.inLen])
		copy(w.in, w.in[used:w.inLen])
		w.inLen -= used
		if done {
			break
		}
		if w.parser.infile {
			w.parser.infile, refused = false, true
			_, err = bc.Write([]byte{0, 0, 0, w.parser.seq + 1})
		}
	}
	d := time.Since(t0)
	w.busy.Store(false)
	switch {
	case err != nil:
		return d, fmt.Errorf("connection lost: %w", err)
	case w.parser.err != nil:
		return d, w.parser.err
	case refused:
		return d, errLocalInfile
	}
	return d, nil
}

// closeConn ends the client: its connection closes.
func (w *worker) closeConn() {
	if c := w.conn.Load(); c != nil {
		c.close()
	}
	w.done.Store(true)
}

// roundResult is one round's measurements.
type roundResult struct {
	iteration  int
	clients    int
	seconds    float64 // mysqlslap's: from the first connection attempt to the last client done
	connectSec float64 // until every client was connected
	querySec   float64 // from the start signal to the last client done
	queries    int64
	errors     int64
	events     int64
	reconnects int64
	hist       *hdr.Histogram
	connects   []time.Duration
	errCodes   map[string]int64
	intervals  []Interval
	cpuSec     float64
}

// round connects the clients, starts them together, and measures until the last is done.
func (r *runner) round(ctx context.Context, spec roundSpec) (*roundResult, error) {
	r.chooseIO(spec.clients)
	if r.dial.blocking && !r.dial.loop {
		// A client blocked in a raw read keeps its P: give each one its own.
		if prev := runtime.GOMAXPROCS(0); prev < spec.clients+spareProcs {
			runtime.GOMAXPROCS(spec.clients + spareProcs)
			defer runtime.GOMAXPROCS(prev)
		}
	}
	// Collect garbage rarely while the clients run (a collection waits for the statements
	// in flight): when the heap has grown by 128 MiB, not when it has doubled.
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	prevGC := debug.SetGCPercent(-1)
	prevLimit := debug.SetMemoryLimit(int64(mem.Sys) + 128<<20)
	defer func() {
		debug.SetMemoryLimit(prevLimit)
		debug.SetGCPercent(prevGC)
	}()
	st := &roundState{stopped: make(chan struct{})}
	workers := make([]*worker, spec.clients)
	for i := range workers {
		workers[i] = &worker{
			idx: i, r: r, st: st, rec: newRecorder(spec.clients),
			rng:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)*0x9e3779b97f4a7c15+1)),
			errCodes: map[string]int64{}, buf: make([]byte, 0, 256), args: make([]driver.Value, 2),
		}
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()

	connErrs := make([]error, len(workers))
	var ready, finished sync.WaitGroup
	begin := make(chan bool)
	for i, w := range workers {
		ready.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			err := w.connect(ctx)
			connErrs[i] = err
			ready.Done()
			if goAhead := <-begin; !goAhead || err != nil {
				w.closeConn()
				return
			}
			if r.dial.loop {
				return // the event loops run this client
			}
			w.runThreaded(ctx, spec)
			w.closeConn()
		}()
	}
	ready.Wait()
	var connErr error
	failedConns := 0
	for _, err := range connErrs {
		if err != nil {
			failedConns++
			if connErr == nil {
				connErr = err
			}
		}
	}
	if connErr != nil || ctx.Err() != nil {
		close(begin)
		finished.Wait()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%d of %d clients could not connect: %w", failedConns, len(workers), connection.Explain(connErr, r.env.Admin.Opts))
	}
	connected := time.Now()
	if spec.deadline > 0 {
		st.deadline = connected.Add(spec.deadline)
	}
	rep := newReporter(r, spec, workers, connected)
	monitorDone := make(chan struct{})
	go r.monitor(ctx, st, workers, monitorDone)
	for range workers {
		begin <- true
	}
	if r.dial.loop {
		if err := r.startLoops(spec, workers, &finished); err != nil {
			st.fail(err)
		}
	}
	allDone := make(chan struct{})
	go func() { finished.Wait(); close(allDone) }()
	rep.loop(allDone)
	end := time.Now()
	close(monitorDone)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)

	rr := rep.result()
	rr.iteration, rr.clients = spec.iteration, spec.clients
	rr.seconds = end.Sub(start).Seconds()
	rr.connectSec = connected.Sub(start).Seconds()
	rr.querySec = end.Sub(connected).Seconds()
	rr.cpuSec = tvSec(ru1.Utime) + tvSec(ru1.Stime) - tvSec(ru0.Utime) - tvSec(ru0.Stime)
	rr.errCodes = map[string]int64{}
	for _, w := range workers {
		rr.connects = append(rr.connects, w.connects...)
		rr.reconnects += w.reconnects
		for k, v := range w.errCodes {
			rr.errCodes[k] += v
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	st.mu.Lock()
	err := st.firstErr
	st.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return rr, nil
}

func tvSec(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// startLoops hands the connected clients to event loops; finished counts the loops.
func (r *runner) startLoops(spec roundSpec, workers []*worker, finished *sync.WaitGroup) error {
	n := loopsFor(len(workers))
	groups := make([][]*loopClient, n)
	for i, w := range workers {
		c := w.conn.Load()
		bc, ok := c.sock.(*blockingConn)
		cp, known := caps{}, false
		if ok {
			cp, known = sniffCaps(bc.hello)
		}
		if !known {
			for _, w := range workers {
				w.closeConn()
			}
			return errors.New("cannot read the capabilities the connections negotiated")
		}
		lc := &loopClient{w: w, prog: w.program(spec), spec: spec, conn: bc, fd: bc.fd, in: make([]byte, 16<<10), parser: respParser{caps: cp}}
		groups[i%n] = append(groups[i%n], lc)
	}
	for _, g := range groups {
		l, err := newEventLoop(g)
		if err != nil {
			for _, w := range workers {
				w.closeConn()
			}
			return err
		}
		finished.Add(1)
		go func() {
			defer finished.Done()
			l.run()
			for _, c := range l.clients {
				c.w.closeConn()
			}
		}()
	}
	return nil
}

// monitor stops the clients' statements on the server when the run is interrupted or a
// client failed: KILL QUERY for every client busy in a statement, again until all are done,
// and after 10 s their sockets are cut.
func (r *runner) monitor(ctx context.Context, st *roundState, workers []*worker, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-ctx.Done():
		st.stop.Store(true)
	case <-st.stopped:
	}
	giveUp := time.Now().Add(10 * time.Second)
	for {
		for _, w := range workers {
			if w.done.Load() || !w.busy.Load() {
				continue
			}
			if c := w.conn.Load(); c != nil {
				kctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := r.env.Admin.DB.ExecContext(kctx, fmt.Sprintf("KILL QUERY %d", c.id))
				cancel()
				if err != nil {
					r.log.Warnf("could not stop the statement of client %d on the server (KILL QUERY %d): %v", w.idx+1, c.id, err)
				}
			}
		}
		select {
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(giveUp) {
			for _, w := range workers {
				if c := w.conn.Load(); c != nil && !w.done.Load() {
					c.abort()
				}
			}
			<-done
			return
		}
	}
}
