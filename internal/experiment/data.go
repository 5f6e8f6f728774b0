package experiment

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/bench"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/periodic"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// An experiment writes only into a schema it created, marked as its own (a schema comment
// where the server has them, a marker table elsewhere), and drops only a schema with that
// mark.
const (
	ownerComment = "created by innowarm experiment, which may drop it"
	ownerTable   = "innowarm_experiment_owner"
)

// ownedSchema reads whether name exists and carries the experiment's mark.
func ownedSchema(ctx context.Context, conn *connection.Conn, name string) (exists, owned bool, err error) {
	return markedSchema(ctx, conn, name, ownerComment, ownerTable)
}

// markedSchema reads whether name exists and carries a mark: the schema comment, or else
// the marker table.
func markedSchema(ctx context.Context, conn *connection.Conn, name, comment, table string) (exists, owned bool, err error) {
	q := "SELECT '' FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"
	if conn.Server.SchemaComments() {
		q = "SELECT SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"
	}
	var got string
	err = conn.DB.QueryRowContext(ctx, q, name).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("look up schema %s: %w", sqltext.Ident(name), err)
	}
	if got == comment {
		return true, true, nil
	}
	var n int
	err = conn.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", name, table).Scan(&n)
	if err != nil {
		return true, false, fmt.Errorf("look up schema %s: %w", sqltext.Ident(name), err)
	}
	return true, n > 0, nil
}

// claimSchema creates the experiment's schema, replacing one an earlier experiment left;
// a schema that is not the experiment's is refused.
func claimSchema(ctx context.Context, conn *connection.Conn, name string, log *logx.Logger) error {
	if name == "" {
		return exitcode.UsageError(errors.New("the schema name is empty: give --schema"))
	}
	exists, owned, err := ownedSchema(ctx, conn, name)
	if err != nil {
		return err
	}
	if exists && !owned {
		return exitcode.UsageError(fmt.Errorf("schema %s exists and was not created by innowarm experiment: choose another with --schema (an experiment writes only into a schema of its own)", sqltext.Ident(name)))
	}
	if exists {
		log.Infof("dropping schema %s, left by an earlier experiment", sqltext.Ident(name))
		if _, err := conn.DB.ExecContext(ctx, "DROP SCHEMA "+sqltext.Ident(name)); err != nil {
			return fmt.Errorf("drop schema %s: %w", sqltext.Ident(name), err)
		}
	}
	comments := conn.Server.SchemaComments()
	q := "CREATE SCHEMA " + sqltext.Ident(name)
	if comments {
		q += " COMMENT " + sqltext.String(ownerComment)
	}
	if _, err := conn.DB.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("create schema %s: %w", sqltext.Ident(name), err)
	}
	if !comments {
		mark := "CREATE TABLE " + sqltext.Ident(name) + "." + sqltext.Ident(ownerTable) + " (note VARCHAR(64)) COMMENT " + sqltext.String(ownerComment)
		if _, err := conn.DB.ExecContext(ctx, mark); err != nil {
			return fmt.Errorf("mark schema %s as innowarm's: %w", sqltext.Ident(name), err)
		}
	}
	return nil
}

// dropSchema drops the experiment's schema after checking its mark once more.
func dropSchema(ctx context.Context, conn *connection.Conn, name string) error {
	exists, owned, err := ownedSchema(ctx, conn, name)
	if err != nil || !exists {
		return err
	}
	if !owned {
		return fmt.Errorf("schema %s no longer carries innowarm's mark: not dropping it", sqltext.Ident(name))
	}
	if _, err := conn.DB.ExecContext(ctx, "DROP SCHEMA "+sqltext.Ident(name)); err != nil {
		return fmt.Errorf("drop schema %s: %w", sqltext.Ident(name), err)
	}
	return nil
}

// loadChunk is the rows one INSERT ... SELECT writes: a progress step.
const loadChunk = 100_000

// TableInfo is the size of a table an experiment built.
type TableInfo struct {
	Name         string           `json:"name"`
	Rows         int64            `json:"rows"`
	Indexes      map[string]int64 `json:"index_leaf_pages"`
	Pages        int64            `json:"pages"` // all indexes, allocated
	Bytes        int64            `json:"bytes"`
	Space        uint32           `json:"space_id"`
	LoadSeconds  float64          `json:"load_seconds"`
	IndexSeconds float64          `json:"index_seconds"`
}

