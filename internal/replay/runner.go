package replay

import (
	"compress/bzip2"
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/periodic"
	"github.com/innowarm/innowarm/internal/sqlerr"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// Options shape a replay.
type Options struct {
	Concurrency int     // parallel sessions; default 4
	Dedupe      bool    // run one statement per fingerprint and schema
	Sample      float64 // run this fraction of the runnable statements, in (0, 1]; 0 means all
	Seed        uint64  // makes --sample repeatable
	Limit       int64   // run at most this many statements; 0: no limit
	// Timeout is each statement's time limit, enforced by the server; 0: none.
	Timeout time.Duration
	// LockWaitTimeout bounds waits for a table's metadata lock (behind DDL); default 10s.
	LockWaitTimeout time.Duration
	// DefaultSchema is used for statements whose source names no schema.
	DefaultSchema string
	// DryRun reads and classifies, and runs nothing.
	DryRun bool
	// Selected, when set, gets each statement a dry run would run, in the source's order.
	Selected func(Statement)
	// MaxErrorSamples is how many error messages the result keeps; default 5.
	MaxErrorSamples int
	// Log gets progress lines (default logx.Default()); ProgressEvery is their interval
	// (default 10s; negative: none).
	Log           *logx.Logger
	ProgressEvery time.Duration
	// Mode overrides the sql_mode read from the server (tests).
	Mode *Mode
	// Pacing holds statements back while the server is busy (--max-load, --max-rate,
	// --nice) and stops the replay at --critical-load.
	Pacing pacing.Config
}

// DefaultConcurrency is the number of sessions when Options.Concurrency is 0.
const DefaultConcurrency = 4

// Result is what a replay did.
type Result struct {
	Source     string          `json:"source"`
	Format     string          `json:"format"`
	PerfSchema *PerfSchemaInfo `json:"performance_schema,omitempty"`

	Read     int64 `json:"statements_read"`
	Runnable int64 `json:"statements_runnable"` // read-only SELECTs among them
	Selected int64 `json:"statements_selected"` // after --dedupe, --sample and --limit
	Run      int64 `json:"statements_run"`      // ran to their end
	Errors   int64 `json:"errors"`              // failed (TimedOut of them at the time limit)
	TimedOut int64 `json:"timed_out"`

	Skipped      map[string]int64  `json:"skipped"` // by reason
	Pacing       *pacing.Stats     `json:"pacing,omitempty"`
	SkippedTotal int64             `json:"skipped_total"`
	SkipExamples map[string]string `json:"skip_examples,omitempty"` // the first statement of each reason
	Duplicates   int64             `json:"duplicates"`
	NoSchema     int64             `json:"no_schema"` // selected statements whose source named no schema
	SampledOut   int64             `json:"sampled_out"`
	LimitReached bool              `json:"limit_reached,omitempty"`
	ErrorSamples []string          `json:"error_samples,omitempty"`

	Seconds float64 `json:"seconds"`
	// PagesLoaded is Innodb_pages_read over the replay: pages read from disk into the pool,
	// by every session of the server.
	PagesLoaded int64             `json:"pages_loaded"`
	PoolBefore  bufferpool.Totals `json:"pool_before"`
	PoolAfter   bufferpool.Totals `json:"pool_after"`
	Concurrency int               `json:"concurrency"`
	DryRun      bool              `json:"dry_run,omitempty"`
	Interrupted bool              `json:"interrupted,omitempty"`
	Notes       []string          `json:"notes,omitempty"`

	mu sync.Mutex
	// errorSamples are ErrorSamples with their place in the source: the workers finish in
	// any order, and the samples kept and shown are the first failures in the source.
	errorSamples []errorSample
}

type errorSample struct {
	seq  int64
	text string
}

// addErrorSample keeps the failure of the statement at seq if it is among the max first
// ones of the source; res.mu is held.
func (r *Result) addErrorSample(seq int64, text string, max int) {
	if len(r.errorSamples) == max {
		last := 0
		for i, e := range r.errorSamples {
			if e.seq > r.errorSamples[last].seq {
				last = i
			}
		}
		if r.errorSamples[last].seq < seq {
			return
		}
		r.errorSamples = append(r.errorSamples[:last], r.errorSamples[last+1:]...)
	}
	r.errorSamples = append(r.errorSamples, errorSample{seq, text})
	sort.Slice(r.errorSamples, func(i, j int) bool { return r.errorSamples[i].seq < r.errorSamples[j].seq })
	r.ErrorSamples = r.ErrorSamples[:0]
	for _, e := range r.errorSamples {
		r.ErrorSamples = append(r.ErrorSamples, e.text)
	}
}

// fatalError is a failure of the connection itself: the replay stops.
type fatalError struct {
	where string
	err   error
}

func (e *fatalError) Error() string {
	return fmt.Sprintf("replay stopped: the connection failed at %s: %v", e.where, e.err)
}
func (e *fatalError) Unwrap() error { return e.err }

type job struct {
	st  Statement
	seq int64 // its place among the selected statements
}

// Run replays the statements of src on conn. It always returns a result (what was done so
// far, also after an error or an interrupt). A statement that fails is counted and the
// replay goes on; a connection that fails stops it with an error, as does an interrupt
// (ctx.Err()). When every statement that ran failed, the error says so.
func Run(ctx context.Context, conn *connection.Conn, src Source, o Options) (*Result, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.LockWaitTimeout <= 0 {
		o.LockWaitTimeout = 10 * time.Second
	}
	if o.MaxErrorSamples <= 0 {
		o.MaxErrorSamples = 5
	}
	if o.Log == nil {
		o.Log = logx.Default()
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 10 * time.Second
	}
	res := &Result{Skipped: map[string]int64{}, SkipExamples: map[string]string{}, Concurrency: o.Concurrency, DryRun: o.DryRun}
	var mode Mode
	if o.Mode != nil {
		mode = *o.Mode
	} else {
		m, err := ServerMode(ctx, conn)
		if err != nil {
			return res, err
		}
		mode = m
	}

	before, err := bufferpool.ReadTotals(ctx, conn)
	if err != nil {
		return res, err
	}
	res.PoolBefore = before
	readStart, err := pagesRead(ctx, conn)
	if err != nil {
		return res, err
	}
	t0 := time.Now()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var gov *pacing.Governor
	if !o.DryRun {
		o.Pacing.Workers = o.Concurrency
		if gov, err = pacing.New(ctx, conn, o.Pacing); err != nil {
			return res, err
		}
		defer gov.Close()
		go func() {
			select {
			case <-gov.Tripped():
				cancel(gov.Err())
			case <-runCtx.Done():
			}
		}()
	}
	jobs := make(chan job, 2*o.Concurrency)
	var workers sync.WaitGroup
	if !o.DryRun {
		for w := 0; w < o.Concurrency; w++ {
			workers.Add(1)
			go func() {
				defer workers.Done()
				wk := &worker{conn: conn, o: o, res: res, bad: map[string]error{}}
				defer wk.close()
				for j := range jobs {
					if runCtx.Err() != nil {
						continue // drain
					}
					if err := gov.Acquire(runCtx, w); err != nil {
						cancel(err)
						continue
					}
					err := wk.run(runCtx, j)
					gov.Release(w)
					if err != nil {
						cancel(err)
					}
				}
			}()
		}
	}
	stopProgress := startProgress(runCtx, o, res)

	readErr := feed(runCtx, src, o, mode, res, jobs)
	close(jobs)
	workers.Wait()
	stopProgress()

	res.Seconds = time.Since(t0).Seconds()
	if gov != nil {
		st := gov.Stats()
		res.Pacing = &st
	}
	if n, err := pagesRead(context.WithoutCancel(ctx), conn); err == nil {
		res.PagesLoaded = n - readStart
	}
	if after, err := bufferpool.ReadTotals(context.WithoutCancel(ctx), conn); err == nil {
		res.PoolAfter = after
	}
	if len(res.SkipExamples) == 0 {
		res.SkipExamples = nil
	}
	if res.NoSchema > 0 && o.DefaultSchema == "" {
		res.Notes = append(res.Notes, fmt.Sprintf("%d statements named no schema and ran in none: name one with --replay-schema (or -D) if they fail with 'No database selected'", res.NoSchema))
	}
	if ctx.Err() != nil {
		res.Interrupted = true
		return res, ctx.Err()
	}
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return res, cause
	}
	if readErr != nil {
		return res, readErr
	}
	if res.Errors > 0 && res.Run == 0 {
		return res, fmt.Errorf("all %d statements failed; first: %s", res.Errors, res.ErrorSamples[0])
	}
	return res, nil
}

