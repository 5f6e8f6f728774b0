package bufferpool

import (
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
)

// Tables in one tablespace (MySQL's general tablespaces) cannot be told apart by file: the
// dump is not used for them. Partitions of one table in their own files are not shared.
func TestSharedSpaces(t *testing.T) {
	part := func(name string, space uint32) *catalog.Part {
		return &catalog.Part{Name: name, Space: space, SpaceKnown: true}
	}
	own := &catalog.Catalog{Tables: []*catalog.Table{
		{Schema: "s", Name: "a", Parts: []*catalog.Part{part("", 5)}},
		{Schema: "s", Name: "p", Parts: []*catalog.Part{part("p0", 6), part("p1", 7)}},
	}}
	if got := SharedSpaces(own); len(got) != 0 {
		t.Errorf("file-per-table catalog: %v", got)
	}
	// The system tablespace holds every table created with innodb_file_per_table off, and
	// InnoDB's own pages: one entry names them.
	own.Tables = append(own.Tables,
		&catalog.Table{Schema: "s", Name: "sys", Parts: []*catalog.Part{part("", 0)}},
		&catalog.Table{Schema: "s", Name: "sys2", Parts: []*catalog.Part{part("", 0)}})
	if got := SharedSpaces(own); len(got) != 1 || !strings.Contains(got[0], "system tablespace: s.sys, s.sys2") {
		t.Errorf("tables in the system tablespace: %v", got)
	}
	shared := &catalog.Catalog{Tables: []*catalog.Table{
		{Schema: "s", Name: "a", Parts: []*catalog.Part{part("", 9)}},
		{Schema: "s", Name: "b", Parts: []*catalog.Part{part("", 9)}},
		{Schema: "s", Name: "c", Parts: []*catalog.Part{part("", 9)}},
		{Schema: "s", Name: "p", Parts: []*catalog.Part{part("p0", 10), part("p1", 10)}},
	}}
	if got := SharedSpaces(shared); len(got) != 2 {
		t.Errorf("two shared tablespaces: %v", got)
	}
}

// A selected table alone in the catalog whose tablespace holds other tables too: the dump
// would count their pages as its own.
func TestSharedSpaceOfOneSelectedTable(t *testing.T) {
	one := &catalog.Catalog{Tables: []*catalog.Table{
		{Schema: "s", Name: "a", Parts: []*catalog.Part{{Space: 9, SpaceKnown: true, SharedSpace: true}}},
	}}
	if got := SharedSpaces(one); len(got) != 1 {
		t.Errorf("one selected table of a shared tablespace: %v", got)
	}
}
