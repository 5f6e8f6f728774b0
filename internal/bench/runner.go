package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sqltext"
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
		r.report.Rate = p.Rate
	}
	defer r.close()
	err := r.run(ctx)
	cerr := r.cleanup(ctx)
	if err == nil {
		err = cerr
	} else if cerr != nil {
		// The run's own error is the one returned; the user must still hear that what it
		// created is left on the server.
		r.log.Warnf("could not drop what the run created: %v", cerr)
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
	name := sqltext.Ident(p.Schema)
	if p.Mode == ModeWorkload {
		if !st.Exists {
			return usagef("schema %s does not exist: create the tables first with 'innowarm bench prepare --create-schema %s'", name, p.Schema)
		}
		if p.Writes && !st.Owned && !p.AllowWrites {
			what := "--pre-query/--post-query write to it"
			if p.Workload == WorkloadReadWrite {
				what = "--workload read-write writes to its tables"
			}
			return usagef("schema %s was not created by innowarm and %s: give --allow-writes-in-existing-schema to run there anyway", name, what)
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

// use selects the schema on the control session.
func (r *runner) use(ctx context.Context) error {
	_, err := r.ctl.Exec(ctx, "USE "+sqltext.Ident(r.p.Schema))
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
		r.log.Infof("created schema %s", sqltext.Ident(p.Schema))
	}
	if err := r.use(ctx); err != nil {
		return fmt.Errorf("use schema %s: %w", sqltext.Ident(p.Schema), err)
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
			if rr != nil && lvl.Queries+lvl.Errors > rr.fatal {
				// A failure mid-run: what ran before it is still measured, and a long
				// --time run's figures are not thrown away; the block says they are partial
				// (and counts the failure in its errors). A run that failed before anything
				// else ran has nothing to report but its error line.
				lvl.Partial = fmt.Sprintf("stopped by an error in iteration %d of %d", it, r.p.Iterations)
				r.emitLevel(lvl)
			}
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
		r.log.Infof("--create runs once in schema %s, which innowarm did not create: its tables are kept across iterations", sqltext.Ident(p.Schema))
	}
	for _, s := range p.LoadStmts {
		q := eng.apply(s)
		if _, err := r.ctl.Exec(ctx, q); err != nil {
			return queryError(ctx, "--create", q, err)
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
func (r *runner) cleanup(runCtx context.Context) error {
	if r.ctl == nil {
		return nil
	}
	// It runs after an interrupt too: the run's values, not its cancellation.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), 30*time.Second)
	defer cancel()
	p := r.p
	if p.NoDrop {
		if r.createdSchema {
			r.log.Infof("kept schema %s (--no-drop); 'innowarm bench cleanup --create-schema %s' drops it", sqltext.Ident(p.Schema), p.Schema)
		}
		if r.t1Created {
			// The schema is someone else's: nothing marks t1 as innowarm's, so neither
			// cleanup nor the next run there will drop it (the next run refuses to start
			// while it exists). Say so now, while it is known whose it is.
			r.log.Warnf("kept table t1 that this run created in schema %s, which innowarm did not create (--no-drop): innowarm will neither drop nor reuse it, and a later --auto-generate-sql run there refuses while it exists; drop it yourself: DROP TABLE %s.`t1`", sqltext.Ident(p.Schema), sqltext.Ident(p.Schema))
		}
		return nil
	}
	if !r.createdSchema && !r.t1Created {
		return nil
	}
	sess := r.ctl
	if runCtx.Err() != nil || r.ctl.Killed() {
		// An interrupt that came during a statement of the control session (the load
		// phase's INSERTs, --create, a pre-query) made the driver drop its connection:
		// the drops go through a new one.
		fresh, err := r.env.Admin.NewSession(ctx)
		if err != nil {
			return fmt.Errorf("open a session to drop what the run created: %w", err)
		}
		defer fresh.Close()
		sess = fresh
	}
	if r.createdSchema {
		if err := r.sch.DropOwned(ctx, sess, p.Schema); err != nil {
			return err
		}
		r.createdSchema = false
	}
	if r.t1Created {
		if _, err := sess.Exec(ctx, "DROP TABLE IF EXISTS "+sqltext.Ident(p.Schema)+".`t1`"); err != nil {
			return fmt.Errorf("drop table t1: %w", err)
		}
	}
	return nil
}

func (r *runner) runList(ctx context.Context, what string, stmts []Statement) error {
	for _, s := range stmts {
		if _, err := r.ctl.Exec(ctx, s.SQL); err != nil {
			return queryError(ctx, "--"+what, s.SQL, err)
		}
	}
	return nil
}

// queryError names the statement and the server's message; an interrupt is the cancel,
// whatever the driver said (it drops the connection of a statement cancelled in flight,
// and may answer "bad connection": a failed statement and exit 1 instead of 130).
func queryError(ctx context.Context, what, q string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%s statement failed: %s: %w", what, shorten(q, 200), err)
}