// feed reads the source, classifies each statement, applies --dedupe, --sample and --limit
// and hands the rest to the workers.
func feed(ctx context.Context, src Source, o Options, mode Mode, res *Result, jobs chan<- job) error {
	seen := map[[16]byte]struct{}{}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	for ctx.Err() == nil {
		st, err := src.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if damaged(err) {
				return exitcode.UsageError(fmt.Errorf("read the replay source: it is damaged: %w", err))
			}
			return fmt.Errorf("read the replay source: %w", err)
		}
		var reason string
		var toks []token
		switch {
		case st.Own || isTagged(st.SQL):
			// A log written while innowarm ran: its scans and replays are not the application's,
			// however long.
			reason = ReasonOwn
		case st.TooLong:
			reason = ReasonTooLong
		case st.Truncated:
			reason = ReasonTruncated
		default:
			toks, err = lex(st.SQL, mode)
			if err != nil {
				reason = ReasonUnparsable
			} else {
				reason = classifyTokens(toks)
			}
		}
		if reason == ReasonEmpty {
			continue
		}
		if reason == "" && o.Limit > 0 && res.Selected >= o.Limit {
			res.lock(func() { res.LimitReached = true })
			return nil
		}
		res.lock(func() {
			res.Read++
			if reason != "" {
				res.Skipped[reason]++
				res.SkippedTotal++
				if _, ok := res.SkipExamples[reason]; !ok {
					res.SkipExamples[reason] = describe(st)
				}
			}
		})
		if reason != "" {
			continue
		}
		res.lock(func() { res.Runnable++ })
		if o.Dedupe {
			key := dedupeKey(st.Schema, fingerprintTokens(toks))
			if _, dup := seen[key]; dup {
				res.lock(func() { res.Duplicates++ })
				continue
			}
			seen[key] = struct{}{}
		}
		if o.Sample > 0 && o.Sample < 1 && rng.Float64() >= o.Sample {
			res.lock(func() { res.SampledOut++ })
			continue
		}
		res.lock(func() {
			res.Selected++
			if st.Schema == "" {
				res.NoSchema++
			}
		})
		if o.DryRun {
			if o.Selected != nil {
				o.Selected(st)
			}
			continue
		}
		select {
		case jobs <- job{st: st, seq: res.Selected}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// damaged reports a source that ends in the middle of its compressed data or fails its
// checksum: an input problem, not the machine's.
func damaged(err error) bool {
	var corrupt flate.CorruptInputError
	var structural bzip2.StructuralError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
		errors.As(err, &corrupt) || errors.As(err, &structural)
}

func dedupeKey(schema, fingerprint string) [16]byte {
	sum := sha256.Sum256([]byte(schema + "\x00" + fingerprint))
	var k [16]byte
	copy(k[:], sum[:16])
	return k
}

func (r *Result) lock(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// describe names a statement in messages: where it was, its schema and its start.
func describe(st Statement) string {
	var b strings.Builder
	if st.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", st.Line)
	}
	if st.Schema != "" {
		fmt.Fprintf(&b, "[%s] ", sqltext.Ident(st.Schema))
	}
	b.WriteString(abbreviate(st.SQL, 160))
	return b.String()
}

func abbreviate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

func startProgress(ctx context.Context, o Options, res *Result) func() {
	if o.ProgressEvery < 0 || o.Log.Quiet() {
		return func() {}
	}
	return periodic.Every(ctx, o.ProgressEvery, func(context.Context) bool {
		res.lock(func() {
			o.Log.Infof("replay: %d statements read, %d run, %d skipped, %d errors", res.Read, res.Run, res.SkippedTotal, res.Errors)
		})
		return true
	})
}

// ServerMode reads the sql_mode flags the replay sessions will lex statements with: new
// sessions start with the server's global sql_mode.
func ServerMode(ctx context.Context, conn *connection.Conn) (Mode, error) {
	var sqlMode string
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode "+Tag).Scan(&sqlMode); err != nil {
		return Mode{}, fmt.Errorf("read sql_mode: %w", err)
	}
	return ModeFromSQLMode(sqlMode), nil
}

func pagesRead(ctx context.Context, conn *connection.Conn) (int64, error) {
	var name string
	var n int64
	if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_pages_read' "+Tag).Scan(&name, &n); err != nil {
		return 0, fmt.Errorf("read Innodb_pages_read: %w", err)
	}
	return n, nil
}

