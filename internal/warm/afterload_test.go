package warm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A native warm during which no page left the pool reports each index's residency from the
// page counters, without reading the pool again; the counts are those a read of the pool
// gives (checked against the LRU table right after), and --verify reads the pool. A table
// whose rows can go off-page is read: its loaded leaf pages may be BLOB pages.
func TestNativeWarmProvedByCounters(t *testing.T) {
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	plainTable(t, db, "plain", 30000)
	lobs := sqltext.Table(db, "lobs")
	sandboxtest.Exec(t,
		"CREATE TABLE "+lobs+" (id INT PRIMARY KEY, body TEXT)",
		"INSERT INTO "+lobs+" SELECT seq, REPEAT('b', 9000) FROM "+srv.Series(db, 1, 300)+" ORDER BY seq")
	type result struct {
		Result struct {
			Method  string `json:"method"`
			Proof   string `json:"proof"`
			Targets []struct {
				Index         string `json:"index"`
				Kind          string `json:"kind"`
				ResidentAfter int64  `json:"resident_after"`
			} `json:"targets"`
		} `json:"result"`
	}
	warmCold := func(table string, extra ...string) result {
		t.Helper()
		stdout := warmAfterColdRestart(t, append([]string{"-D", db, "--tables", db + "." + table, "--method", "native", "--json", "-q"}, extra...)...)
		var out result
		sandboxtest.JSON(t, []byte(stdout), &out)
		return out
	}
	readNow := func(table string) map[string]int64 {
		t.Helper()
		conn := sandboxtest.Conn(t)
		pat, err := catalog.ParsePattern(db + "." + table)
		if err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.Load(context.Background(), conn, catalog.Filter{Schemas: []string{db}, Tables: []catalog.Pattern{pat}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := bufferpool.Read(context.Background(), conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, r := range res.Indexes {
			out[r.Index] = r.Resident
		}
		return out
	}
	reported := func(out result) map[string]int64 {
		m := map[string]int64{}
		for _, tg := range out.Result.Targets {
			if tg.Kind != "lob" {
				m[tg.Index] = tg.ResidentAfter
			}
		}
		return m
	}

	proved := warmCold("plain")
	if !strings.HasPrefix(proved.Result.Proof, "page counters") {
		t.Fatalf("native warm of a table without off-page columns: proof %q, want the page counters", proved.Result.Proof)
	}
	got, read := reported(proved), readNow("plain")
	if got["PRIMARY"] == 0 || got["kk"] == 0 || got["PRIMARY"] != read["PRIMARY"] || got["kk"] != read["kk"] {
		t.Errorf("resident after, proved by the counters: %v; the LRU table says %v", got, read)
	}
	verified := warmCold("plain", "--verify")
	if !strings.Contains(verified.Result.Proof, "--verify") || reported(verified)["PRIMARY"] != got["PRIMARY"] || reported(verified)["kk"] != got["kk"] {
		t.Errorf("--verify: proof %q, resident after %v; the counters' run said %v", verified.Result.Proof, reported(verified), got)
	}
	t.Logf("%s: proved %v (%s); the LRU table %v; --verify: %s", srv.Version, got, proved.Result.Proof, read, verified.Result.Proof)
	withLOBs := warmCold("lobs")
	if !strings.Contains(withLOBs.Result.Proof, "off-page columns") {
		t.Errorf("native warm of a table with off-page columns: proof %q, want a read of the pool", withLOBs.Result.Proof)
	}
}
