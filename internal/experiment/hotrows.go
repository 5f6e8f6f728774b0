package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/bench"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// KneeMissesPerQuery is where a hot set stops fitting: from this many buffer-pool misses
// per query on (one query in 20 goes to the disk), the pool no longer holds the set.
const KneeMissesPerQuery = 0.05

// HotrowsOptions configure the hot-rows experiment.
type HotrowsOptions struct {
	Schema   string
	Rows     int64 // rows of the sbtest-like table: several times the pool
	Queries  int64 // timed selects per hot-set size
	MinHot   int64 // smallest hot set (100)
	MaxHot   int64 // largest; 0: the whole table
	Seed     uint64
	Dir      string // scratch directory for the query lists ("": a temporary one)
	KeepData bool
	// MakeYoung sets innodb_old_blocks_time=0 while measuring (restored after): a page is
	// then made young on its second read, as InnoDB did in 2007. With the server's setting
	// (1000 ms) a hot set of more than the old sublist (3/8 of the pool) that is read fast
	// keeps evicting itself from the old sublist and never becomes young.
	MakeYoung bool
	Progress  progress.Config
	Log       *logx.Logger
}

// HotPoint is one hot-set size of one layout.
type HotPoint struct {
	K int64 `json:"k"`
	// Pages is how many leaf pages of the clustered index hold the K rows: each random hot
	// row tends to sit on a page of its own.
	Pages int64 `json:"distinct_pages"`
	// ReadOnceReads are the pages read from disk while the set was read once before timing.
	ReadOnceReads int64 `json:"read_once_reads"`
	// YoungRounds are the further reads of the set, innodb_old_blocks_time apart, that made
	// its pages young.
	YoungRounds    int     `json:"young_rounds"`
	Queries        int64   `json:"queries"`
	Seconds        float64 `json:"seconds"`
	QPS            float64 `json:"qps"`
	P95            float64 `json:"p95_ms"`
	Misses         int64   `json:"misses"`
	ReadAhead      int64   `json:"read_ahead"`
	MissesPerQuery float64 `json:"misses_per_query"`
	Fits           bool    `json:"fits"`
}

// Knee is where a hot set stopped fitting: Below is the largest K that fitted, At the first
// that did not (0 when every K fitted).
type Knee struct {
	Below int64 `json:"last_fitting_k"`
	At    int64 `json:"first_not_fitting_k"`
}

// Found reports whether the set stopped fitting within the measured range.
func (k Knee) Found() bool { return k.At > 0 }

// HotrowsParams are the options as the report shows them.
type HotrowsParams struct {
	Rows    int64  `json:"rows"`
	Queries int64  `json:"queries_per_k"`
	MinHot  int64  `json:"min_hot"`
	MaxHot  int64  `json:"max_hot"`
	Schema  string `json:"schema"`
	Seed    uint64 `json:"seed"`
}

// HotrowsResult is everything the hot-rows experiment measured.
type HotrowsResult struct {
	Header
	Params         HotrowsParams `json:"parameters"`
	Data           *TableInfo    `json:"table"`
	ClusteredData  *TableInfo    `json:"clustered_table"`
	RowBytes       float64       `json:"gross_row_bytes"`     // the table's bytes over its rows
	RowsPerPage    float64       `json:"rows_per_leaf_page"`  // of the clustered index: the amplification
	ProjectedRows  int64         `json:"projected_rows"`      // pool bytes over gross row bytes
	TableToPool    float64       `json:"table_to_pool_ratio"` // table pages over pool pages
	Random         []HotPoint    `json:"random"`
	Clustered      []HotPoint    `json:"clustered"`
	KneeRandom     Knee          `json:"knee_random"`
	KneeClustered  Knee          `json:"knee_clustered"`
	KneeMissesRate float64       `json:"knee_misses_per_query"`
	// OldBlocksTimeMs is innodb_old_blocks_time: how long a page stays in the old sublist
	// before a further read makes it young.
	OldBlocksTimeMs int64 `json:"innodb_old_blocks_time_ms"`
}

