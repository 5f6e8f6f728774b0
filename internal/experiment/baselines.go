package experiment

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/warm"
)

// Warmup is what one way of warming the pool did after a cold restart.
type Warmup struct {
	Method     string   `json:"method"`
	Seconds    float64  `json:"seconds"`    // wall time, planning included
	PagesRead  int64    `json:"pages_read"` // Innodb_pages_read during the warm-up
	PagesAdded int64    `json:"pages_added"`
	MBps       float64  `json:"mb_per_s"`
	Detail     string   `json:"detail,omitempty"`
	Statements []string `json:"statements,omitempty"`
}

// measureWarmup times f and counts the pages it brought in.
func measureWarmup(ctx context.Context, conn *connection.Conn, w *Warmup, f func() error) error {
	read0, err := statusInt(ctx, conn, "Innodb_pages_read")
	if err != nil {
		return err
	}
	data0, err := statusInt(ctx, conn, "Innodb_buffer_pool_pages_data")
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := f(); err != nil {
		return err
	}
	w.Seconds = time.Since(t0).Seconds()
	read1, err := statusInt(ctx, conn, "Innodb_pages_read")
	if err != nil {
		return err
	}
	data1, err := statusInt(ctx, conn, "Innodb_buffer_pool_pages_data")
	if err != nil {
		return err
	}
	w.PagesRead, w.PagesAdded = read1-read0, data1-data0
	if w.Seconds > 0 {
		w.MBps = float64(w.PagesRead*int64(conn.Server.PageSize)) / 1e6 / w.Seconds
	}
	return nil
}

// warmOptions are the plan and run settings innowarm warm uses by default.
func warmOptions(prog progress.Config, cat *catalog.Catalog) (warm.Options, warm.RunOptions) {
	return warm.Options{Order: "small-first", SplitPages: warm.DefaultSplitPages, LockWaitTimeout: 10 * time.Second},
		warm.RunOptions{StatementTimeout: time.Hour, LockWaitTimeout: 10 * time.Second, Progress: prog, Catalog: cat}
}

// innowarmWarm warms the schema as 'innowarm warm -D schema --method M' does.
func innowarmWarm(ctx context.Context, conn *connection.Conn, schema, method string, pace pacing.Config, prog progress.Config, log *logx.Logger) (*Warmup, error) {
	w := &Warmup{}
	err := measureWarmup(ctx, conn, w, func() error {
		cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{schema}})
		if err != nil {
			return err
		}
		m, why, err := warm.ChooseSelectionMethod(ctx, conn, method, cat, false)
		if err != nil {
			return err
		}
		w.Method, w.Detail = "innowarm warm ("+m+")", why
		log.Infof("innowarm warm -D %s --method %s: %s", schema, m, why)
		po, ro := warmOptions(prog, cat)
		ro.Pacing = pace
		var res *warm.Result
		if m == warm.MethodNative {
			res, err = warm.NativeFromCatalog(ctx, conn, cat, po, ro)
		} else {
			var pl *warm.Plan
			if pl, err = warm.BuildPlan(ctx, conn, cat, po); err != nil {
				return err
			}
			res, err = warm.Run(ctx, conn, pl, ro)
		}
		if err != nil {
			return err
		}
		if !res.Complete() && res.Native == nil {
			return fmt.Errorf("innowarm warm did %d of %d units: %s", res.UnitsDone, res.Units, strings.Join(res.Errors, "; "))
		}
		return nil
	})
	return w, err
}

// oldToolScans warms the way the 2017 mysql-warmup gem did: one connection, one statement
// per key column that DESCRIBE shows, in table order.
func oldToolScans(ctx context.Context, conn *connection.Conn, schema string, log *logx.Logger) (*Warmup, error) {
	w := &Warmup{Method: "old-tool scans (mysql-warmup style)", Detail: "one connection, one statement per key column of DESCRIBE"}
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	var tables []string
	err = sess.Query(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME <> ? ORDER BY TABLE_NAME", []any{schema, ownerTable}, func(r *sql.Rows) error {
		var t string
		if err := r.Scan(&t); err != nil {
			return err
		}
		tables = append(tables, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		stmts, err := oldToolStatements(ctx, sess, schema, t)
		if err != nil {
			return nil, err
		}
		w.Statements = append(w.Statements, stmts...)
	}
	err = measureWarmup(ctx, conn, w, func() error {
		for _, q := range w.Statements {
			t0 := time.Now()
			var n int64
			if err := sess.QueryRow(ctx, q, nil, &n); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("old-tool scan %s: %w", q, err)
			}
			log.Infof("old-tool scan: %s (%.1f s)", q, time.Since(t0).Seconds())
		}
		return nil
	})
	return w, err
}

