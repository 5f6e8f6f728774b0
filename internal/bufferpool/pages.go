package bufferpool

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/logx"
)

// LRUPage is one page of the buffer pool's LRU list, attributed by name.
type LRUPage struct {
	LRU       uint32 // 0 is the most recently used page
	Space     uint32
	Page      uint32
	PageType  string
	Schema    string
	Table     string
	Partition string
	Index     string // empty for off-page LOB pages and pages of no index
	Old       bool
}

// tempSpaceFloor: space ids from here up are temporary tablespaces (0xFFFFFFF0 and above).
const tempSpaceFloor = 0xFFFFFFF0

// LRUStats says what a pass over the LRU list saw.
type LRUStats struct {
	Source       string `json:"source"` // SourceDump or SourceLRUTable
	Pages        int64  `json:"pages"`
	Attributed   int64  `json:"attributed"`
	Unattributed int64  `json:"unattributed"` // system, undo and unknown tablespaces
	OpenedTables int    `json:"opened_tables,omitempty"`
	// Unnamed counts pages of the catalog's tables a dump-sourced list could place in their
	// tablespace but not in an index (allocated since the server last wrote the file's
	// descriptors); they are listed with PageTypeUnnamed.
	Unnamed     int64   `json:"unnamed,omitempty"`
	ListSeconds float64 `json:"list_seconds,omitempty"` // of Seconds, the server writing its dump
	Seconds     float64 `json:"seconds"`
}

// StreamLRU reads INNODB_BUFFER_PAGE_LRU in LRU order, most recently used first, and calls
// each for every page it can name: pages of the catalog's tables (by tablespace, so off-page
// LOB pages too, as their clustered index's table) and named pages of other tables (system
// schemas). Pages of tables the server has not opened since its restart carry no names;
// their tables are opened first (SELECT ... LIMIT 0, no rows read). Memory does not grow
// with the pool.
func StreamLRU(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, each func(LRUPage) error) (LRUStats, error) {
	t0 := time.Now()
	st := LRUStats{Source: SourceLRUTable}
	spaces := spaceOwners(cat)
	aux := auxOwners(cat)
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return st, err
	}
	defer sess.Close()
	srv := conn.Server
	opened, err := nameUnnamedPages(ctx, sess, srv.BufferPageLRUTable(), spaces)
	if err != nil {
		return st, err
	}
	st.OpenedTables = opened
	oldLen, err := lruOldLen(ctx, sess, srv)
	if err != nil {
		return st, err
	}
	// LRU_POSITION counts from the list's tail (0 is the next page to be evicted), per buffer
	// pool instance; reading each instance from its highest position down gives the pages most
	// recently used first, and their distance from the head.
	q := fmt.Sprintf(`SELECT /* innowarm:snapshot */ POOL_ID, LRU_POSITION, SPACE, PAGE_NUMBER, PAGE_TYPE, COALESCE(TABLE_NAME, ''), COALESCE(INDEX_NAME, ''), %s
		FROM %s ORDER BY POOL_ID, LRU_POSITION DESC`, srv.LRUOldExpr(oldLen), srv.BufferPageLRUTable())
	pool, head := int64(-1), uint32(0)
	err = sess.Query(ctx, q, nil, func(rows *sql.Rows) error {
		var p LRUPage
		var table string
		var poolID int64
		var pos uint32
		if err := rows.Scan(&poolID, &pos, &p.Space, &p.Page, &p.PageType, &table, &p.Index, &p.Old); err != nil {
			return err
		}
		if poolID != pool {
			pool, head = poolID, pos
		}
		p.LRU = head - pos
		st.Pages++
		if p.Space == 0 || p.Space >= tempSpaceFloor || (table != "" && !QuotedTableName(table)) {
			// The system tablespace, temporary tablespaces and InnoDB's own dictionary tables
			// (SYS_*) are not portable to another server.
			st.Unattributed++
			return nil
		}
		if o, ok := spaces[p.Space]; ok && o.p.SharedSpace {
			// Several tables' pages: the server's name says whose (none for a LOB page).
			if table == "" {
				st.Unattributed++
				return nil
			}
			p.Schema, p.Table, p.Partition = ParseTableName(table)
		} else if ok {
			p.Schema, p.Table, p.Partition = o.t.Schema, o.t.Name, o.p.Name
			if lobPageTypes[p.PageType] {
				p.Index = ""
			}
		} else if a, ok := aux[p.Space]; ok {
			p.Schema, p.Table, p.Index = a.t.Schema, a.t.Name, a.role
		} else if table != "" {
			p.Schema, p.Table, p.Partition = ParseTableName(table)
		} else {
			st.Unattributed++
			return nil
		}
		st.Attributed++
		return each(p)
	})
	if err != nil {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		return st, catalog.ExplainPrivilege(err, srv.BufferPageLRUTable())
	}
	st.Seconds = time.Since(t0).Seconds()
	return st, nil
}

