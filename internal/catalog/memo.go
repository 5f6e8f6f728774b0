package catalog

import (
	"context"
	"database/sql"
	"maps"
	"sync"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
)

// IndexRoot is an index's id and root page in its tablespace, and its table's id, as the
// server's dictionary view lists them (INNODB_SYS_INDEXES / INNODB_INDEXES: INDEX_ID,
// PAGE_NO, TABLE_ID).
type IndexRoot struct {
	ID    uint64
	Root  uint32
	Table uint64
}

// TableFormat is how InnoDB stores a table's records, as its dictionary view of tables
// lists it (ROW_FORMAT, lower case; MySQL's INSTANT_COLS and TOTAL_ROW_VERSIONS, 0 where
// the server has neither).
type TableFormat struct {
	RowFormat   string
	InstantCols int
	RowVersions int
}

// loadMemo holds dictionary reads made beside one catalog load, shared by every part of it
// (Cache.Load gives subsets of one load): they are as current as the load itself, and a
// load lasts only while the dictionary's fingerprint stays put (Cache).
type loadMemo struct {
	mu    sync.Mutex
	roots rootRows
	// formats: every InnoDB table's format by table id, read with the tablespaces
	// (readInnoDBTables); nil until then.
	formats map[uint64]TableFormat
	// columns: every InnoDB table's stored columns by table id, where the load read them
	// (Reads.StoredColumns); nil otherwise.
	columns map[uint64][]StoredColumn
}

// Reads shapes what a load reads for its caller.
type Reads struct {
	// StoredColumns: every table's columns as InnoDB stores them (the key capture's and
	// warm by key's dictionary), read beside the load's own reads and kept with it, where
	// InnoDB's views build every table whatever the WHERE
	// (flavor.InnoDBViewsBuildEveryTable) and the tablespace files may be read here.
	StoredColumns bool
	// NoSizes: the load reads no size, for a caller that uses none (snapshot: a manifest
	// names pages, and its page lists read the files' sizes, which are still read). It
	// counts no B-tree in the tablespace files (a few pages of every file, 4 s at 20,000
	// tables on MariaDB, a fifth of a snapshot of a few dozen tables), asks TABLES for no
	// size column nor CREATE_OPTIONS, and reads no index statistics: on MariaDB each of
	// those columns opens every table (6 s at 20,000 tables), on MySQL 8.0+ with fresh
	// statistics too. Partitioned tables are then told apart by InnoDB's own names of their
	// parts. Tables, parts and indexes have no size (IndexSize.Known false).
	NoSizes bool
}

// StoredColumn is a column as InnoDB's dictionary view lists it (INNODB_SYS_COLUMNS /
// INNODB_COLUMNS).
type StoredColumn struct {
	Name   string
	Pos    int64
	MType  int
	PRType uint32
	Len    int
}

// ReadStoredColumns reads the stored columns by table id, of every table or, with where
// (" WHERE TABLE_ID IN (...)"), of some.
func ReadStoredColumns(ctx context.Context, sess *connection.Session, srv flavor.Server, where string) (map[uint64][]StoredColumn, error) {
	out := map[uint64][]StoredColumn{}
	err := sess.Query(ctx, "SELECT TABLE_ID, NAME, POS, MTYPE, PRTYPE, LEN FROM "+srv.ColumnsTable()+where, nil, func(rows *sql.Rows) error {
		var id uint64
		var c StoredColumn
		if err := rows.Scan(&id, &c.Name, &c.Pos, &c.MType, &c.PRType, &c.Len); err != nil {
			return err
		}
		out[id] = append(out[id], c)
		return nil
	})
	if err != nil {
		return nil, ExplainPrivilege(err, srv.ColumnsTable())
	}
	return out, nil
}

// KnownColumns gives the stored columns of the tables ids where this load read them
// (Reads.StoredColumns), and whether it did for every one of them.
func (c *Catalog) KnownColumns(ids []uint64) (map[uint64][]StoredColumn, bool) {
	return knownByTable(c, ids, func(m *loadMemo) map[uint64][]StoredColumn { return m.columns })
}

// knownByTable gives what the load's memo holds (of) of the tables ids, and whether it holds
// it for every one of them (a table created after the load's read has none).
func knownByTable[T any](c *Catalog, ids []uint64, of func(*loadMemo) map[uint64]T) (map[uint64]T, bool) {
	if c == nil || c.memo == nil {
		return nil, false
	}
	m := c.memo
	m.mu.Lock()
	defer m.mu.Unlock()
	byTable := of(m)
	if byTable == nil {
		return nil, false
	}
	out := make(map[uint64]T, len(ids))
	for _, id := range ids {
		v, ok := byTable[id]
		if !ok {
			return nil, false
		}
		out[id] = v
	}
	return out, true
}

