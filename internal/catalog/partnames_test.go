package catalog_test

import (
	"fmt"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// partitionedDDL is a table of partitions and subpartitions whose names have capitals and
// characters the server writes as @XXXX in file names.
const partitionedDDL = ` (id INT NOT NULL, k INT NOT NULL, pad CHAR(200), PRIMARY KEY (id, k), KEY kk (k))%s
	PARTITION BY RANGE (id) SUBPARTITION BY HASH (k) (
	PARTITION Lo VALUES LESS THAN (4000) (SUBPARTITION SubA, SUBPARTITION ` + "`sub b-Ü`" + `),
	PARTITION ` + "`Hi$X ΩⅫǅ`" + ` VALUES LESS THAN MAXVALUE (SUBPARTITION Sc, SUBPARTITION sd))`

// MySQL 8.0+ writes partition names in lower case in its dictionary, the tablespaces'
// files and mysql.innodb_index_stats ("t#p#lo", "t#p#lo.ibd" for PARTITION Lo); MariaDB
// keeps them as written ("t#P#Lo"). Before, a MySQL partition with a capital in its name
// had no statistics (its size an estimate from PARTITIONS, a readiness gate that never
// passed), and no MySQL partition's size was counted in its file (INNODB_INDEXES lists no
// index of a partitioned table): with statistics a fresh table keeps (1 page), a fully
// resident partition read "77-576 pages, ≥13.4%".
func TestPartitionNamesAsTheServerWritesThem(t *testing.T) {
	srv := sandboxtest.Flavor(t)
	db := sandboxtest.Schema(t)
	analyzed, stale := sqltext.Table(db, "Analyzed"), sqltext.Table(db, "stale")
	fill := func(tbl string) string {
		return "INSERT INTO " + tbl + " SELECT seq, seq MOD 97, 'x' FROM " + srv.Series(db, 1, 8000) + " ORDER BY seq"
	}
	sandboxtest.Exec(t,
		"CREATE TABLE "+analyzed+fmt.Sprintf(partitionedDDL, ""),
		fill(analyzed),
		"ANALYZE TABLE "+analyzed,
		// Statistics as the table was created (1 page per index), kept through the load.
		"CREATE TABLE "+stale+fmt.Sprintf(partitionedDDL, " STATS_AUTO_RECALC=0"),
		fill(stale),
		// The files' metadata on disk, as a checkpoint would put it.
		"FLUSH TABLES "+analyzed+", "+stale+" FOR EXPORT", "UNLOCK TABLES",
	)
	cat := load(t, catalog.Filter{Schemas: []string{db}})
	wantParts := []string{"SubA", "sub b-Ü", "Sc", "sd"}
	for _, name := range []string{"Analyzed", "stale"} {
		tb := table(t, cat, name)
		if len(tb.Parts) != len(wantParts) {
			t.Fatalf("%s: %d parts, want %d", name, len(tb.Parts), len(wantParts))
		}
		for i, p := range tb.Parts {
			if p.Name != wantParts[i] {
				t.Errorf("%s: part %d is %q, want %q (as the table defines it)", name, i, p.Name, wantParts[i])
			}
			if !p.SpaceKnown {
				t.Errorf("%s partition %s: no tablespace found", name, p.Name)
			}
			for _, ix := range tb.Indexes {
				sz := ix.Sizes[p.Name]
				if !sz.Known {
					t.Errorf("%s partition %s %s: no statistics found (stats name %q): %+v", name, p.Name, ix.Name, p.StatsName, sz)
				}
				// 2,000 rows of 200 bytes: about 30 leaves in the clustered index, where
				// stale statistics say 1 page.
				if !sz.FromFile || sz.TreePages < 2 {
					t.Errorf("%s partition %s %s: not counted in its file: %+v", name, p.Name, ix.Name, sz)
				}
				if name == "Analyzed" && ix.Clustered && sz.Pages < 10 {
					t.Errorf("%s partition %s %s: statistics of %d pages, want those of ANALYZE", name, p.Name, ix.Name, sz.Pages)
				}
			}
		}
	}
	if est := cat.Estimated(); len(est) != 0 {
		t.Errorf("estimated sizes: %v", est)
	}
}