func spaceOwners(cat *catalog.Catalog) map[uint32]spaceOwner {
	spaces := map[uint32]spaceOwner{}
	if cat == nil {
		return spaces
	}
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown && p.Space != 0 {
				spaces[p.Space] = spaceOwner{t, p}
			}
		}
	}
	return spaces
}

type auxOwner struct {
	t    *catalog.Table
	role string
}

// auxOwners maps the tablespaces of FULLTEXT auxiliary tables to their parent table, with a
// portable role in place of the index name ("fts:<index>:INDEX_1", "fts:CONFIG").
func auxOwners(cat *catalog.Catalog) map[uint32]auxOwner {
	out := map[uint32]auxOwner{}
	if cat == nil {
		return out
	}
	for _, t := range cat.Tables {
		for _, a := range t.Aux {
			out[a.Space] = auxOwner{t, a.Role}
		}
	}
	return out
}

// nameUnnamedPages opens the catalog tables that have B-tree pages in the pool without a
// name, so that the server names them; it returns how many it opened.
func nameUnnamedPages(ctx context.Context, sess *connection.Session, table string, spaces map[uint32]spaceOwner) (int, error) {
	var todo []*catalog.Table
	seen := map[*catalog.Table]bool{}
	err := sess.Query(ctx, "SELECT /* innowarm:inspect */ DISTINCT SPACE FROM "+table+" WHERE PAGE_TYPE = 'INDEX' AND INDEX_NAME IS NULL", nil, func(rows *sql.Rows) error {
		var space uint32
		if err := rows.Scan(&space); err != nil {
			return err
		}
		if o, ok := spaces[space]; ok && !seen[o.t] {
			seen[o.t] = true
			todo = append(todo, o.t)
		}
		return nil
	})
	if err != nil {
		return 0, catalog.ExplainPrivilege(err, table)
	}
	return openTables(ctx, sess, todo)
}

// PageSet is a set of page numbers per tablespace.
type PageSet map[uint32]*Bitmap

// Add puts page of space in the set.
func (s PageSet) Add(space, page uint32) {
	b := s[space]
	if b == nil {
		b = &Bitmap{}
		s[space] = b
	}
	b.Set(page)
}

// Has reports whether page of space is in the set.
func (s PageSet) Has(space, page uint32) bool {
	b := s[space]
	return b != nil && b.Has(page)
}

// Bitmap is a growable bit set of page numbers.
type Bitmap struct{ words []uint64 }

// Set adds n.
func (b *Bitmap) Set(n uint32) {
	w := int(n / 64)
	if w >= len(b.words) {
		grown := make([]uint64, max(w+1, 2*len(b.words)))
		copy(grown, b.words)
		b.words = grown
	}
	b.words[w] |= 1 << (n % 64)
}

// Has reports whether n is set.
func (b *Bitmap) Has(n uint32) bool {
	w := int(n / 64)
	return w < len(b.words) && b.words[w]&(1<<(n%64)) != 0
}

