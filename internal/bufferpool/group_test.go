package bufferpool_test

import (
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
)

func TestGroup(t *testing.T) {
	rows := []bufferpool.IndexResidency{
		{Schema: "a", Table: "t", Index: "PRIMARY", Resident: 10, Pages: 20, Known: true},
		{Schema: "a", Table: "t", Index: "k", Resident: 5, Pages: 5, Known: false},
		{Schema: "a", Table: "u", Index: "PRIMARY", Resident: 40, Pages: 40, Known: true},
		{Schema: "b", Table: "v", Index: "PRIMARY", Resident: 1, Pages: 100, Known: true},
	}
	t.Run("by table", func(t *testing.T) {
		got := bufferpool.Group(rows, "table")
		if len(got) != 3 || got[0].Table != "u" || got[1].Table != "t" {
			t.Fatalf("groups %+v", got)
		}
		if tt := got[1]; tt.Resident != 15 || tt.Pages != 25 || tt.Known || tt.Coverage != 0.6 {
			t.Errorf("table t: %+v; want 15 of 25 pages, 60%%, not exact (one index's size is not)", tt)
		}
	})
	t.Run("by schema", func(t *testing.T) {
		got := bufferpool.Group(rows, "schema")
		if len(got) != 2 || got[0].Schema != "a" || got[0].Resident != 55 || got[1].Coverage != 0.01 {
			t.Errorf("schemas %+v", got)
		}
	})
	t.Run("by index", func(t *testing.T) {
		if got := bufferpool.Group(rows, "index"); len(got) != len(rows) {
			t.Errorf("by index changed the rows: %+v", got)
		}
	})
}
