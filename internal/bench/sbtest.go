package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// sysbench's table: `sbtestN` (id PK, k INT indexed, c CHAR(120), pad CHAR(60)).
const sbCreate = "CREATE TABLE %s (\n" +
	"  id INTEGER NOT NULL AUTO_INCREMENT,\n" +
	"  k INTEGER DEFAULT '0' NOT NULL,\n" +
	"  c CHAR(120) DEFAULT '' NOT NULL,\n" +
	"  pad CHAR(60) DEFAULT '' NOT NULL,\n" +
	"  PRIMARY KEY (id)\n" +
	") ENGINE = %s"

func sbName(i int) string { return "sbtest" + strconv.Itoa(i) }

// sysbench's workload statements.
const (
	sqlPoint    = "SELECT c FROM %s WHERE id=?"
	sqlSimple   = "SELECT c FROM %s WHERE id BETWEEN ? AND ?"
	sqlSum      = "SELECT SUM(k) FROM %s WHERE id BETWEEN ? AND ?"
	sqlOrder    = "SELECT c FROM %s WHERE id BETWEEN ? AND ? ORDER BY c"
	sqlDistinct = "SELECT DISTINCT c FROM %s WHERE id BETWEEN ? AND ? ORDER BY c"
	// read-write's writes, as sysbench's oltp_read_write: c and pad take new values made
	// from a random number (sysbench's are random digit groups of the same lengths).
	sqlIndexUpdate    = "UPDATE %s SET k=k+1 WHERE id=?"
	sqlNonIndexUpdate = "UPDATE %s SET c=RPAD(?, 120, '-') WHERE id=?"
	sqlDelete         = "DELETE FROM %s WHERE id=?"
	sqlInsert         = "INSERT INTO %s (id, k, c, pad) VALUES (?, ?, RPAD(?, 120, '-'), RPAD(?, 60, '-'))"
	// point selects per read-only transaction, as sysbench's oltp_read_only
	pointSelectsPerTx = 10
)

// hotSeed picks the hot-rows set: the same rows on every run, so runs compare.
const hotSeed = 2017

type sbTable struct {
	name    string
	rows    int64
	sampler Sampler
}

// sbStmts are one client's prepared statements for one table.
type sbStmts struct {
	point, simple, sum, order, distinct   *psStmt
	indexUpdate, nonIndexUpdate, del, ins *psStmt // read-write only
}

var sbTableRe = regexp.MustCompile(`^sbtest([1-9][0-9]*)$`)

// findTables lists sbtest1..N in schema: the first want of them, or all when want is 0.
func findTables(ctx context.Context, db *sql.DB, schema string, want int) ([]sbTable, error) {
	rows, err := db.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'sbtest%'", schema)
	if err != nil {
		return nil, fmt.Errorf("list the sbtest tables: %w", err)
	}
	defer rows.Close()
	have := map[int]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		if m := sbTableRe.FindStringSubmatch(name); m != nil {
			n, _ := strconv.Atoi(m[1])
			have[n] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(have) == 0 {
		return nil, usagef("schema %s has no sbtest tables: create them with 'innowarm bench prepare --create-schema %s --rows N --tables T'", sqltext.Ident(schema), schema)
	}
	n := want
	if n == 0 {
		for have[n+1] {
			n++
		}
	}
	var out []sbTable
	for i := 1; i <= n; i++ {
		if !have[i] {
			return nil, usagef("schema %s has no table %s (--tables %d): prepare them with 'innowarm bench prepare --tables %d'", sqltext.Ident(schema), sbName(i), n, n)
		}
		out = append(out, sbTable{name: sbName(i)})
	}
	for i := range out {
		var maxID sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT MAX(id) FROM "+sqltext.Ident(schema)+"."+sqltext.Ident(out[i].name)).Scan(&maxID); err != nil {
			return nil, fmt.Errorf("read the size of %s: %w", out[i].name, err)
		}
		if maxID.Int64 < 1 {
			return nil, usagef("table %s.%s is empty: fill it with 'innowarm bench prepare'", sqltext.Ident(schema), out[i].name)
		}
		out[i].rows = maxID.Int64
	}
	return out, nil
}