// ValidateHotrows checks the options that need no server.
func ValidateHotrows(o HotrowsOptions) error {
	switch {
	case o.Rows < 1:
		return exitcode.BadValue("Rows", "must be at least 1, got %d", o.Rows)
	case o.Rows > 2_000_000_000:
		return exitcode.BadValue("Rows", "%d is more than an INT id holds", o.Rows)
	case o.Queries < 1:
		return exitcode.BadValue("Queries", "must be at least 1, got %d", o.Queries)
	case o.MinHot < 1:
		return exitcode.BadValue("MinHot", "must be at least 1, got %d", o.MinHot)
	case o.MaxHot < 0:
		return exitcode.BadValue("MaxHot", "%d: use 0 (the default: 128 times the pool's pages) or at least the least hot rows, %d", o.MaxHot, o.MinHot)
	case o.MaxHot != 0 && o.MaxHot < o.MinHot:
		return exitcode.BadValue("MaxHot", "%d is less than the least hot rows, %d", o.MaxHot, o.MinHot)
	case o.MinHot > o.Rows:
		return exitcode.BadValue("MinHot", "%d is more than the %d rows", o.MinHot, o.Rows)
	}
	return nil
}

// hotSizes are the hot-set sizes: from min, doubling, up to max.
func hotSizes(minK, maxK int64) []int64 {
	var out []int64
	for k := minK; k <= maxK; k *= 2 {
		out = append(out, k)
	}
	return out
}

