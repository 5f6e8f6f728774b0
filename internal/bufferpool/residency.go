package bufferpool

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// Page types that hold B-tree nodes, and those that hold off-page column data.
var (
	indexPageTypes = map[string]bool{"INDEX": true, "RTREE_INDEX": true, "SDI_INDEX": true}
	lobPageTypes   = map[string]bool{
		"BLOB": true, "COMPRESSED_BLOB": true, "COMPRESSED_BLOB2": true, "LOB_FIRST": true, "LOB_DATA": true,
		"LOB_INDEX": true, "ZLOB_FIRST": true, "ZLOB_DATA": true, "ZLOB_INDEX": true, "ZLOB_FRAG": true, "ZLOB_FRAG_ENTRY": true,
		"SDI_BLOB": true, "SDI_COMPRESSED_BLOB": true,
	}
)

// IsLOBPageType says whether a page type (INNODB_BUFFER_PAGE's PAGE_TYPE, as a manifest
// records it) is of off-page column data: a BLOB or LOB page of a table's records, not
// MySQL's copy of its dictionary entry (SDI_BLOB).
func IsLOBPageType(pageType string) bool {
	return lobPageTypes[pageType] && !strings.HasPrefix(pageType, "SDI_")
}

// Where an index's size comes from.
const (
	SizeFromStatistics = "statistics"          // mysql.innodb_index_stats
	SizeEstimated      = "estimate"            // information_schema.TABLES, no statistics
	SizeCounted        = "counted in the file" // the tablespace file's segments (catalog.IndexSize.FromFile)
	SizeFromFile       = "tablespace file"     // statistics below what is resident: the file bounds it
	SizeResidentFloor  = "resident (at least)" // and no file size either
)

// UnknownIndex names resident B-tree pages whose index the server could not name.
const UnknownIndex = "(unknown index)"

// IndexResidency is what the pool holds of one index of one table part.
type IndexResidency struct {
	Schema    string `json:"schema"`
	Table     string `json:"table"`
	Partition string `json:"partition,omitempty"`
	Index     string `json:"index"`
	Clustered bool   `json:"clustered,omitempty"`
	Resident  int64  `json:"resident_pages"`
	Old       int64  `json:"old_pages"`
	Dirty     int64  `json:"dirty_pages"`
	// LOB pages belong to the clustered index's allocation but are counted apart.
	LOBResident int64 `json:"lob_resident_pages,omitempty"`
	// LeafPages and SizePages come from the catalog (persistent statistics); Known is false
	// for estimates and for indexes not in the catalog.
	LeafPages int64 `json:"leaf_pages"`
	Pages     int64 `json:"pages"`     // B-tree pages the index has, at most (from statistics)
	MinPages  int64 `json:"min_pages"` // and at least; equal when statistics are exact
	SizePages int64 `json:"size_pages"`
	LOBPages  int64 `json:"lob_pages_estimate,omitempty"`
	Known     bool  `json:"size_known"` // Pages is exact: coverage is exact, else a lower bound
	// PagesIncludeLOB: Pages bounds the B-tree and the off-page LOB pages together (a
	// clustered index whose statistics count both, and no file to tell them apart).
	PagesIncludeLOB bool `json:"pages_include_lob,omitempty"`
	// SizeSource says where Pages comes from (SizeFromStatistics, SizeEstimated,
	// SizeFromFile, SizeResidentFloor); SizeNote why a statistic was not believed.
	SizeSource string  `json:"size_source,omitempty"`
	SizeNote   string  `json:"size_note,omitempty"`
	Coverage   float64 `json:"coverage"` // resident B-tree pages / Pages, at most 1
	Space      uint32  `json:"space"`
	// Fulltext: a FULLTEXT index, whose pages are those of its auxiliary tables (their
	// files size it), or FulltextCommon, the tables its table's FULLTEXT indexes share.
	Fulltext bool `json:"fulltext,omitempty"`
}

// FulltextCommon names the auxiliary tables a table's FULLTEXT indexes share (its deleted
// document lists and configuration), listed beside the indexes.
const FulltextCommon = "(fulltext common)"

// fulltextIndex is the row a FULLTEXT auxiliary table's pages count under: its index's
// name for an index table (role "fts:<index>:INDEX_n"), FulltextCommon for the others.
func fulltextIndex(role string) string {
	rest, _ := strings.CutPrefix(role, "fts:")
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		return rest[:i]
	}
	return FulltextCommon
}