// testDataDDL is the 2017 benchmark's table; the secondary key comes after the load.
const testDataDDL = "CREATE TABLE %s (\n" +
	"  id INT NOT NULL AUTO_INCREMENT,\n" +
	"  random_str VARCHAR(255) DEFAULT NULL,\n" +
	"  random_str2 VARCHAR(255) DEFAULT NULL,\n" +
	"  PRIMARY KEY (id)\n" +
	") ENGINE=InnoDB STATS_AUTO_RECALC=0"

// buildTestData creates schema.test_data with rows unique random strings, fast: generated
// by the server in id order without the secondary key, which is added afterwards.
func buildTestData(ctx context.Context, conn *connection.Conn, schema string, rows int64, prog progress.Config, log *logx.Logger) (*TableInfo, error) {
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if _, err := sess.Exec(ctx, "USE "+sqltext.Ident(schema)); err != nil {
		return nil, err
	}
	name := sqltext.Ident(schema) + ".`test_data`"
	if _, err := sess.Exec(ctx, fmt.Sprintf(testDataDDL, name)); err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	info := &TableInfo{Name: "test_data", Rows: rows}
	prog.Title, prog.Unit, prog.Total = "load test_data", "rows", rows
	rep := progress.New(prog)
	t0 := time.Now()
	for from := int64(1); from <= rows; from += loadChunk {
		to := min(from+loadChunk-1, rows)
		srv := conn.Server
		q := fmt.Sprintf("INSERT INTO %s (id, random_str, random_str2) SELECT seq, %s, %s FROM %s",
			name, srv.Hex32("CONCAT(seq, '-', RAND())"), srv.Hex32("CONCAT(RAND(), '-', seq)"), srv.Series("", from, to)+" ORDER BY seq")
		if _, err := sess.Exec(ctx, q); err != nil {
			rep.Finish(false)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("fill %s: %w", name, err)
		}
		rep.SetDone(to)
	}
	rep.Finish(true)
	info.LoadSeconds = time.Since(t0).Seconds()
	log.Infof("loaded %d rows into %s in %.1f s; adding the index on random_str", rows, name, info.LoadSeconds)
	t1 := time.Now()
	if err := alterWithProgress(ctx, conn, sess, "ALTER TABLE "+name+" ADD INDEX `random_str` (`random_str`)", "index random_str", log); err != nil {
		return nil, err
	}
	info.IndexSeconds = time.Since(t1).Seconds()
	if err := measureTable(ctx, conn, schema, info); err != nil {
		return nil, err
	}
	return info, nil
}

// alterWithProgress runs a long statement and logs its progress every 5 s: MariaDB reports
// ALTER TABLE's in information_schema.PROCESSLIST; elsewhere the time it has taken.
func alterWithProgress(ctx context.Context, conn *connection.Conn, sess *connection.Session, stmt, what string, log *logx.Logger) error {
	t0 := time.Now()
	stop := periodic.Every(ctx, 5*time.Second, func(ctx context.Context) bool {
		var pct sql.NullFloat64
		if conn.Server.IsMariaDB() {
			_ = conn.DB.QueryRowContext(ctx, "SELECT PROGRESS FROM information_schema.PROCESSLIST WHERE ID = ?", sess.ID()).Scan(&pct)
		}
		if pct.Valid && pct.Float64 > 0 {
			log.Infof("%s: %.0f%% after %.0f s", what, pct.Float64, time.Since(t0).Seconds())
		} else {
			log.Infof("%s: running for %.0f s", what, time.Since(t0).Seconds())
		}
		return true
	})
	_, err := sess.Exec(ctx, stmt)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// measureTable refreshes the table's persistent statistics and reads its size: leaf pages
// per index (mysql.innodb_index_stats, through the catalog) and allocated bytes.
func measureTable(ctx context.Context, conn *connection.Conn, schema string, info *TableInfo) error {
	name := sqltext.Ident(schema) + "." + sqltext.Ident(info.Name)
	// No background recalculation of the statistics later: it reads pages, and the
	// experiments count every page read.
	if _, err := conn.DB.ExecContext(ctx, "ALTER TABLE "+name+" STATS_AUTO_RECALC = 0"); err != nil {
		return fmt.Errorf("alter %s: %w", name, err)
	}
	if _, err := conn.DB.ExecContext(ctx, "ANALYZE TABLE "+name); err != nil {
		return fmt.Errorf("analyze %s: %w", name, err)
	}
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{schema}})
	if err != nil {
		return err
	}
	var t *catalog.Table
	for _, c := range cat.Tables {
		if c.Name == info.Name {
			t = c
		}
	}
	if t == nil {
		return fmt.Errorf("table %s not found after building it", name)
	}
	if len(t.Parts) > 0 && t.Parts[0].SpaceKnown {
		info.Space = t.Parts[0].Space
	}
	info.Indexes = map[string]int64{}
	info.Pages, info.Bytes = 0, t.DataLength+t.IndexLength
	for _, ix := range t.Indexes {
		s := ix.Sizes[""]
		leaves := s.LeafPages
		if leaves <= 1 {
			leaves = s.Pages
		}
		info.Indexes[ix.Name] = leaves
		info.Pages += s.Pages
	}
	return nil
}

