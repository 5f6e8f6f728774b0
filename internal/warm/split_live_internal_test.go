package warm

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// TestKeyBoundsReadNoWholeIndex: cutting an index into key ranges reads its least and
// greatest keys, a descent or two, whether its first key part ascends or descends. Through
// a descending one MIN()/MAX() read every entry on both servers (a --dry-run loaded such
// indexes whole, a --budget was overrun by them). Counted by the session's handler reads,
// not by time.
func TestKeyBoundsReadNoWholeIndex(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	srv := conn.Server
	db := sandboxtest.Schema(t)
	tbl := sqltext.Ident(db) + ".bounds"
	const rows = 40_000
	sandboxtest.Exec(t,
		"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, c INT, d INT, KEY kdesc (c DESC, d), KEY kasc (c, d))",
		"INSERT INTO "+tbl+" SELECT seq, IF(seq MOD 10 = 0, NULL, CAST(seq MOD 7919 AS SIGNED) - 3000), seq FROM "+srv.Series(db, 1, rows)+" ORDER BY seq")
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Exact: []catalog.TableName{{Schema: db, Table: "bounds"}}, Tables: mustPatterns(t, db+".bounds")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tables) != 1 {
		t.Fatalf("catalog: %d tables", len(cat.Tables))
	}
	tb := cat.Tables[0]
	var wantLo, wantHi string
	if err := conn.DB.QueryRow("SELECT MIN(c), MAX(c) FROM "+tbl+" IGNORE INDEX (kdesc, kasc)").Scan(&wantLo, &wantHi); err != nil {
		t.Fatal(err)
	}
	sess, err := conn.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	handlerReads := func() int64 {
		var sum int64
		err := sess.Query(ctx, "SHOW SESSION STATUS LIKE 'Handler_read%'", nil, func(r *sql.Rows) error {
			var name, v string
			if err := r.Scan(&name, &v); err != nil {
				return err
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			sum += n
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	checked := 0
	for _, ix := range tb.Indexes {
		if ix.Name != "kdesc" && ix.Name != "kasc" {
			continue
		}
		if got := ix.Columns[0].Desc; got != (ix.Name == "kdesc") {
			t.Fatalf("%s: first key part descending %v in the catalog", ix.Name, got)
		}
		before := handlerReads()
		lo, hi, err := keyBounds(ctx, sess, srv, tb, tb.Parts[0], ix, ix.Columns[0].Column)
		if err != nil {
			t.Fatalf("%s: %v", ix.Name, err)
		}
		read := handlerReads() - before
		// The status statement counts its own reads on some servers: what one costs is
		// taken off. A whole index is 40,000.
		a := handlerReads()
		if base := handlerReads() - a; read-base > 100 {
			t.Errorf("%s: its bounds took %d handler reads (the index has %d entries): it was read whole", ix.Name, read, rows)
		}
		if lo.String != wantLo || hi.String != wantHi || !lo.Valid || !hi.Valid {
			t.Errorf("%s: bounds %v..%v, want %s..%s (NULLs left out)", ix.Name, lo, hi, wantLo, wantHi)
		}
		ranges, err := splitRanges(ctx, sess, srv, tb, tb.Parts[0], ix, 4)
		if err != nil || len(ranges) < 2 {
			t.Errorf("%s: %d ranges, %v", ix.Name, len(ranges), err)
		}
		checked++
	}
	if checked != 2 {
		t.Fatalf("checked %d indexes", checked)
	}
}

func mustPatterns(t *testing.T, pats ...string) []catalog.Pattern {
	t.Helper()
	var out []catalog.Pattern
	for _, s := range pats {
		p, err := catalog.ParsePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