// Hotrows shows that InnoDB caches pages, not rows: on an sbtest-like table several times
// the pool, random hot sets of K rows (K doubling) are read once, then selected at random;
// misses per query show where a set stops fitting. The same rows clustered into a
// contiguous id range in a copy of the table move that knee by about the rows per page.
func Hotrows(ctx context.Context, t *Target, o HotrowsOptions) (*HotrowsResult, error) {
	if err := ValidateHotrows(o); err != nil {
		return nil, err
	}
	if o.Schema == "" {
		o.Schema = "innowarm_hotrows"
	}
	conn, h, log, err := begin(ctx, t, "hotrows", o.Log)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	res := &HotrowsResult{Header: h, KneeMissesRate: KneeMissesPerQuery}
	if o.MaxHot == 0 {
		// Clustered, a page holds ~70 sbtest rows: the clustered knee lies near 70 times the
		// pool's pages; twice that shows it.
		o.MaxHot = max(o.MinHot, 128*res.PoolPages)
	}
	o.MaxHot = min(o.MaxHot, o.Rows)
	res.Params = HotrowsParams{Rows: o.Rows, Queries: o.Queries, MinHot: o.MinHot, MaxHot: o.MaxHot, Schema: o.Schema, Seed: o.Seed}
	t0 := time.Now()
	defer res.finish(t0)
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "innowarm-hotrows-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	if err := claimSchema(ctx, conn, o.Schema, log); err != nil {
		return nil, err
	}
	if !o.KeepData {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := dropSchema(dctx, conn, o.Schema); err != nil {
				log.Warnf("%v", err)
			}
		}()
	}
	// The sbtest table, as 'innowarm bench prepare' builds it.
	if _, err := bench.Prepare(ctx, conn, bench.PrepareOptions{Schema: o.Schema, Tables: 1, Rows: o.Rows, Engine: "InnoDB", Threads: 1, AllowWrites: true}, log); err != nil {
		return nil, err
	}
	res.Data = &TableInfo{Name: "sbtest1", Rows: o.Rows}
	if err := measureTable(ctx, conn, o.Schema, res.Data); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x407))
	hot := bench.DistinctIDs(rng, o.Rows, o.MaxHot) // nested: the first K are the hot set of size K
	if err := buildClustered(ctx, conn, o.Schema, hot, o.Rows, log); err != nil {
		return nil, err
	}
	res.ClusteredData = &TableInfo{Name: "sbtest_clustered", Rows: o.Rows}
	if err := measureTable(ctx, conn, o.Schema, res.ClusteredData); err != nil {
		return nil, err
	}
	leaves := res.Data.Indexes["PRIMARY"]
	cleaves := res.ClusteredData.Indexes["PRIMARY"]
	if leaves < 1 || cleaves < 1 {
		return nil, errors.New("the tables' primary keys have no leaf pages in mysql.innodb_index_stats")
	}
	res.RowsPerPage = float64(o.Rows) / float64(leaves)
	res.RowBytes = float64(res.Data.Bytes) / float64(o.Rows)
	if res.RowBytes > 0 {
		res.ProjectedRows = int64(float64(res.PoolBytes) / res.RowBytes)
	}
	if res.PoolPages > 0 {
		res.TableToPool = float64(res.Data.Pages) / float64(res.PoolPages)
		if res.TableToPool < 2 {
			res.Notes = append(res.Notes, fmt.Sprintf("the table is only %.1f times the pool: use more --rows (or a smaller pool) to see the clustered knee", res.TableToPool))
		}
	}
	log.Infof("sbtest1: %s rows, %s leaf pages (%.1f rows a page, %.0f bytes a row); pool %s pages; the table is %.1f times the pool",
		commas(o.Rows), commas(leaves), res.RowsPerPage, res.RowBytes, commas(res.PoolPages), res.TableToPool)

	crpp := float64(o.Rows) / float64(cleaves)
	sizes := hotSizes(o.MinHot, o.MaxHot)
	layouts := []struct {
		name, table string
		out         *[]HotPoint
		id          func(rank int64) int64
		pages       func(k int64) int64
	}{
		{"random", "sbtest1", &res.Random, func(r int64) int64 { return hot[r] }, func(k int64) int64 { return distinctPages(hot[:k], res.RowsPerPage) }},
		{"clustered", "sbtest_clustered", &res.Clustered, func(r int64) int64 { return r + 1 }, func(k int64) int64 { return int64(math.Ceil(float64(k) / crpp)) }},
	}
	var oldBlocksMs int64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_old_blocks_time").Scan(&oldBlocksMs); err != nil {
		return nil, fmt.Errorf("read innodb_old_blocks_time: %w", err)
	}
	if o.MakeYoung && oldBlocksMs != 0 {
		if _, err := conn.DB.ExecContext(ctx, "SET GLOBAL innodb_old_blocks_time = 0"); err != nil {
			return nil, fmt.Errorf("set innodb_old_blocks_time to 0 (needs SUPER or SYSTEM_VARIABLES_ADMIN; without making pages young the server's setting stays): %w", err)
		}
		log.Infof("innodb_old_blocks_time set to 0 while measuring (was %d ms)", oldBlocksMs)
		defer func(was int64) {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, err := conn.DB.ExecContext(rctx, fmt.Sprintf("SET GLOBAL innodb_old_blocks_time = %d", was)); err != nil {
				log.Warnf("could not restore innodb_old_blocks_time to %d: %v (SET GLOBAL innodb_old_blocks_time = %d)", was, err, was)
			}
		}(oldBlocksMs)
		oldBlocksMs = 0
	}
	res.OldBlocksTimeMs = oldBlocksMs
	for _, l := range layouts {
		if err := settle(ctx, conn); err != nil {
			return res, err
		}
		for i, k := range sizes {
			pt, err := hotPoint(ctx, conn, o, dir, l.table, k, l.id, int64(i), time.Duration(oldBlocksMs)*time.Millisecond)
			if err != nil {
				return res, err
			}
			pt.Pages = l.pages(k)
			*l.out = append(*l.out, *pt)
			if !o.Progress.Quiet {
				log.Infof("hot rows, %s: K=%s on %s pages: %.0f QPS, p95 %.2f ms, %.3f misses a query (%s read once)",
					l.name, commas(k), commas(pt.Pages), pt.QPS, pt.P95, pt.MissesPerQuery, commas(pt.ReadOnceReads))
			}
		}
	}
	res.KneeRandom, res.KneeClustered = kneeOf(res.Random), kneeOf(res.Clustered)
	return res, nil
}