func (r *runner) runWorkload(ctx context.Context) error {
	p := r.p
	tables, err := findTables(ctx, r.env.Admin.DB, p.Schema, p.Tables)
	if err != nil {
		return err
	}
	minRows := tables[0].rows
	for i := range tables {
		minRows = min(minRows, tables[i].rows)
	}
	if p.Workload == WorkloadHotRows {
		h := p.HotRows
		if h == 0 {
			h = max(1, minRows/100)
		}
		h = min(h, minRows)
		r.hotIDs = pickHot(minRows, h)
		for i := range tables {
			tables[i].sampler = p.Key.NewSampler(h)
		}
		r.log.Infof("hot-rows: %d hot rows spread over ids 1..%d, drawn %s", h, minRows, p.Key)
	} else {
		for i := range tables {
			tables[i].sampler = p.Key.NewSampler(tables[i].rows)
		}
	}
	r.tables = tables
	for _, t := range tables {
		r.report.Tables = append(r.report.Tables, t.name)
		r.report.Rows = append(r.report.Rows, t.rows)
	}
	if err := r.use(ctx); err != nil {
		return fmt.Errorf("use schema %s: %w", sqltext.Ident(p.Schema), err)
	}
	for _, clients := range p.Concurrency {
		if err := r.level(ctx, "", roundSpec{clients: clients, deadline: p.Time, events: p.Events}, nil); err != nil {
			return err
		}
	}
	return nil
}

// pickHot chooses h distinct ids in [1, n], spread over the whole table: hot rows that
// share few pages are what makes a buffer pool need many times their size.
func pickHot(n, h int64) []int64 {
	return DistinctIDs(rand.New(rand.NewPCG(hotSeed, uint64(n))), n, h)
}