// addAux counts pages of an auxiliary table of a FULLTEXT index (a) in its row: B-tree
// pages and the off-page parts of their word lists as resident (the files that size the
// row hold both), the others (the file's own bookkeeping, and MySQL's copy of the table's
// dictionary entry, its SDI, which the file's map counts as bookkeeping too) as the
// selection's other pages. It keeps each auxiliary table's resident count as well
// (FulltextResident).
func (rb *residencyBuilder) addAux(res *Residency, a auxOwner, pageType string, pages, old, dirty int64) {
	res.Selected += pages
	if !indexPageTypes[pageType] && !lobPageTypes[pageType] || strings.HasPrefix(pageType, "SDI_") || len(a.t.Parts) != 1 {
		res.Other += pages
		return
	}
	r := rb.get(a.t.Parts[0].Space, spaceOwner{a.t, a.t.Parts[0]}, fulltextIndex(a.role))
	r.Fulltext = true
	r.Resident += pages
	r.Old += old
	r.Dirty += dirty
	for _, x := range a.t.Aux {
		if x.Role == a.role {
			if res.auxResident == nil {
				res.auxResident = map[uint32]int64{}
			}
			res.auxResident[x.Space] += pages
			break
		}
	}
}

// FulltextResident is how many pages of the FULLTEXT auxiliary table in tablespace space
// the pool holds, as its row counts them (B-tree and off-page pages, not the file's
// bookkeeping): a row sums a FULLTEXT index's tables, a native plan loads them one by one.
func (r *Residency) FulltextResident(space uint32) int64 {
	return r.auxResident[space]
}

// fulltextFilePages counts, for each FULLTEXT auxiliary table of cat, the pages its file's
// allocation map has in use, less the file's bookkeeping (ibd.FileMetadata: the space
// header, bitmap and inode pages, and MySQL's SDI): the pages a row counts as resident
// (addAux). A file is as large as the server last extended it, several times the pages it
// uses (a user's fully loaded index showed 907 resident pages of a 4,014-page bound); its
// map says what is used, as a native load plans it (warm's pagesInUse).
//
// An auxiliary table's file is the one the server lists (paths), else the one beside its
// table's file (paths of the table's tablespace: the datadir or its DATA DIRECTORY), named
// after it, else in the datadir: MariaDB lists the tablespace only once it opened it since
// its start. The file's own space id must be the table's. opened are maps already read (the
// file namer's), not read again. A file whose map does not read (not on this host, not
// written yet, encrypted) is left out: its row keeps its file size as a bound.
func fulltextFilePages(cat *catalog.Catalog, paths map[uint32]string, opened map[uint32]*ibd.Map) map[uint32]int64 {
	out := map[uint32]int64{}
	if cat == nil {
		return out
	}
	srv := cat.Server
	for _, t := range cat.Tables {
		if len(t.Aux) == 0 || len(t.Parts) != 1 || !t.Parts[0].SpaceKnown || t.Parts[0].Space == 0 {
			continue
		}
		for _, a := range t.Aux {
			m := opened[a.Space]
			if m == nil {
				path := paths[a.Space]
				if path == "" {
					path = a.FilePath(paths[t.Parts[0].Space], srv.Datadir)
				}
				if path == "" {
					continue
				}
				var err error
				if m, err = ibd.Open(path, srv.PageSize, nil); err != nil || m.SpaceID != a.Space {
					continue
				}
			}
			var n int64
			for pg := uint32(0); pg < m.FreeLimit; pg++ {
				if kind, _, _ := m.Segment(pg); m.InUse(pg) && kind != ibd.FileMetadata {
					n++
				}
			}
			out[a.Space] = n
		}
	}
	return out
}