// residentPages counts the pages of a tablespace in the buffer pool.
func residentPages(ctx context.Context, conn *connection.Conn, space uint32) (int64, error) {
	var n int64
	err := conn.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+conn.Server.BufferPageLRUTable()+" WHERE SPACE = ?", space).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count the table's pages in the pool: %w", err)
	}
	return n, nil
}

// idBatch is how many ids one IN list carries.
const idBatch = 1000

func inList(ids []int64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

// writeLookups writes the 2017 benchmark's query file: n lookups of distinct existing
// random_str values, one per line, "select * from test_data where random_str = '...';".
// The ids are drawn here and only their keys are read, in batches of 1,000 primary-key
// lookups: the file needs the keys on the client anyway, no table is scanned, and it works
// on any server (SELECT ... INTO OUTFILE would need the FILE privilege and the server's
// file system).
func writeLookups(ctx context.Context, conn *connection.Conn, schema string, rows, n int64, seed uint64, path string) (int64, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	ids := bench.DistinctIDs(rng, rows, n)
	f, err := os.Create(path)
	if err != nil {
		return 0, exitcode.UsageError(fmt.Errorf("cannot write the query file %s: %w", path, err))
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	seen := map[string]bool{}
	keys := make(map[int64]string, idBatch)
	var written int64
	for start := 0; start < len(ids); start += idBatch {
		batch := ids[start:min(start+idBatch, len(ids))]
		clear(keys)
		if err := readKeys(ctx, conn, schema, batch, keys); err != nil {
			return 0, err
		}
		for _, id := range batch { // in the drawn (random) order
			k, ok := keys[id]
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			fmt.Fprintf(w, "select * from test_data where random_str = %s;\n", sqltext.String(k))
			written++
		}
	}
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("write the query file %s: %w", path, err)
	}
	if written == 0 {
		return 0, errors.New("test_data has no rows to look up")
	}
	return written, f.Close()
}

// readKeys reads the random_str of the given ids into keys.
func readKeys(ctx context.Context, conn *connection.Conn, schema string, ids []int64, keys map[int64]string) error {
	rs, err := conn.DB.QueryContext(ctx, "SELECT id, random_str FROM "+sqltext.Ident(schema)+".`test_data` WHERE id IN ("+inList(ids)+")")
	if err != nil {
		return fmt.Errorf("read lookup keys: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var id int64
		var k string
		if err := rs.Scan(&id, &k); err != nil {
			return fmt.Errorf("read lookup keys: %w", err)
		}
		keys[id] = k
	}
	return rs.Err()
}

// dropExperimentSchema drops the schema an experiment created, on a connection of its own
// (the run's may be gone, its context cancelled), unless --keep-data asked to keep it.
func dropExperimentSchema(ctx context.Context, t *Target, schema string, keep bool, log *logx.Logger) {
	if keep {
		log.Infof("kept schema %s (--keep-data)", sqltext.Ident(schema))
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	c, err := t.Connect(dctx)
	if err != nil {
		log.Warnf("could not drop schema %s: %v", sqltext.Ident(schema), err)
		return
	}
	defer c.Close()
	if err := dropSchema(dctx, c, schema); err != nil {
		log.Warnf("%v", err)
	}
}