// rootRows is what the dictionary view said of the index roots of the tablespaces read so
// far: all when the whole view was read (a space not in bySpace then has no row).
type rootRows struct {
	all     bool
	bySpace map[uint32]map[string]IndexRoot
}

func newLoadMemo() *loadMemo {
	return &loadMemo{roots: rootRows{bySpace: map[uint32]map[string]IndexRoot{}}}
}

// KnownRoots gives, of spaces, the index roots (by space and index name) that an earlier
// read of the dictionary view made for this load, and the spaces still to be read. An
// index's root page is fixed for its life and a new index or a rebuild changes the
// dictionary's fingerprint, so what was read stays true for the load; on MySQL each read
// of INNODB_INDEXES builds every table's definition (about 5 s at 20,000 tables), and
// follow's rounds and snapshot --every read them for each capture's page list. A catalog
// not made by Load (a literal) remembers nothing: every space is missing.
func (c *Catalog) KnownRoots(spaces map[uint32]bool) (known map[uint32]map[string]IndexRoot, missing []uint32) {
	known = map[uint32]map[string]IndexRoot{}
	if c == nil || c.memo == nil {
		for s := range spaces {
			missing = append(missing, s)
		}
		return known, missing
	}
	m := c.memo
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range spaces {
		byName, ok := m.roots.bySpace[s]
		switch {
		case ok:
			if len(byName) > 0 {
				known[s] = byName
			}
		case !m.roots.all:
			missing = append(missing, s)
		}
	}
	return known, missing
}

// KnownFormats gives the record formats of the tables ids, read with this load's
// tablespaces, and whether every one of them was: on MySQL the view of tables builds every
// table's definition whatever the WHERE (about 5 s at 20,000 tables), so the key
// dictionary reads it again only for a catalog that did not (a literal).
func (c *Catalog) KnownFormats(ids []uint64) (map[uint64]TableFormat, bool) {
	return knownByTable(c, ids, func(m *loadMemo) map[uint64]TableFormat { return m.formats })
}

// RememberRoots keeps what a read of the dictionary view gave for the spaces it asked for
// (read: every one of them, those with no row included), or, with all, for the whole view.
// The maps given are kept: the caller must not change them afterwards.
func (c *Catalog) RememberRoots(read []uint32, all bool, rows map[uint32]map[string]IndexRoot) {
	if c == nil || c.memo == nil {
		return
	}
	m := c.memo
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range read {
		if _, ok := m.roots.bySpace[s]; !ok {
			m.roots.bySpace[s] = nil
		}
	}
	maps.Copy(m.roots.bySpace, rows)
	m.roots.all = m.roots.all || all
}

// ReadIndexRoots reads the dictionary view's index roots by space and index name, the
// whole view or, with where ("WHERE SPACE IN (...)"), part of it; an index with no tree (a
// FULLTEXT index's entry: no root page) is left out. In a tablespace several tables share
// (MySQL's general tablespaces) a name that more than one of them gives an index is left
// out too: by name it would be any one of theirs, and what reads by it (the key capture,
// the tree path, the files' page maps) then says it is unknown rather than read another
// table's tree.
func ReadIndexRoots(ctx context.Context, sess *connection.Session, srv flavor.Server, where string) (map[uint32]map[string]IndexRoot, error) {
	out := map[uint32]map[string]IndexRoot{}
	ambiguous := map[uint32]map[string]bool{}
	defer func() {
		for space, names := range ambiguous {
			for name := range names {
				delete(out[space], name)
			}
		}
	}()
	err := sess.Query(ctx, srv.IndexRootsQuery()+where, nil, func(rows *sql.Rows) error {
		var id, table uint64
		var name string
		var space uint32
		var root sql.NullInt64
		if err := rows.Scan(&id, &name, &space, &root, &table); err != nil {
			return err
		}
		if root.Valid {
			if out[space] == nil {
				out[space] = map[string]IndexRoot{}
			}
			if prev, ok := out[space][name]; ok && prev.Table != table {
				if ambiguous[space] == nil {
					ambiguous[space] = map[string]bool{}
				}
				ambiguous[space][name] = true
			}
			out[space][name] = IndexRoot{ID: id, Root: uint32(root.Int64), Table: table}
		}
		return nil
	})
	if err != nil {
		return nil, ExplainPrivilege(err, srv.IndexesTable())
	}
	return out, nil
}