// worker runs statements on its own sessions: main, which follows the statements' schemas
// with USE, and plain, opened when a statement names no schema after main has left the
// connection's default one.
type worker struct {
	conn        *connection.Conn
	o           Options
	res         *Result
	main, plain *connection.Session
	current     string           // main's schema
	bad         map[string]error // schemas USE failed for
}

// close ends the sessions and keeps their connections out of the pool: they are read-only,
// time-limited and in some schema, which the pool's next user must not inherit.
func (w *worker) close() {
	for _, s := range []*connection.Session{w.main, w.plain} {
		if s != nil {
			discard(s)
		}
	}
}

func discard(s *connection.Session) {
	_ = s.Conn().Raw(func(any) error { return driver.ErrBadConn })
	s.Close()
}

// open starts a session whose every transaction is READ ONLY (with autocommit, each
// statement is one such transaction: the server refuses any write) and whose SELECTs stop at
// the time limit.
func (w *worker) open(ctx context.Context) (*connection.Session, error) {
	s, err := w.conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	setup := []string{
		"SET SESSION TRANSACTION READ ONLY",
		"SET SESSION autocommit = 1",
		fmt.Sprintf("SET SESSION lock_wait_timeout = %d", max(int(w.o.LockWaitTimeout.Seconds()), 1)),
	}
	if q := w.conn.Server.SessionTimeLimit(w.o.Timeout); q != "" {
		setup = append(setup, q)
	}
	for _, q := range setup {
		if _, err := s.Exec(ctx, q+" "+Tag); err != nil {
			discard(s)
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return s, nil
}

// openInDefaultSchema opens a session whose schema is the connection's default one: a
// pooled connection that another user left in some schema (USE) is dropped, since no
// statement can take a MySQL session back to no schema at all.
func (w *worker) openInDefaultSchema(ctx context.Context) (*connection.Session, error) {
	for attempt := 0; ; attempt++ {
		s, err := w.open(ctx)
		if err != nil {
			return nil, err
		}
		var current sql.NullString
		if err := s.QueryRow(ctx, "SELECT DATABASE() "+Tag, nil, &current); err != nil {
			discard(s)
			return nil, err
		}
		if current.String == w.conn.Opts.Database || attempt >= 8 {
			return s, nil
		}
		discard(s)
	}
}

// connFailure marks an error of the connection itself, which stops the replay.
type connFailure struct{ err error }

func (c *connFailure) Error() string { return c.err.Error() }
func (c *connFailure) Unwrap() error { return c.err }

// session returns the session to run a statement of schema in, switched to it.
func (w *worker) session(ctx context.Context, schema string) (*connection.Session, error) {
	if w.main == nil {
		s, err := w.open(ctx)
		if err != nil {
			return nil, &connFailure{err}
		}
		w.main, w.current = s, w.conn.Opts.Database
	}
	if schema == "" {
		if w.current == w.conn.Opts.Database {
			return w.main, nil
		}
		if w.plain == nil {
			s, err := w.openInDefaultSchema(ctx)
			if err != nil {
				return nil, &connFailure{err}
			}
			w.plain = s
		}
		return w.plain, nil
	}
	if schema == w.current {
		return w.main, nil
	}
	if err := w.bad[schema]; err != nil {
		return nil, err
	}
	if _, err := w.main.Exec(ctx, "USE "+sqltext.Ident(schema)+" "+Tag); err != nil {
		if fatal(err) {
			return nil, &connFailure{err}
		}
		w.bad[schema] = err
		return nil, err
	}
	w.current = schema
	return w.main, nil
}

// run runs one statement; it returns an error only when the replay must stop.
func (w *worker) run(ctx context.Context, j job) error {
	schema := j.st.Schema
	if schema == "" {
		schema = w.o.DefaultSchema
	}
	s, err := w.session(ctx, schema)
	if err == nil {
		// The tag goes on a line of its own: the statement may end in a -- comment.
		if _, err = s.Exec(ctx, j.st.SQL+"\n"+Tag); err != nil && fatal(err) {
			err = &connFailure{err}
		}
	}
	if ctx.Err() != nil {
		return nil //nolint:nilerr // an interrupt is reported by the caller, not per statement
	}
	var cf *connFailure
	if errors.As(err, &cf) {
		return &fatalError{where: describe(j.st), err: cf.err}
	}
	w.res.lock(func() {
		if err == nil {
			w.res.Run++
			return
		}
		w.res.Errors++
		if w.timeLimit(err) {
			w.res.TimedOut++
			err = fmt.Errorf("stopped at the time limit (%s)", w.o.Timeout)
		}
		w.res.addErrorSample(j.seq, fmt.Sprintf("%s: %s", describe(j.st), serverWords(err)), w.o.MaxErrorSamples)
	})
	return nil
}

func (w *worker) timeLimit(err error) bool {
	return sqlerr.Timeout(err)
}

// fatal reports whether err is the connection failing rather than the statement: anything
// but a server error, and the server errors that end the session.
func fatal(err error) bool {
	if _, ok := sqlerr.Number(err); !ok {
		return true
	}
	return sqlerr.ConnectionLost(err)
}

// serverWords is a statement's error on one line, without the tag innowarm appends to the
// statements it replays (a syntax error quotes the statement's end, tag and line break
// included).
func serverWords(err error) string {
	msg := strings.ReplaceAll(err.Error(), Tag, "")
	return strings.Join(strings.Fields(msg), " ")
}
