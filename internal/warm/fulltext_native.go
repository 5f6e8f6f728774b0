package warm

import (
	"context"
	"fmt"
	"os"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/ibd"
)

// sizeUnlistedFulltextTables finds, in their files, the size of the selection's FULLTEXT
// auxiliary tables whose tablespaces the server does not list, so that a native plan loads
// them with their table. It returns each such file's allocation map where its metadata
// reads (a plan loads the pages in use, as pagesInUse does for listed files), and a skip,
// with why, for each table it cannot size.
//
// MariaDB lists a tablespace in INNODB_SYS_TABLESPACES, with its size and file, only once
// it opened it since its start (flavor.TablespacesListAll): the catalog's reads open the
// selected tables but not their FULLTEXT indexes' auxiliary tables, which the server opens
// on a MATCH() (CONFIG, DELETED, DELETED_CACHE and the INDEX_n its words fall in) or an
// OPTIMIZE TABLE (BEING_DELETED*). After a restart a native plan found none of them sized
// and loaded none (a user test on 10.11 and 11.8). The loader itself reads them: it opens
// the tablespaces its list names (MDEV-32027, the change that stopped opening every one at
// startup), seen on 10.11.19 and 11.8.9. So no statement is needed to open them
// (a MATCH() would reach only the INDEX_n its words' collation weights select: under
// 11.8's default utf8mb4_uca1400_ai_ci every Latin word falls in INDEX_1). A native load
// runs on the database host, where each auxiliary table's file lies beside its table's,
// named after it; the file's own space id is checked where its header page is written.
func sizeUnlistedFulltextTables(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog) (map[uint32]*ibd.Map, []catalog.Skip) {
	srv := conn.Server
	if srv.TablespacesListAll() {
		return nil, nil
	}
	type auxRef struct {
		t *catalog.Table
		a *catalog.AuxSpace
	}
	var unsized []auxRef
	parents := map[uint32]bool{}
	for _, t := range cat.Tables {
		if len(t.Parts) != 1 || !t.Parts[0].SpaceKnown || t.Parts[0].Space == 0 {
			// A table in the system tablespace keeps its auxiliary tables there: a native
			// load leaves it out (systemSpaceSkip).
			continue
		}
		for i := range t.Aux {
			if a := &t.Aux[i]; a.FileSize == 0 && a.Space != 0 {
				unsized = append(unsized, auxRef{t, a})
				parents[t.Parts[0].Space] = true
			}
		}
	}
	if len(unsized) == 0 {
		return nil, nil
	}
	// The table's own file says where its auxiliary tables are (the datadir, or its DATA
	// DIRECTORY); where the server names none, the datadir.
	files, err := catalog.TablespaceFiles(ctx, conn, parents)
	if err != nil {
		files = map[uint32]string{}
	}
	maps := map[uint32]*ibd.Map{}
	var skips []catalog.Skip
	for _, u := range unsized {
		size, m, err := auxFile(u.a.FilePath(files[u.t.Parts[0].Space], srv.Datadir), srv.PageSize, u.a.Space)
		if err != nil {
			skips = append(skips, catalog.Skip{Schema: u.t.Schema, Table: u.t.Name, Index: u.a.Role,
				Reason: fmt.Sprintf("full-text index table not opened by the server since its start, so its size is unknown, and its file cannot be read here: %v", err)})
			continue
		}
		u.a.FileSize = size
		if m != nil {
			maps[u.a.Space] = m
		}
	}
	return maps, skips
}

// auxFile is the size of the tablespace file at path and, where its metadata reads, its
// allocation map; an error when it cannot be read or holds another tablespace than space.
func auxFile(path string, pageSize int, space uint32) (int64, *ibd.Map, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, nil, err
	}
	// A header page not written yet (ibd.ErrHeaderNotWritten), or metadata that does not
	// read: no map, and the file is loaded whole, as a listed one would be.
	m, _ := ibd.Open(path, pageSize, nil)
	if m != nil && m.SpaceID != space {
		return 0, nil, fmt.Errorf("%s holds tablespace %d, not %d", path, m.SpaceID, space)
	}
	return st.Size(), m, nil
}