// distinctPages counts the leaf pages that hold ids, with perPage rows on each page in id
// order (the table was filled in id order, so its pages are full and in key order).
func distinctPages(ids []int64, perPage float64) int64 {
	seen := map[int64]bool{}
	for _, id := range ids {
		seen[int64(float64(id-1)/perPage)] = true
	}
	return int64(len(seen))
}

// maxYoungRounds bounds the reads after the first that make a hot set's pages young.
const maxYoungRounds = 3

// kneeOf finds where a hot set stops fitting: the smallest K from which on no set fits (a
// small set disturbed once by the server's background work does not count).
func kneeOf(pts []HotPoint) Knee {
	var k Knee
	for i := len(pts) - 1; i >= 0; i-- {
		if pts[i].Fits {
			k.Below = pts[i].K
			break
		}
		k.At = pts[i].K
	}
	return k
}

// settle waits until the server has read no page for a second (background work after the
// tables were built: statistics, flushing), at most 30 s.
func settle(ctx context.Context, conn *connection.Conn) error {
	deadline := time.Now().Add(30 * time.Second)
	last, err := statusInt(ctx, conn, "Innodb_pages_read")
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		n, err := statusInt(ctx, conn, "Innodb_pages_read")
		if err != nil {
			return err
		}
		if n == last {
			return nil
		}
		last = n
	}
	return nil
}

// hotPoint measures one hot set: read each row once (and again after
// innodb_old_blocks_time, so the pages are made young as in a long-running workload), then
// time random selects of the set.
func hotPoint(ctx context.Context, conn *connection.Conn, o HotrowsOptions, dir, table string, k int64, id func(int64) int64, step int64, oldBlocks time.Duration) (*HotPoint, error) {
	name := sqltext.Ident(o.Schema) + "." + sqltext.Ident(table)
	order := make([]int64, k)
	for i := range order {
		order[i] = int64(i)
	}
	shuffle := rand.New(rand.NewPCG(o.Seed+uint64(step), 0x0c1d))
	// readSet reads every row of the set once, in a new random order each time (the server
	// sorts each IN list, but the batches fall on pages all over the table): the same order
	// every round would evict, in an LRU list too small for the set, exactly the pages the
	// round needs next.
	readSet := func() (int64, error) {
		shuffle.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		before, err := readCounters(ctx, conn)
		if err != nil {
			return 0, err
		}
		batch := make([]int64, 0, idBatch)
		for i, r := range order {
			batch = append(batch, id(r))
			if len(batch) == idBatch || i == len(order)-1 {
				var n any
				if err := conn.DB.QueryRowContext(ctx, "SELECT SUM(LENGTH(c)) FROM "+name+" WHERE id IN ("+inList(batch)+")").Scan(&n); err != nil {
					if ctx.Err() != nil {
						return 0, ctx.Err()
					}
					return 0, fmt.Errorf("read the hot set of %s: %w", table, err)
				}
				batch = batch[:0]
			}
		}
		after, err := readCounters(ctx, conn)
		if err != nil {
			return 0, err
		}
		return after.reads + after.readAhead - before.reads - before.readAhead, nil
	}
	pt := &HotPoint{K: k}
	var err error
	if pt.ReadOnceReads, err = readSet(); err != nil {
		return nil, err
	}
	// Read the set again until it is resident (or stops improving): a page read again is
	// made young (after innodb_old_blocks_time, when it is not 0), so the set settles in the
	// pool as far as it fits, as it would under a long-running workload.
	prev := pt.ReadOnceReads
	for round := 0; round < maxYoungRounds && prev > 0; round++ {
		if oldBlocks > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(oldBlocks + 50*time.Millisecond):
			}
		}
		m, err := readSet()
		if err != nil {
			return nil, err
		}
		pt.YoungRounds++
		if m == 0 || m*10 >= prev*9 { // resident, or no longer improving: it does not fit
			break
		}
		prev = m
	}
	// The same random ranks for both layouts at this K: the same rows, in the same order.
	rng := rand.New(rand.NewPCG(o.Seed+uint64(step), 0x5e1ec7))
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.sql", table, k))
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	prefix := "SELECT c FROM " + sqltext.Ident(table) + " WHERE id="
	for q := int64(0); q < o.Queries; q++ {
		fmt.Fprintf(w, "%s%d\n", prefix, id(rng.Int64N(k)))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	defer os.Remove(path)
	// The pass's misses are the server's page reads, its own included: a burst of them
	// (statistics recalculated, purge after the tables were built) fell in the pass of a
	// 44-page set on a busy machine, 0.2 misses a query against none the pass before. The
	// pass starts once the server has read nothing for a second.
	if err := settle(ctx, conn); err != nil {
		return nil, err
	}
	p, err := runPass(ctx, conn, passSpec{name: fmt.Sprintf("%s K=%d", table, k), schema: o.Schema, query: path, quiet: true}, logx.New(io.Discard, true))
	if err != nil {
		return nil, err
	}
	pt.Queries, pt.Seconds, pt.QPS, pt.P95 = p.Queries, p.Seconds, p.QPS, p.P95
	pt.Misses, pt.ReadAhead, pt.MissesPerQuery = p.Misses, p.ReadAhead, p.MissesPerQuery()
	pt.Fits = pt.MissesPerQuery < KneeMissesPerQuery
	return pt, nil
}

