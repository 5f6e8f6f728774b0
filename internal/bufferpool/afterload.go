package bufferpool

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/ibd"
)

// loadProof is what a dump-sourced read saw, kept so that the residency after a load can be
// proved from the page counters instead of another read of the pool.
type loadProof struct {
	counters    PageCounters
	resident    PageSet // the selection's resident pages
	namer       *fileNamer
	spaces      map[uint32]spaceOwner
	cat         *catalog.Catalog
	includeZero bool
	// auxPages: the FULLTEXT auxiliary tables' pages in use, as the read sized their rows
	// (residencyBuilder.auxPages): a load reads their files, it does not change them.
	auxPages map[uint32]int64
}

// AfterLoad is the residency after the server's loader has read requested (every one of
// them, to completion), proved from the page counters rather than read from the pool: a
// read costs the server a copy of its whole LRU list (0.2 µs a page: seconds at 512 GiB),
// the proof one status read. It holds when no page left the pool since before was read
// (PageCounters.LeftSince is 0): every page resident then still is, and every requested
// page is too, read by the loader or resident already; so each index's resident count is
// its count before plus its requested pages that were not resident. The requested pages
// are named from the same tablespace metadata the read used.
//
// A FULLTEXT index's auxiliary tables are counted by their rows, not page by page: their
// requested pages count as loaded where the read before found none of that table's pages
// resident (after a restart), as ReadDump names them (all but the file's fixed metadata
// pages and MySQL's SDI root).
//
// It returns nil and the reason when the counters cannot prove it: pages left the pool,
// before was not read from the dump, the loader read fewer pages than were missing (a
// page it could not read), a requested page is a clustered leaf of a table whose rows
// can go off-page (only the page's header tells a BLOB page from a leaf; a read names it),
// or of an auxiliary table some of whose pages were resident before (which ones, the read
// did not keep).
// Old (the old sublist share) is not known after such a proof: it is left as before.
func (before *Residency) AfterLoad(ctx context.Context, conn *connection.Conn, requested []dumpfile.PageID) (*Residency, string, error) {
	p := before.proof
	if p == nil {
		return nil, "the pool was not read from the server's dump", nil
	}
	now, err := ReadPageCounters(ctx, conn)
	if err != nil {
		return nil, "", err
	}
	if now.Uptime < p.counters.Uptime {
		return nil, "the server restarted", nil
	}
	if left := now.LeftSince(p.counters); left > 0 {
		return nil, fmt.Sprintf("%d pages left the pool during the load", left), nil
	}
	// The read named the pages of tablespaces it found resident; a load may have read
	// others (MySQL opens a table without reading its root).
	unread := map[uint32]bool{}
	for _, id := range requested {
		if _, ok := p.spaces[id.Space()]; ok && p.namer.maps[id.Space()] == nil {
			unread[id.Space()] = true
		}
	}
	if len(unread) > 0 {
		more, err := newFileNamer(ctx, conn, p.cat, unread)
		if err != nil {
			return nil, "", err
		}
		if bad := append(append([]string(nil), more.unreadable...), more.unlisted...); len(bad) > 0 {
			return nil, strings.Join(bad, "; "), nil
		}
		p.namer.merge(more)
	}
	rows := map[indexKey]*IndexResidency{}
	for _, r := range before.Indexes {
		r := r
		rows[indexKey{r.Space, ownerKey(r.Schema, r.Table, r.Partition), r.Index}] = &r
	}
	rb := &residencyBuilder{byKey: rows, auxPages: p.auxPages, auxRead: true}
	var missing int64
	lobs := map[indexKey]bool{}
	aux := auxOwners(p.cat)
	sdiRoot, pageSize := conn.Server.NewTablespaceSDIRoot(), conn.Server.PageSize
	for _, id := range requested {
		space, page := id.Space(), id.Page()
		if a, ok := aux[space]; ok {
			if n := before.auxResident[space]; n > 0 {
				return nil, fmt.Sprintf("%d pages of %s.%s's full-text table %s were resident before the load, and the read kept no list of them", n, a.t.Schema, a.t.Name, a.role), nil
			}
			if len(a.t.Parts) != 1 || ibd.FixedMetadataPage(page, pageSize) || (sdiRoot != 0 && page == sdiRoot) {
				// The file's bookkeeping: no row's (ReadDump counts it in Other).
				continue
			}
			r := rb.get(a.t.Parts[0].Space, spaceOwner{a.t, a.t.Parts[0]}, fulltextIndex(a.role))
			r.Fulltext = true
			r.Resident++
			missing++
			continue
		}
		owner, ok := p.spaces[space]
		if !ok || p.resident.Has(space, page) {
			continue
		}
		missing++
		m := p.namer.maps[space]
		if m == nil {
			return nil, fmt.Sprintf("tablespace %d's metadata was not read", space), nil
		}
		kind, ix, leaf := m.Segment(page)
		name, named := p.namer.names[ix]
		switch {
		case kind == ibd.IndexPage && named:
			k := indexKey{space, "", name}
			lob, seen := lobs[k]
			if !seen {
				lob = mayHoldLOBs(owner.t, name)
				lobs[k] = lob
			}
			if leaf && lob {
				return nil, fmt.Sprintf("%s.%s holds off-page columns: its loaded leaf pages are named by reading the pool", owner.t.Schema, owner.t.Name), nil
			}
			rb.get(space, owner, name).Resident++
		}
		// Otherwise metadata, SDI and pages no index's segment claims: no index's.
	}
	if read := now.Read - p.counters.Read; read < missing {
		return nil, fmt.Sprintf("the server read %d pages of the %d that were missing", read, missing), nil
	}
	totals, err := ReadTotals(ctx, conn)
	if err != nil {
		return nil, "", err
	}
	res := &Residency{Totals: totals, PageList: before.PageList, Selected: before.Selected + missing, Other: max(totals.PagesData-before.Selected-missing, 0),
		Unnamed: before.Unnamed, Proof: fmt.Sprintf("page counters: no page left the pool during the load, %d requested pages were read", missing)}
	rb.finish(res, p.cat, p.includeZero)
	return res, "", nil
}

// merge adds another namer's tablespaces.
func (fn *fileNamer) merge(o *fileNamer) {
	if fn.paths == nil {
		fn.paths = map[uint32]string{}
	}
	maps.Copy(fn.maps, o.maps)
	maps.Copy(fn.paths, o.paths)
	maps.Copy(fn.names, o.names)
	maps.Copy(fn.spaceOf, o.spaceOf)
}