// oldToolStatements builds the gem's statements for one table from DESCRIBE: for the
// primary key column a comparison of a column without a key with 0 (a full scan of the
// clustered index), for other key columns LIKE '%0%' (a scan of their index).
func oldToolStatements(ctx context.Context, sess *connection.Session, schema, table string) ([]string, error) {
	type col struct{ name, key string }
	var cols []col
	err := sess.Query(ctx, "DESCRIBE "+sqltext.Ident(schema)+"."+sqltext.Ident(table), nil, func(r *sql.Rows) error {
		var field, typ, null, key string
		var def, extra sql.NullString
		if err := r.Scan(&field, &typ, &null, &key, &def, &extra); err != nil {
			return err
		}
		cols = append(cols, col{field, key})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", sqltext.Ident(table), err)
	}
	nonKey := ""
	for _, c := range cols {
		if c.key == "" {
			nonKey = c.name
			break
		}
	}
	name := sqltext.Ident(schema) + "." + sqltext.Ident(table)
	var out []string
	for _, c := range cols {
		switch {
		case c.key == "":
		case c.key == "PRI" && nonKey != "":
			out = append(out, fmt.Sprintf("select count(*) from %s where %s = 0 or %s = '0'", name, sqltext.Ident(nonKey), sqltext.Ident(nonKey)))
		default:
			out = append(out, fmt.Sprintf("select count(*) from %s where %s LIKE '%%0%%'", name, sqltext.Ident(c.name)))
		}
	}
	return out, nil
}

// innodbDump is a copy of the server's own buffer-pool dump.
type innodbDump struct {
	Pct     int     `json:"pct"`
	Pages   int64   `json:"pages"`
	Seconds float64 `json:"dump_seconds"`
	pages   []warm.PageID
}

// dumpNow has the server dump its pool (innodb_buffer_pool_dump_pct=pct, then
// innodb_buffer_pool_dump_now), waits for the dump and keeps its page list. The dump file is
// removed afterwards: preserveDumpFile put the server's own aside.
func dumpNow(ctx context.Context, conn *connection.Conn, pct int, log *logx.Logger) (*innodbDump, error) {
	path := conn.Server.DumpFilePath()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("clear the dump file %s: %w", path, err)
	}
	if _, err := conn.DB.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_dump_pct = %d", pct)); err != nil {
		return nil, fmt.Errorf("set innodb_buffer_pool_dump_pct: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL innodb_buffer_pool_dump_pct = %d", conn.Server.DumpPct)); err != nil {
			log.Warnf("could not restore innodb_buffer_pool_dump_pct to %d: %v", conn.Server.DumpPct, err)
		}
	}()
	t0 := time.Now()
	if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_dump_now = ON"); err != nil {
		return nil, fmt.Errorf("start the buffer pool dump: %w", err)
	}
	var status string
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if err := conn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_dump_status'").Scan(new(string), &status); err != nil {
			return nil, fmt.Errorf("follow the buffer pool dump: %w", err)
		}
		_, statErr := os.Stat(path)
		if strings.Contains(status, "completed") && statErr == nil {
			break
		}
		if strings.Contains(status, "rror") || strings.Contains(status, "annot") {
			return nil, fmt.Errorf("the server's buffer pool dump failed: %s", status)
		}
		if time.Since(t0) > 5*time.Minute {
			return nil, fmt.Errorf("the server's buffer pool dump did not finish within 5 minutes: %s", status)
		}
	}
	d := &innodbDump{Pct: pct, Seconds: time.Since(t0).Seconds()}
	pages, err := readDumpFile(path)
	if err != nil {
		return nil, err
	}
	os.Remove(path)
	d.pages, d.Pages = warm.SortPages(pages), int64(len(pages))
	log.Infof("InnoDB dump at innodb_buffer_pool_dump_pct=%d: %d pages in %.2f s", pct, d.Pages, d.Seconds)
	return d, nil
}

// readDumpFile reads InnoDB's dump format: "space,page" lines.
func readDumpFile(path string) ([]warm.PageID, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the server's dump file: %w", err)
	}
	defer f.Close()
	var out []warm.PageID
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sp, pg, ok := strings.Cut(strings.TrimSpace(sc.Text()), ",")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(strings.TrimSpace(sp), 10, 32)
		p, err2 := strconv.ParseUint(strings.TrimSpace(pg), 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("the server's dump file %s has a line %q that is not space,page", path, sc.Text())
		}
		out = append(out, warm.MakePageID(uint32(s), uint32(p)))
	}
	return out, sc.Err()
}