// buildClustered copies sbtest1 into sbtest_clustered with the hot rows first: the row of
// hot rank r gets id r+1, every other row keeps its order after them. A hot set of any size
// K is then ids 1..K, on the fewest pages.
func buildClustered(ctx context.Context, conn *connection.Conn, schema string, hot []int64, rows int64, log *logx.Logger) error {
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	src, dst, rank := sqltext.Ident(schema)+".`sbtest1`", sqltext.Ident(schema)+".`sbtest_clustered`", sqltext.Ident(schema)+".`hot_rank`"
	for _, q := range []string{
		"CREATE TABLE " + rank + " (pos INT NOT NULL PRIMARY KEY, id INT NOT NULL, UNIQUE KEY (id)) ENGINE=InnoDB STATS_AUTO_RECALC=0",
		"CREATE TABLE " + dst + " LIKE " + src,
		"ALTER TABLE " + dst + " DROP INDEX `k_1`, STATS_AUTO_RECALC = 0",
	} {
		if _, err := sess.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	for start := 0; start < len(hot); start += idBatch {
		var b strings.Builder
		b.WriteString("INSERT INTO " + rank + " (pos, id) VALUES ")
		for i, id := range hot[start:min(start+idBatch, len(hot))] {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d)", start+i+1, id)
		}
		if _, err := sess.Exec(ctx, b.String()); err != nil {
			return fmt.Errorf("fill %s: %w", rank, err)
		}
	}
	log.Infof("copying sbtest1 into sbtest_clustered with the %s hot rows first", commas(int64(len(hot))))
	if _, err := sess.Exec(ctx, "INSERT INTO "+dst+" (id, k, c, pad) SELECT h.pos, s.k, s.c, s.pad FROM "+rank+" h JOIN "+src+" s ON s.id = h.id ORDER BY h.pos"); err != nil {
		return fmt.Errorf("copy the hot rows: %w", err)
	}
	shift := int64(len(hot))
	lastLog := time.Now()
	for from := int64(1); from <= rows; from += loadChunk {
		to := min(from+loadChunk-1, rows)
		q := fmt.Sprintf("INSERT INTO %s (id, k, c, pad) SELECT s.id + %d, s.k, s.c, s.pad FROM %s s LEFT JOIN %s h ON h.id = s.id WHERE s.id BETWEEN %d AND %d AND h.id IS NULL ORDER BY s.id",
			dst, shift, src, rank, from, to)
		if _, err := sess.Exec(ctx, q); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("copy the other rows: %w", err)
		}
		if time.Since(lastLog) > 5*time.Second && to < rows {
			log.Infof("sbtest_clustered: %s of %s rows", commas(to), commas(rows))
			lastLog = time.Now()
		}
	}
	return alterWithProgress(ctx, conn, sess, "ALTER TABLE "+dst+" ADD INDEX `k_1` (k)", "index k_1 of sbtest_clustered", log)
}