// fulltextPaths lists, for Read, the files of cat's FULLTEXT auxiliary tables and of their
// tables (fulltextFilePages): nil where there are none, or where the datadir cannot be
// read here (innowarm on another host), which spares the server the query.
func fulltextPaths(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog) map[uint32]string {
	if cat == nil || cat.Server.Datadir == "" {
		return nil
	}
	want := map[uint32]bool{}
	for _, t := range cat.Tables {
		if len(t.Aux) == 0 || len(t.Parts) != 1 || !t.Parts[0].SpaceKnown {
			continue
		}
		want[t.Parts[0].Space] = true
		for _, a := range t.Aux {
			want[a.Space] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	if st, err := os.Stat(cat.Server.Datadir); err != nil || !st.IsDir() {
		return nil
	}
	paths, err := catalog.TablespaceFiles(ctx, conn, want)
	if err != nil {
		// The files beside the datadir's names are tried still; the rows keep their
		// file sizes where those are not found.
		return nil
	}
	return paths
}

// Residency is the pool's content by index, plus the pool totals.
type Residency struct {
	Totals  Totals           `json:"totals"`
	Indexes []IndexResidency `json:"indexes"`
	// Other counts data pages not attributed to any index: system and undo pages, page-type
	// bookkeeping pages of tables, spaces of tables outside the selection.
	Other        int64   `json:"other_pages"`
	Selected     int64   `json:"selected_pages"` // pages of the catalog's tables
	ReadSeconds  float64 `json:"read_seconds"`
	OpenedTables int     `json:"opened_tables,omitempty"`
	// PageList says where the page list came from: SourceLRUTable (Read) or SourceDump
	// (ReadDump, which knows no dirty pages: Dirty is 0 then).
	PageList string `json:"page_list,omitempty"`
	// PageListNote says why the LRU table was read where the dump was asked for.
	PageListNote string `json:"page_list_note,omitempty"`
	// Unnamed counts resident pages of the selection that ReadDump could place in their
	// table but not in an index: allocated since the server last wrote them (or the file's
	// allocation metadata) to disk. They are listed under UnknownIndex.
	Unnamed int64 `json:"unnamed_pages,omitempty"`
	// ListSeconds is, of ReadSeconds, the server writing its dump (ReadDump).
	ListSeconds float64 `json:"list_seconds,omitempty"`
	// Proof says how a residency computed by AfterLoad was established; empty for a read.
	Proof string `json:"proof,omitempty"`

	proof *loadProof // what ReadDump saw, for AfterLoad
	// auxResident: resident pages of each FULLTEXT auxiliary table, by tablespace
	// (FulltextResident).
	auxResident map[uint32]int64
	// unnamedFresh: the part of Unnamed in tablespaces whose header page is not written
	// yet (fileNamer.fresh), where every unwritten page of the table goes unnamed.
	unnamedFresh int64
}

type pageGroup struct {
	space      uint32
	table      string
	index      string
	pageType   string
	pages, old int64
	dirty      int64
}

// ReadOptions shape Read's answer.
type ReadOptions struct {
	// IncludeZero lists catalog indexes with no resident page too.
	IncludeZero bool
	// OnlyCatalog leaves out the system tables' indexes, which are otherwise listed by name.
	OnlyCatalog bool
}

// Read aggregates information_schema.INNODB_BUFFER_PAGE_LRU by tablespace and index and maps
// it onto the catalog. The LRU view lists only the pages that hold data, so it costs what the
// pool holds, not the pool's size (on a cold 2 GiB pool: 0.02 s against 0.3-0.45 s for
// INNODB_BUFFER_PAGE, which walks every free block too). Pages of tables the server has not opened since its restart carry no
// names; Read opens those tables (SELECT ... LIMIT 0 reads no rows) and reads again, so
// their pages are attributed to the right index.
func Read(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, o ReadOptions) (*Residency, error) {
	includeZero := o.IncludeZero
	t0 := time.Now()
	spaces := map[uint32]spaceOwner{}
	// shared: the owners of tablespaces several tables share, by the name this table
	// gives a page's table ("`db`.`t`", partitions "`db`.`t` /* Partition `p` */").
	shared := map[uint32]map[string]spaceOwner{}
	if cat != nil {
		for _, t := range cat.Tables {
			for _, p := range t.Parts {
				if p.SpaceKnown {
					spaces[p.Space] = spaceOwner{t, p}
					// The system tablespace (a table created while innodb_file_per_table
					// was off) holds every such table, and InnoDB's own pages.
					if p.SharedSpace || p.Space == 0 {
						if shared[p.Space] == nil {
							shared[p.Space] = map[string]spaceOwner{}
						}
						shared[p.Space][ownerKey(t.Schema, t.Name, p.Name)] = spaceOwner{t, p}
					}
				}
			}
		}
	}
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	groups, err := readGroups(ctx, sess, conn.Server)
	if err != nil {
		return nil, err
	}
	opened := 0
	if unnamed := tablesWithUnnamedPages(groups, spaces); len(unnamed) > 0 {
		n, err := openTables(ctx, sess, unnamed)
		if err != nil {
			return nil, err
		}
		opened = n
		if groups, err = readGroups(ctx, sess, conn.Server); err != nil {
			return nil, err
		}
	}
	totals, err := ReadTotals(ctx, conn)
	if err != nil {
		return nil, err
	}
	res := &Residency{Totals: totals, OpenedTables: opened, PageList: SourceLRUTable}
	rb := newResidencyBuilder()
	rb.auxPaths = fulltextPaths(ctx, conn, cat)
	aux := auxOwners(cat)
	for _, g := range groups {
		if a, ok := aux[g.space]; ok {
			rb.addAux(res, a, g.pageType, g.pages, g.old, g.dirty)
			continue
		}
		owner, inCatalog := spaces[g.space]
		if owners := shared[g.space]; owners != nil {
			// The page's own table, by name; a page of a table not selected, or one the
			// server names no table of (its LOB pages), is not the selection's.
			schema, table, part := ParseTableName(g.table)
			owner, inCatalog = owners[ownerKey(schema, table, part)]
		}
		switch {
		case !inCatalog:
			if g.table != "" && indexPageTypes[g.pageType] {
				schema, table, part := ParseTableName(g.table)
				if cat == nil || (catalog.SystemSchemas[schema] && !o.OnlyCatalog) {
					k := indexKey{g.space, ownerKey(schema, table, part), g.index}
					r := rb.byKey[k]
					if r == nil {
						r = &IndexResidency{Schema: schema, Table: table, Partition: part, Index: g.index, Space: g.space}
						rb.byKey[k] = r
					}
					r.Resident += g.pages
					r.Old += g.old
					r.Dirty += g.dirty
					continue
				}
			}
			res.Other += g.pages
		case strings.HasPrefix(g.pageType, "SDI_"):
			// MySQL keeps a copy of the table's dictionary entry in every tablespace (the
			// SDI: SDI_INDEX pages of an index named CLUST_IND_SDI, or of none after a
			// native load, and SDI_BLOB pages): it is no index of the table, nor its LOB.
			res.Other += g.pages
			res.Selected += g.pages
		case indexPageTypes[g.pageType]:
			name := g.index
			if name == "" && g.pageType == "RTREE_INDEX" {
				// MariaDB's INNODB_BUFFER_PAGE_LRU names no R-tree page, open table or
				// not; only a SPATIAL index has R-tree pages, so a table's only one owns them.
				name = onlySpatialIndex(owner.t)
			}
			if name == "" {
				name = UnknownIndex
			}
			r := rb.get(g.space, owner, name)
			r.Resident += g.pages
			r.Old += g.old
			r.Dirty += g.dirty
			res.Selected += g.pages
		case lobPageTypes[g.pageType]:
			clustered := owner.t.Clustered()
			r := rb.get(g.space, owner, clustered.Name)
			r.LOBResident += g.pages
			r.Old += g.old
			r.Dirty += g.dirty
			res.Selected += g.pages
		default:
			res.Other += g.pages
			res.Selected += g.pages
		}
	}
	rb.finish(res, cat, includeZero)
	res.ReadSeconds = time.Since(t0).Seconds()
	return res, nil
}

// indexKey names an index of a tablespace (a table or partition); in a tablespace several
// tables share, of which table (schema, table and partition, NUL-separated).
type indexKey struct {
	space uint32
	table string
	index string
}

func ownerKey(schema, table, part string) string { return schema + "\x00" + table + "\x00" + part }

// residencyBuilder collects IndexResidency rows by tablespace and index.
type residencyBuilder struct {
	byKey map[indexKey]*IndexResidency
	// auxPages: the pages in use of each FULLTEXT auxiliary table's file whose map read
	// (fulltextFilePages), by tablespace; read by finish once (auxRead), or given (AfterLoad,
	// from the read before the load: a load changes no file's map). auxPaths are the files
	// the server lists, where the caller read them.
	auxPages map[uint32]int64
	auxRead  bool
	auxPaths map[uint32]string
}

func newResidencyBuilder() *residencyBuilder {
	return &residencyBuilder{byKey: map[indexKey]*IndexResidency{}}
}

func (rb *residencyBuilder) get(space uint32, owner spaceOwner, index string) *IndexResidency {
	k := indexKey{space, ownerKey(owner.t.Schema, owner.t.Name, owner.p.Name), index}
	if r := rb.byKey[k]; r != nil {
		return r
	}
	r := &IndexResidency{Schema: owner.t.Schema, Table: owner.t.Name, Partition: owner.p.Name, Index: index, Space: space}
	rb.byKey[k] = r
	return r
}

// finish gives the catalog's indexes their sizes and coverage (and, with includeZero, rows
// for the indexes with nothing resident) and puts the rows in res, most resident first.
func (rb *residencyBuilder) finish(res *Residency, cat *catalog.Catalog, includeZero bool) {
	totals := res.Totals
	if !rb.auxRead {
		rb.auxRead = true
		paths, opened := rb.auxPaths, map[uint32]*ibd.Map(nil)
		if p := res.proof; p != nil && p.namer != nil {
			// ReadDump's file namer knows the files of the tables it named pages of.
			paths, opened = p.namer.paths, p.namer.maps
		}
		rb.auxPages = fulltextFilePages(cat, paths, opened)
		if res.proof != nil {
			res.proof.auxPages = rb.auxPages
		}
	}
	if cat != nil {
		for _, t := range cat.Tables {
			for _, p := range t.Parts {
				rb.finishFulltext(t, p, int64(totals.PageSize), includeZero)
				for _, ix := range t.Indexes {
					if ix.Type == "FULLTEXT" {
						continue
					}
					k := indexKey{p.Space, ownerKey(t.Schema, t.Name, p.Name), ix.Name}
					r := rb.byKey[k]
					if r == nil {
						if !includeZero || !p.SpaceKnown {
							continue
						}
						r = rb.get(p.Space, spaceOwner{t, p}, ix.Name)
					}
					sz := ix.Sizes[p.Name]
					lo, hi := t.IndexPages(ix, p)
					r.LeafPages, r.Pages, r.MinPages, r.SizePages, r.Clustered = sz.LeafPages, hi, lo, sz.Pages, ix.Clustered
					r.Known = lo == hi && (sz.Known || sz.FromFile)
					r.PagesIncludeLOB = ix.Clustered && lo != hi && t.MayHoldLOBs()
					switch {
					case sz.FromFile:
						r.SizeSource = SizeCounted
					case sz.Known:
						r.SizeSource = SizeFromStatistics
					default:
						r.SizeSource = SizeEstimated
					}
					switch {
					case r.Resident <= hi:
					case sz.FromFile:
						// Pages allocated since the server last wrote the file's descriptors.
						r.Known, r.MinPages, r.Pages, r.SizeSource = false, r.Resident, r.Resident, SizeResidentFloor
						r.SizeNote = fmt.Sprintf("the file counts %d pages as last written, fewer than the %d resident", hi, r.Resident)
					default:
						// Statistics not recomputed since the table grew (a bulk load):
						// a size smaller than what is resident is not believed. The
						// tablespace file bounds every index in it.
						r.Known, r.MinPages = false, r.Resident
						r.Pages, r.SizeSource = r.Resident, SizeResidentFloor
						if filePages := p.FileSize / int64(max(totals.PageSize, 1)); filePages > r.Resident {
							r.Pages, r.SizeSource = filePages, SizeFromFile
						}
						r.SizeNote = fmt.Sprintf("statistics say %d pages, fewer than the %d resident", hi, r.Resident)
					}
					if ix.Clustered {
						r.LOBPages = t.LOBPages(p)
					}
				}
			}
		}
	}
	for _, r := range rb.byKey {
		r.Coverage = coverage(r.Resident, r.Pages)
		res.Indexes = append(res.Indexes, *r)
	}
	sort.Slice(res.Indexes, func(i, j int) bool {
		a, b := res.Indexes[i], res.Indexes[j]
		if a.Resident+a.LOBResident != b.Resident+b.LOBResident {
			return a.Resident+a.LOBResident > b.Resident+b.LOBResident
		}
		return a.Schema+"\x00"+a.Table+"\x00"+a.Partition+"\x00"+a.Index < b.Schema+"\x00"+b.Table+"\x00"+b.Partition+"\x00"+b.Index
	})
}

// finishFulltext sizes the FULLTEXT rows of t (part p, its only one) by their auxiliary
// tables' files: no statistics count them. Where every file's map reads, a row is at most
// the pages they have in use (rb.auxPages, SizeCounted); else the files' lengths bound it
// (SizeFromFile). Either is the files as the server last wrote them (pages freed since
// still count), so a row is a range from what is resident to that bound, not Known, and
// its coverage a lower bound; the readiness gate leaves these rows out (SelectionCount).
func (rb *residencyBuilder) finishFulltext(t *catalog.Table, p *catalog.Part, pageSize int64, includeZero bool) {
	if len(t.Aux) == 0 || len(t.Parts) != 1 {
		return
	}
	type size struct {
		pages   int64
		counted bool // every file's map read
	}
	sizes := map[string]*size{}
	for _, a := range t.Aux {
		name := fulltextIndex(a.Role)
		s := sizes[name]
		if s == nil {
			s = &size{counted: true}
			sizes[name] = s
		}
		if n, ok := rb.auxPages[a.Space]; ok {
			s.pages += n
			continue
		}
		s.counted = false
		n := a.FileSize / max(pageSize, 1)
		// Less the file's fixed metadata pages (ibd.FixedMetadataPage): the space
		// header, bitmap and inode pages, and two more in each later group of
		// pageSize pages.
		s.pages += max(n-3-2*((n-1)/max(pageSize, 1)), 0)
	}
	for name, s := range sizes {
		r := rb.byKey[indexKey{p.Space, ownerKey(t.Schema, t.Name, p.Name), name}]
		if r == nil {
			if !includeZero || !p.SpaceKnown {
				continue
			}
			r = rb.get(p.Space, spaceOwner{t, p}, name)
			r.Fulltext = true
		}
		r.Pages, r.MinPages, r.SizeSource = max(s.pages, r.Resident), r.Resident, SizeFromFile
		if s.counted {
			r.SizeSource = SizeCounted
		}
		if r.Resident > s.pages {
			// Pages allocated since the server last wrote the files' metadata, or freed
			// since and still in the pool (MySQL's index build leaves one such page in
			// each INDEX_n table).
			r.SizeSource = SizeResidentFloor
		}
	}
}

// coverage is resident B-tree pages over the pages the index has, at most 1. Where
// statistics only bound the size from above (Known false), it is a lower bound.
func coverage(resident, pages int64) float64 {
	if pages <= 0 {
		if resident > 0 {
			return 1
		}
		return 0
	}
	c := float64(resident) / float64(pages)
	if c > 1 {
		c = 1
	}
	return c
}

type spaceOwner struct {
	t *catalog.Table
	p *catalog.Part
}

func readGroups(ctx context.Context, sess *connection.Session, srv flavor.Server) ([]pageGroup, error) {
	oldLen, err := lruOldLen(ctx, sess, srv)
	if err != nil {
		return nil, err
	}
	q := fmt.Sprintf(`SELECT /* innowarm:inspect */ SPACE, COALESCE(TABLE_NAME, ''), COALESCE(INDEX_NAME, ''), PAGE_TYPE,
		COUNT(*), SUM(%s), SUM(OLDEST_MODIFICATION > 0)
		FROM %s GROUP BY SPACE, TABLE_NAME, INDEX_NAME, PAGE_TYPE`,
		srv.LRUOldExpr(oldLen), srv.BufferPageLRUTable())
	var out []pageGroup
	err = sess.Query(ctx, q, nil, func(rows *sql.Rows) error {
		var g pageGroup
		if err := rows.Scan(&g.space, &g.table, &g.index, &g.pageType, &g.pages, &g.old, &g.dirty); err != nil {
			return err
		}
		out = append(out, g)
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, catalog.ExplainPrivilege(err, srv.BufferPageLRUTable())
	}
	return out, nil
}

// onlySpatialIndex is the name of t's SPATIAL index when it has exactly one, else "".
func onlySpatialIndex(t *catalog.Table) string {
	name := ""
	for _, ix := range t.Indexes {
		if ix.Type == "SPATIAL" {
			if name != "" {
				return ""
			}
			name = ix.Name
		}
	}
	return name
}

func tablesWithUnnamedPages(groups []pageGroup, spaces map[uint32]spaceOwner) []*catalog.Table {
	seen := map[*catalog.Table]bool{}
	var out []*catalog.Table
	for _, g := range groups {
		if g.index != "" || !indexPageTypes[g.pageType] {
			continue
		}
		if o, ok := spaces[g.space]; ok && g.space != 0 && !seen[o.t] {
			seen[o.t] = true
			out = append(out, o.t)
		}
	}
	return out
}

// ParseTableName reads INNODB_BUFFER_PAGE.TABLE_NAME: "`db`.`t`", with
// " /* Partition `p0` */" (and a subpartition) for partitions; quotes inside names are
// doubled. A session whose sql_mode has ANSI_QUOTES (a server's global default) gets the
// names in double quotes instead.
func ParseTableName(s string) (schema, table, partition string) {
	parts := readQuoted(s)
	if len(parts) > 0 {
		schema = parts[0]
	}
	if len(parts) > 1 {
		table = parts[1]
	}
	if len(parts) > 2 {
		partition = parts[len(parts)-1]
	}
	if len(parts) == 0 && strings.Contains(s, "/") {
		schema, table, _ = strings.Cut(s, "/")
	}
	return schema, table, partition
}

// QuotedTableName says whether an INNODB_BUFFER_PAGE.TABLE_NAME names a table by SQL
// names (a user or system table), not by InnoDB's internal name (its dictionary's SYS_*).
func QuotedTableName(s string) bool {
	return strings.HasPrefix(s, "`") || strings.HasPrefix(s, `"`)
}

// readQuoted returns every quoted name in s (in backticks, or double quotes under
// ANSI_QUOTES), in order.
func readQuoted(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		q := s[i]
		if q != '`' && q != '"' {
			continue
		}
		var b strings.Builder
		j := i + 1
		for ; j < len(s); j++ {
			if s[j] == q {
				if j+1 < len(s) && s[j+1] == q {
					b.WriteByte(q)
					j++
					continue
				}
				break
			}
			b.WriteByte(s[j])
		}
		out = append(out, b.String())
		i = j
	}
	return out
}

// openTables opens tables (SELECT ... LIMIT 0 reads no rows) so that the server names their
// pages. A table locked behind DDL is left alone after a short wait: its pages then stay
// attributed to the table but not to an index.
func openTables(ctx context.Context, sess *connection.Session, tables []*catalog.Table) (int, error) {
	if err := sess.SetLockWaitTimeout(ctx, 2*time.Second); err != nil {
		return 0, err
	}
	opened := 0
	for _, t := range tables {
		_, err := sess.Exec(ctx, "SELECT * FROM "+t.Quoted()+" LIMIT 0")
		switch {
		case err == nil:
			opened++
		case sqlerr.Is(err, sqlerr.LockWaitTimeout, sqlerr.NoSuchTable):
		default:
			return opened, fmt.Errorf("open %s to attribute its pages: %w", t.FullName(), err)
		}
	}
	return opened, nil
}

// lruOldLen is the length of the LRU list's old part, for flavor.LRUOldExpr, from SHOW
// ENGINE INNODB STATUS ("Old database pages"); 0 where the flavor does not need it. Read
// just before the page list, it is off by the pages that moved in between, which is what
// any reading of a live LRU list is.
func lruOldLen(ctx context.Context, sess *connection.Session, srv flavor.Server) (int64, error) {
	if !srv.NeedsLRUOldLen() {
		return 0, nil
	}
	var typ, name, status string
	if err := sess.QueryRow(ctx, "SHOW ENGINE INNODB STATUS", nil, &typ, &name, &status); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, catalog.ExplainPrivilege(err, "SHOW ENGINE INNODB STATUS")
	}
	return ParseLRUOldLen(status)
}

// ParseLRUOldLen reads "Old database pages" from the BUFFER POOL AND MEMORY section of SHOW
// ENGINE INNODB STATUS (its first occurrence: the totals, before any per-instance section).
func ParseLRUOldLen(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "Old" && f[1] == "database" && f[2] == "pages" {
			return strconv.ParseInt(f[3], 10, 64)
		}
	}
	return 0, fmt.Errorf("SHOW ENGINE INNODB STATUS: no \"Old database pages\" line")
}