// innodbLoad puts a dump back where the server reads it and has the server load it
// (innodb_buffer_pool_load_now), following Innodb_buffer_pool_load_status to the end.
func innodbLoad(ctx context.Context, conn *connection.Conn, d *innodbDump, prog progress.Config, log *logx.Logger) (*Warmup, error) {
	w := &Warmup{Method: fmt.Sprintf("InnoDB load (dump_pct %d)", d.Pct), Detail: fmt.Sprintf("%d pages dumped after the hot pass", d.Pages)}
	err := measureWarmup(ctx, conn, w, func() error {
		prog.Title = "InnoDB load"
		res, err := warm.LoadNative(ctx, conn, d.pages, prog, log, warm.Until{})
		if err != nil {
			return err
		}
		w.Detail += "; server load status: " + res.Status
		return nil
	})
	return w, err
}

// preserveDumpFile sets the server's own dump file aside for the experiment and returns
// what puts it back.
func preserveDumpFile(conn *connection.Conn, log *logx.Logger) (func(), error) {
	path := conn.Server.DumpFilePath()
	saved := path + ".innowarm-experiment-saved"
	if _, err := os.Stat(saved); err == nil {
		log.Warnf("%s exists from an earlier interrupted experiment; it will be restored as %s", saved, path)
		return func() { restoreFile(saved, path, log) }, nil
	}
	if _, err := os.Stat(path); err != nil {
		return func() { os.Remove(path) }, nil //nolint:nilerr // no file: nothing to set aside, only ours to remove
	}
	if err := os.Rename(path, saved); err != nil {
		return nil, fmt.Errorf("set the server's dump file %s aside: %w", path, err)
	}
	return func() { restoreFile(saved, path, log) }, nil
}

func restoreFile(saved, path string, log *logx.Logger) {
	os.Remove(path)
	if err := os.Rename(saved, path); err != nil {
		log.Warnf("could not restore the server's dump file: mv %s %s: %v", saved, path, err)
	}
}

// captureManifest writes the pool's pages of the schema to a manifest (innowarm snapshot).
func captureManifest(ctx context.Context, conn *connection.Conn, schema, path string, log *logx.Logger) (*snapshot.Result, error) {
	res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, Filter: catalog.Filter{Schemas: []string{schema}}, ToolVersion: "innowarm experiment"})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	log.Infof("snapshot: %d pages of %s in %.2f s → %s", res.Entries, sqltext.Ident(schema), res.Seconds, path)
	return res, nil
}

// manifestWarm warms from a manifest as 'innowarm warm --from FILE --method M' does.
// manifestWarm warms a manifest's pages as 'innowarm warm --from' does; underTraffic as
// with --wait-for-server (queries arrive with the warm).
// manifestWarmOptions are innowarm warm --from's flags an experiment sets.
type manifestWarmOptions struct {
	Method       string // --method
	ByKey        string // --by-key ("": auto)
	Parallel     int    // --parallel (0: the default)
	UnderTraffic bool   // --wait-for-server: queries arrive with the warm
	Pacing       pacing.Config
}

func manifestWarm(ctx context.Context, conn *connection.Conn, path string, mo manifestWarmOptions, prog progress.Config, log *logx.Logger) (*Warmup, error) {
	method := mo.Method
	w := &Warmup{}
	err := measureWarmup(ctx, conn, w, func() error {
		mf, err := manifest.Load(path)
		if err != nil {
			return err
		}
		if err := mf.CheckPageSize(conn.Server.PageSize); err != nil {
			return err
		}
		m, why, err := warm.ChooseMethod(ctx, conn, method)
		if err != nil {
			return err
		}
		w.Method, w.Detail = "innowarm warm --from manifest ("+m+")", why
		resolved, err := warm.Resolve(ctx, conn, mf)
		if err != nil {
			return err
		}
		po, ro := warmOptions(prog, nil)
		po.ExpectTraffic = mo.UnderTraffic
		po.ByKey, po.Parallel = mo.ByKey, mo.Parallel
		ro.Pacing = mo.Pacing
		res, err := warm.FromManifest(ctx, conn, resolved, m, po, ro)
		if err != nil {
			return err
		}
		if res.Manifest != nil {
			w.Detail += fmt.Sprintf("; %d of %d manifest pages requested, coverage %.1f%% → %.1f%%", res.Manifest.Requested, res.Manifest.Entries, 100*res.Manifest.CoverageBefore, 100*res.Manifest.CoverageAfter)
		}
		return nil
	})
	return w, err
}