// DistinctIDs draws n distinct ids from 1..rows (at most rows of them) in random order: a
// shuffle when they are most of the range, rejection sampling when they are few.
func DistinctIDs(rng *rand.Rand, rows, n int64) []int64 {
	n = min(n, rows)
	if n*2 > rows {
		perm := make([]int64, rows)
		for i := range perm {
			perm[i] = int64(i) + 1
		}
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		return perm[:n]
	}
	seen := make(map[int64]bool, n)
	out := make([]int64, 0, n)
	for int64(len(out)) < n {
		id := 1 + rng.Int64N(rows)
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// prepareStatements prepares the workload's statements on a new connection: through the
// driver for a client on its own thread, in the protocol for the event loop.
func (w *worker) prepareStatements(c *wconn) error {
	p := w.r.p
	w.prepared = make([]sbStmts, len(w.r.tables))
	prepare := func(sql string) (*psStmt, error) {
		if w.r.dial.raw {
			bc, ok := c.sock.(*blockingConn)
			cp, known := sniffCaps(bc.hello)
			if !ok || !known {
				return nil, errors.New("cannot read the connection's capabilities")
			}
			return rawPrepare(bc, cp, sql)
		}
		st, err := c.prepare(sql)
		if err != nil {
			return nil, err
		}
		return &psStmt{sql: sql, ds: st, nparams: st.NumInput()}, nil
	}
	for i, t := range w.r.tables {
		name := sqltext.Ident(t.name)
		s := &w.prepared[i]
		var err error
		if s.point, err = prepare(fmt.Sprintf(sqlPoint, name)); err != nil {
			return fmt.Errorf("prepare the point select on %s: %w", t.name, err)
		}
		if !p.Transactions() {
			continue
		}
		stmts := []struct {
			st  **psStmt
			sql string
		}{{&s.simple, sqlSimple}, {&s.sum, sqlSum}, {&s.order, sqlOrder}, {&s.distinct, sqlDistinct}}
		if p.Workload == WorkloadReadWrite {
			stmts = append(stmts, []struct {
				st  **psStmt
				sql string
			}{{&s.indexUpdate, sqlIndexUpdate}, {&s.nonIndexUpdate, sqlNonIndexUpdate}, {&s.del, sqlDelete}, {&s.ins, sqlInsert}}...)
		}
		for _, x := range stmts {
			q := fmt.Sprintf(x.sql, name)
			if *x.st, err = prepare(q); err != nil {
				return fmt.Errorf("prepare %q: %w", q, err)
			}
		}
	}
	return nil
}

// PrepareOptions are `innowarm bench prepare`'s settings.
type PrepareOptions struct {
	Schema string
	Tables int
	Rows   int64
	Engine string
	// EngineOption follows ENGINE = Engine in the CREATE TABLE, as mysqlslap's
	// --engine engine:option does.
	EngineOption string
	Threads      int
	AllowWrites  bool
	// Test knobs, as in Env.
	MarkerTable bool
	ClientLoad  bool
}

// PrepareReport says what prepare did.
type PrepareReport struct {
	Schema        string   `json:"schema"`
	Tables        []string `json:"tables"`
	Rows          int64    `json:"rows_per_table"`
	Method        string   `json:"method"`
	CreatedSchema bool     `json:"created_schema"`
	LoadSeconds   float64  `json:"load_seconds"`
	IndexSeconds  float64  `json:"index_seconds"`
	Seconds       float64  `json:"seconds"`
	RowsPerSecond float64  `json:"rows_per_second"`
}

// Prepare creates sysbench's tables fast: the rows first (generated by the server from the
// Sequence engine where there is one, else multi-row INSERTs), the index on k afterwards.
func Prepare(ctx context.Context, c *connection.Conn, o PrepareOptions, log *logx.Logger) (*PrepareReport, error) {
	if log == nil {
		log = logx.Default()
	}
	if o.Tables < 1 || o.Rows < 1 {
		return nil, usagef("--tables and --rows must be at least 1")
	}
	if o.Rows > 2_000_000_000 {
		return nil, exitcode.BadValue("Rows", "%d is more than an INTEGER id holds", o.Rows)
	}
	if o.Engine == "" {
		o.Engine = "InnoDB"
	}
	if strings.ContainsAny(o.Engine, " `;'\"") {
		return nil, exitcode.BadValue("Engine", "%q is not an engine name", o.Engine)
	}
	if o.Threads < 1 {
		o.Threads = 1
	}
	s := newSchemas(c)
	s.markerTable = o.MarkerTable
	st, err := s.State(ctx, o.Schema)
	if err != nil {
		return nil, err
	}
	rep := &PrepareReport{Schema: o.Schema, Rows: o.Rows, Method: "INSERT ... SELECT FROM seq_1_to_N (generated by the server)"}
	serverSide := c.Server.SequenceEngine() && !o.ClientLoad
	if !serverSide {
		rep.Method = "multi-row INSERTs of 1000 rows"
	}
	sess, err := c.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	switch {
	case !st.Exists:
		if err := s.CreateOwned(ctx, sess, o.Schema); err != nil {
			return nil, err
		}
		rep.CreatedSchema = true
	case st.Owned:
		log.Infof("schema %s was created by innowarm: dropping and re-creating it", sqltext.Ident(o.Schema))
		if err := s.DropOwned(ctx, sess, o.Schema); err != nil {
			return nil, err
		}
		if err := s.CreateOwned(ctx, sess, o.Schema); err != nil {
			return nil, err
		}
		rep.CreatedSchema = true
	default:
		if !o.AllowWrites {
			return nil, usagef("schema %s exists and was not created by innowarm: prepare writes tables, so pick a new --create-schema or give --allow-writes-in-existing-schema", sqltext.Ident(o.Schema))
		}
		for i := 1; i <= o.Tables; i++ {
			has, err := s.hasTable(ctx, o.Schema, sbName(i))
			if err != nil {
				return nil, err
			}
			if has {
				return nil, usagef("schema %s already has a table %s and was not created by innowarm: innowarm never drops a table it did not create", sqltext.Ident(o.Schema), sbName(i))
			}
		}
	}
	t0 := time.Now()
	var mu sync.Mutex
	var firstErr error
	var loadSec, indexSec float64
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(o.Threads, o.Tables) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				l, x, err := prepareTable(ctx, c, o, i, serverSide, log)
				mu.Lock()
				loadSec, indexSec = max(loadSec, l), max(indexSec, x)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := 1; i <= o.Tables; i++ {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		next <- i
		rep.Tables = append(rep.Tables, sbName(i))
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil || firstErr != nil {
		// A half-loaded schema would be taken by the next bench for a prepared one: what
		// this prepare created goes (the schema it created, or its tables in a schema it
		// was allowed to write in, which did not exist before).
		dropIncomplete(ctx, c, s, o, rep, log)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, firstErr
	}
	rep.Seconds = time.Since(t0).Seconds()
	rep.LoadSeconds, rep.IndexSeconds = loadSec, indexSec
	rep.RowsPerSecond = float64(o.Rows*int64(o.Tables)) / rep.Seconds
	return rep, nil
}

// dropIncomplete drops what an interrupted or failed prepare created, on a context of its
// own (the run's may be cancelled), and says so.
func dropIncomplete(ctx context.Context, c *connection.Conn, s *schemas, o PrepareOptions, rep *PrepareReport, log *logx.Logger) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	sess, err := c.NewSession(dctx)
	if err != nil {
		log.Warnf("prepare did not finish, and its tables could not be dropped (%v): drop schema %s before using it", err, sqltext.Ident(o.Schema))
		return
	}
	defer sess.Close()
	if rep.CreatedSchema {
		if err := s.DropOwned(dctx, sess, o.Schema); err != nil {
			log.Warnf("prepare did not finish, and the schema it created could not be dropped (%v): drop schema %s before using it", err, sqltext.Ident(o.Schema))
			return
		}
		log.Infof("prepare did not finish: dropped the schema it created, %s", sqltext.Ident(o.Schema))
		return
	}
	for _, t := range rep.Tables {
		if _, err := sess.Exec(dctx, "DROP TABLE IF EXISTS "+sqltext.Table(o.Schema, t)); err != nil {
			log.Warnf("prepare did not finish, and its table %s could not be dropped: %v", sqltext.Table(o.Schema, t), err)
			continue
		}
	}
	if len(rep.Tables) > 0 {
		log.Infof("prepare did not finish: dropped the tables it created in %s (%s)", sqltext.Ident(o.Schema), strings.Join(rep.Tables, ", "))
	}
}

// prepareChunk is how many rows one INSERT writes (a progress line every few).
const prepareChunk = 250_000

func prepareTable(ctx context.Context, c *connection.Conn, o PrepareOptions, i int, serverSide bool, log *logx.Logger) (loadSec, indexSec float64, err error) {
	sess, err := c.NewSession(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer sess.Close()
	name := sqltext.Ident(o.Schema) + "." + sqltext.Ident(sbName(i))
	// seq_1_to_N lives in the current schema.
	if _, err := sess.Exec(ctx, "USE "+sqltext.Ident(o.Schema)); err != nil {
		return 0, 0, err
	}
	create := fmt.Sprintf(sbCreate, name, o.Engine)
	if o.EngineOption != "" {
		create += " " + o.EngineOption
	}
	if _, err := sess.Exec(ctx, create); err != nil {
		return 0, 0, fmt.Errorf("create %s: %w", name, err)
	}
	log.Infof("inserting %d rows into %s", o.Rows, name)
	t0 := time.Now()
	lastLog := t0
	for from := int64(1); from <= o.Rows; {
		to := min(from+prepareChunk-1, o.Rows)
		if serverSide {
			err = insertServerSide(ctx, sess, name, from, to, o.Rows)
		} else {
			err = insertClientSide(ctx, sess, name, from, to, o.Rows, int64(i))
		}
		if err != nil {
			return 0, 0, err
		}
		from = to + 1
		if time.Since(lastLog) > 5*time.Second && to < o.Rows {
			log.Infof("%s: %d of %d rows", name, to, o.Rows)
			lastLog = time.Now()
		}
	}
	loadSec = time.Since(t0).Seconds()
	t1 := time.Now()
	log.Infof("adding index k_%d to %s", i, name)
	if _, err := sess.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD INDEX k_%d (k)", name, i)); err != nil {
		return 0, 0, fmt.Errorf("add the index on k to %s: %w", name, err)
	}
	return loadSec, time.Since(t1).Seconds(), nil
}

// digits is an 11-digit random group, as sysbench's "###########".
const digits = "LPAD(FLOOR(RAND() * 100000000000), 11, '0')"

func digitGroups(n int) string {
	return "CONCAT_WS('-'" + strings.Repeat(", "+digits, n) + ")"
}

func insertServerSide(ctx context.Context, sess *connection.Session, name string, from, to, rows int64) error {
	q := fmt.Sprintf("INSERT INTO %s (id, k, c, pad) SELECT seq, 1 + FLOOR(RAND() * %d), %s, %s FROM seq_%d_to_%d",
		name, rows, digitGroups(10), digitGroups(5), from, to)
	if _, err := sess.Exec(ctx, q); err != nil {
		return fmt.Errorf("fill %s: %w", name, err)
	}
	return nil
}

func insertClientSide(ctx context.Context, sess *connection.Session, name string, from, to, rows, seed int64) error {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(from)))
	var b strings.Builder
	group := func(n int) {
		for g := 0; g < n; g++ {
			if g > 0 {
				b.WriteByte('-')
			}
			fmt.Fprintf(&b, "%011d", rng.Int64N(100_000_000_000))
		}
	}
	for lo := from; lo <= to; lo += 1000 {
		hi := min(lo+999, to)
		b.Reset()
		b.WriteString("INSERT INTO " + name + " (id, k, c, pad) VALUES ")
		for id := lo; id <= hi; id++ {
			if id > lo {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d,'", id, 1+rng.Int64N(rows))
			group(10)
			b.WriteString("','")
			group(5)
			b.WriteString("')")
		}
		if _, err := sess.Exec(ctx, b.String()); err != nil {
			return fmt.Errorf("fill %s: %w", name, err)
		}
	}
	return nil
}
