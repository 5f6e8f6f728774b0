package snapshot_test

import (
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
)

// A snapshot names every partition's pages by index, however it reads the page list. From
// the server's dump, innowarm names pages from the files' segments and the index roots,
// and MySQL's INNODB_INDEXES lists no index of a partitioned table: the partitions' pages
// went into the manifest as UNNAMED, where --page-list lru-table named them; then a
// snapshot read the LRU table for them; now their roots come from the table's SDI.
func TestSnapshotNamesPartitionIndexes(t *testing.T) {
	zoo := sandboxtest.Zoo(t)
	sock := sandboxtest.Sock(t)
	cold(t, sandboxtest.Server(t))
	sandboxtest.Reconnect(t)
	tables := []string{"-D", zoo, "--tables", sandboxtest.ZooParts, "--tables", sandboxtest.ZooHashParts}
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"warm", "--method", "scan", "-q"}, tables...), sock...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	path := filepath.Join(sandboxtest.Dir(t), "parts.manifest")
	r := sandboxtest.CLI(t, sandboxtest.Run{}, append(append([]string{"snapshot", "-o", path, "--json"}, tables...), sock...)...)
	if r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	var res snapshot.Result
	sandboxtest.JSON(t, []byte(r.Stdout), &res)
	t.Logf("page list %s (%s), %d entries, %d unnamed", res.PageList, res.PageListNote, res.Entries, res.Unnamed)
	// From the dump on both flavors: MySQL's partitions' index roots come from their
	// table's SDI (before, the snapshot read the LRU table for them).
	if res.PageList != bufferpool.SourceDump {
		t.Errorf("page list %s (%s), want dump", res.PageList, res.PageListNote)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]int{}
	for _, e := range m.Entries {
		o := m.Objects[e.Object]
		if o.Partition == "" {
			t.Errorf("a page of %s without its partition", o.Table)
		}
		switch {
		case o.PageType == bufferpool.PageTypeUnnamed:
			t.Errorf("page %d of %s partition %s is UNNAMED", e.Page, o.Table, o.Partition)
		case o.Index != "":
			named[o.Table+" "+o.Partition+" "+o.Index]++
		}
	}
	// Every subpartition of parts and partition of hparts, each index of it.
	if len(named) < 4*3+3*2 {
		t.Errorf("pages of %d partition indexes named, want 18: %v", len(named), named)
	}
	// Their keys: MariaDB's dictionary view gives each partition's index roots; MySQL's
	// gives none, and they come from the table's SDI in its partitions' files (before, the
	// partitions of a MySQL table had no keys).
	keyed := map[string]bool{}
	for _, o := range m.Objects {
		if o.Index != "" && o.KeyColumns != "" {
			keyed[o.Table+" "+o.Partition+" "+o.Index] = true
		}
	}
	for ix := range named {
		if !keyed[ix] {
			t.Errorf("partition index %s has no key columns: keys skipped %q", ix, res.Keys.Skipped)
		}
	}
	if m.Header.KeyedEntries < m.Header.Entries/2 {
		t.Errorf("%d keyed entries of %d: skipped %q", m.Header.KeyedEntries, m.Header.Entries, res.Keys.Skipped)
	}
}
