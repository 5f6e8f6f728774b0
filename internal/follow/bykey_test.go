package follow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/warm"
)

// A standby restored from a logical dump (the same rows, inserted in key order: other page
// numbers) is warmed by key: follow's round takes the tree path for it, says so (for a
// small table of one page per index too, whose pages' keys cannot be sampled, its VARCHAR
// index included), and the
// source's hot rows then read on the standby with few misses (by page number about two in
// three missed: see warm's TestWarmByKeyOnALogicalCopy).
func TestFollowWarmsALogicalStandbyByKey(t *testing.T) {
	ctx := context.Background()
	const rows = 30000
	create := func(conn *connection.Conn, order string) {
		t.Helper()
		for _, q := range []string{
			"DROP DATABASE IF EXISTS fk", "CREATE DATABASE fk",
			"CREATE TABLE fk.t (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '', KEY kk (k))",
			fmt.Sprintf("INSERT INTO fk.t (id, k) SELECT (seq * 7919) %% %d, (seq * 104729) %% %d FROM %s ORDER BY %s", rows+1, rows+1, conn.Server.Series("fk", 1, rows), order),
			// A small table, one page per index: its pages' low bounds are open, so
			// sampling says nothing of the copy; its ranges still name its rows.
			"CREATE TABLE fk.small (id INT NOT NULL PRIMARY KEY, name VARCHAR(20) NOT NULL, KEY kn (name))",
			"INSERT INTO fk.small VALUES (1, 'one'), (2, 'two'), (3, 'three')",
			"FLUSH TABLES fk.t, fk.small FOR EXPORT", "UNLOCK TABLES",
		} {
			if _, err := conn.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	source := sandboxtest.Server(t)
	create(sandboxtest.Conn(t), "seq") // random order: the primary
	target := sandboxtest.SecondServer(t, 64<<20)
	tgtConn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	create(tgtConn, "1") // key order: the logical standby
	tgtConn.Close()
	var hot []string
	for id := 0; id < rows; id += 200 {
		hot = append(hot, fmt.Sprint(id))
	}
	// The hot rows by primary key, and as many through the secondary index: reading its
	// leaves, MariaDB 10.11 and MySQL read the file's change buffer bitmap too, a page of
	// no index.
	read := "SELECT SUM(LENGTH(pad)) FROM fk.t FORCE INDEX (PRIMARY) WHERE id IN (" + strings.Join(hot, ",") + ")" +
		" UNION ALL SELECT SUM(LENGTH(pad)) FROM fk.t FORCE INDEX (kk) WHERE k IN (" + strings.Join(hot, ",") + ")" +
		" UNION ALL SELECT SUM(id) FROM fk.small FORCE INDEX (PRIMARY) WHERE id > 0" +
		" UNION ALL SELECT COUNT(*) FROM fk.small FORCE INDEX (kn) WHERE name > ''"
	if _, err := source.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sandboxtest.Reconnect(t).DB.ExecContext(ctx, read); err != nil {
		t.Fatal(err)
	}
	if _, err := target.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	var st follow.Status
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Second, Rounds: 1,
		Filter: catalog.Filter{Schemas: []string{"fk"}}, Log: logx.New(os.Stderr, false)}
	if err := follow.Run(ctx, o, nil, func(s follow.Status) { st = s }); err != nil {
		t.Fatal(err)
	}
	t.Logf("round: %+v", st)
	// The small table's VARCHAR index compares by its collation, which only the server
	// knows, but its one range is the whole index: its tree is all of it, no key compared.
	if !st.OK || st.Paths[warm.PathTree] != 4 || st.Paths[warm.PathSQL] != 0 || st.KeyRanges < int64(len(hot))/2 {
		t.Errorf("want every index read by key in the tree (the small table's VARCHAR index, whose range is the whole index, too), %d+ key ranges: %+v", len(hot)/2, st)
	}
	// The table's own file pages (its header, bitmaps) go by number on any copy; they
	// are no index, and counted as one they said an index went by page number here.
	if st.Paths[warm.PathPages] != 0 {
		t.Errorf("no index of a logical standby goes by page number: paths %v", st.Paths)
	}
	// The tree path loads the standby's own page numbers: its coverage is the hot set's.
	if st.CoverageOf != "hot set" {
		t.Errorf("coverage of %q, want the hot set's (every index by the tree)", st.CoverageOf)
	}
	tgtConn, err = target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tgtConn.Close()
	reads := func() int64 {
		var name string
		var n int64
		if err := tgtConn.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := reads()
	if _, err := tgtConn.DB.ExecContext(ctx, read); err != nil {
		t.Fatal(err)
	}
	if missed := reads() - before; missed > int64(len(hot))/10 {
		t.Errorf("the hot rows missed %d pages on the standby after follow's round, want at most %d", missed, len(hot)/10)
	}
}

// With no native load (--method scan) a logical standby's indexes go by range scans:
// nothing in the load lists the hot set's pages on the standby, so the first round does not
// say what share of them was resident before it (null, not 0). Its coverage is still of
// pages, found in the standby's own trees (it was the share of its statements that ran),
// and the statements are counted apart.
func TestFollowBySQLSaysCoverageBeforeIsUnknown(t *testing.T) {
	ctx := context.Background()
	source := sandboxtest.Server(t)
	target := sandboxtest.SecondServer(t, 64<<20)
	onBothEnds(t, target, "fs", func(conn *connection.Conn, end int) []string {
		order := []string{"seq", "1"}[end]
		return paddedTable(conn, "fs", "(seq * 7919) % 20001", 20000, order)
	})
	if _, err := sandboxtest.Conn(t).DB.ExecContext(ctx, "SELECT COUNT(*) FROM fs.t FORCE INDEX (PRIMARY) WHERE id < 5000"); err != nil {
		t.Fatal(err)
	}
	var st follow.Status
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Second, Rounds: 1, Method: "scan",
		Filter: catalog.Filter{Schemas: []string{"fs"}}, Log: logx.New(os.Stderr, false)}
	if err := follow.Run(ctx, o, nil, func(s follow.Status) { st = s }); err != nil {
		t.Fatal(err)
	}
	if !st.OK || st.Paths[warm.PathSQL] == 0 || st.Paths[warm.PathPages]+st.Paths[warm.PathTree] != 0 || st.KeyRanges == 0 {
		t.Fatalf("want the table read by range scans: %+v", st)
	}
	if st.CoverageOf != follow.CoverageOfHotSet {
		t.Errorf("the coverage of a round of range scans is of %q, want the hot set's pages (in the standby's trees)", st.CoverageOf)
	}
	if st.CoverageBefore != nil {
		t.Errorf("coverage before a round of range scans is unknown, got %v", *st.CoverageBefore)
	}
	if st.RangeStatements == 0 || st.RangeStatementsRun != st.RangeStatements {
		t.Errorf("every range statement ran: %d of %d", st.RangeStatementsRun, st.RangeStatements)
	}
	if st.Coverage < 0.9 {
		t.Errorf("every range statement ran: coverage %v of the hot set's pages, want about 1", st.Coverage)
	}
	js, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"coverage_before":null`) {
		t.Errorf("--json says coverage_before null: %s", js)
	}
}
