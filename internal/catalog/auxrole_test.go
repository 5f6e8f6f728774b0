package catalog_test

import (
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
)

// A FULLTEXT table's roles are upper case on both flavors now, and a manifest written by
// MySQL before that (fts:config, fts:ft_tb:index_6) still finds MariaDB's tables: before,
// a hot set carried between flavors dropped every FULLTEXT page as "table not on this
// server". The index's own name compares exactly.
func TestAuxByRoleAcrossFlavors(t *testing.T) {
	tbl := &catalog.Table{Aux: []catalog.AuxSpace{{Name: "x/FTS_1_CONFIG", Role: "fts:CONFIG"}, {Name: "x/FTS_1_2_INDEX_6", Role: "fts:ft_tb:INDEX_6"}}}
	for _, c := range []struct {
		role string
		want string
	}{
		{"fts:CONFIG", "x/FTS_1_CONFIG"},
		{"fts:config", "x/FTS_1_CONFIG"},
		{"fts:ft_tb:index_6", "x/FTS_1_2_INDEX_6"},
		{"fts:FT_TB:INDEX_6", ""},
		{"fts:ft_tb:INDEX_5", ""},
	} {
		got := ""
		if a := tbl.AuxByRole(c.role); a != nil {
			got = a.Name
		}
		if got != c.want {
			t.Errorf("AuxByRole(%q) = %q, want %q", c.role, got, c.want)
		}
	}
}