// Resident reads which pages of the given tablespaces are in the pool now: from the
// server's dump of its LRU list where innowarm runs on the database host (dumpfile.Check),
// which costs the server a copy of the list instead of a row and a temporary table per page
// of the pool (INNODB_BUFFER_PAGE_LRU, read elsewhere). The dump names pages by space and
// number, all this needs; it leaves out the temporary tablespace's pages, which no
// manifest names.
func Resident(ctx context.Context, conn *connection.Conn, spaces map[uint32]bool) (PageSet, error) {
	set := PageSet{}
	err := eachResidentPage(ctx, conn, func(space, page uint32) {
		if spaces == nil || spaces[space] {
			set.Add(space, page)
		}
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// CountResident counts the pages in the pool now of the tablespaces counted says, read as
// Resident reads them.
func CountResident(ctx context.Context, conn *connection.Conn, counted func(space uint32) bool) (int64, error) {
	var n int64
	err := eachResidentPage(ctx, conn, func(space, _ uint32) {
		if counted(space) {
			n++
		}
	})
	return n, err
}

// eachResidentPage calls each for every page in the pool now, as Resident reads them.
func eachResidentPage(ctx context.Context, conn *connection.Conn, each func(space, page uint32)) error {
	if !dumpfile.Check(ctx, conn).OK {
		return eachLRUTablePage(ctx, conn, "", each)
	}
	// Its info lines are left out, as SelectionCount's: probes and follow read it again and
	// again; warnings (a variable not put back) still show.
	log := logx.New(logx.Default().Writer(), true)
	b, err := dumpfile.Borrow(ctx, conn, log)
	if err != nil {
		return err
	}
	_, _, err = b.DumpEach(ctx, conn, log, func(id dumpfile.PageID) { each(id.Space(), id.Page()) })
	b.Return()
	return err
}

// ResidentFromLRUTable is Resident from INNODB_BUFFER_PAGE_LRU always: for measures taken
// while a native load holds the dump file (warm --until-coverage), which Resident would
// wait for.
func ResidentFromLRUTable(ctx context.Context, conn *connection.Conn, spaces map[uint32]bool) (PageSet, error) {
	set := PageSet{}
	err := eachLRUTablePage(ctx, conn, "", func(space, page uint32) {
		if spaces == nil || spaces[space] {
			set.Add(space, page)
		}
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// LRUListFromTable is the pool's page list as the server's dump writes it (each pool
// instance in turn, most recently used first, the tablespaces the dump lists), read from
// INNODB_BUFFER_PAGE_LRU: for a sampler that must not wait while a native load holds the
// dump file. It costs the server a row and a temporary table per page of the pool.
func LRUListFromTable(ctx context.Context, conn *connection.Conn) ([]dumpfile.PageID, error) {
	var list []dumpfile.PageID
	// LRU_POSITION counts from the list's tail: DESC is the dump's order.
	err := eachLRUTablePage(ctx, conn, " ORDER BY POOL_ID, LRU_POSITION DESC", func(space, page uint32) {
		if conn.Server.DumpListsSpace(space) {
			list = append(list, dumpfile.MakePageID(space, page))
		}
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// eachLRUTablePage calls each for every page INNODB_BUFFER_PAGE_LRU lists, in order (an
// ORDER BY clause, or "").
func eachLRUTablePage(ctx context.Context, conn *connection.Conn, order string, each func(space, page uint32)) error {
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	q := "SELECT /* innowarm:inspect */ SPACE, PAGE_NUMBER FROM " + conn.Server.BufferPageLRUTable() + order
	err = sess.Query(ctx, q, nil, func(rows *sql.Rows) error {
		var space, page uint32
		if err := rows.Scan(&space, &page); err != nil {
			return err
		}
		each(space, page)
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return catalog.ExplainPrivilege(err, conn.Server.BufferPageLRUTable())
	}
	return nil
}
