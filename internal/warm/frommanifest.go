package warm

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/manifest"
)

// Drop reasons for manifest entries that do not resolve on this server.
const (
	DropNoSchema    = "schema not on this server, or not visible to this user (it needs SELECT on it)"
	DropNoTable     = "table not on this server, or not visible to this user (it needs SELECT on it)"
	DropNoPartition = "partition not on this server"
	DropPastEOF     = "page past the end of the tablespace file"
	DropNoSpace     = "tablespace of the table not found"
)

// Resolved is a manifest mapped onto this server by name.
type Resolved struct {
	Source  manifest.Header
	Name    string
	Entries int64
	// Pages are the entries that resolve, hottest first (young, then by LRU position).
	Pages []PageID
	// Dropped counts unresolvable entries by reason.
	Dropped map[string]int64
	// KeyedOnly counts the entries that resolve here by their key only: their page number
	// is past the end of this server's file (a copy with smaller files), but their key
	// range is read here as every keyed entry's is.
	KeyedOnly int64
	// ByTarget counts resolved pages per index (or LOB set) of a table part.
	ByTarget map[TargetKey]int64
	Catalog  *catalog.Catalog
	// UnnamedLeftOut counts the pages the source's files did not name that were left out
	// on a copy whose tables are not page-for-page (withoutUnnamedOnCopies): they are
	// neither warmed nor counted in the hot set, unlike Dropped's.
	UnnamedLeftOut int64
	// LeftOut counts, on a Resolved that MeasureTarget measured, the manifest pages of
	// targets whose path is none here (off-page pages of a copy read by key, an ignored
	// index, an index without key ranges on a copy): no warm reads them. They are among
	// MeasureTarget's uncounted pages, which a count that takes its warm's range scans
	// as read must not take as read.
	LeftOut int64

	targets  []TargetKey // distinct targets
	targetOf []uint32    // for each of Pages, its index in targets
	rankOf   []int32     // for each of Pages, its place in the manifest's hottest-first order
	// unnamed are the ranks of the entries of pages the source's files did not name
	// (isUnnamed), ascending.
	unnamed []int32

	m *manifest.Manifest
	// keyed are the entries of indexes whose key range the manifest knows (a known Low),
	// hottest first, past the end of this server's file too: the key path reads them by key
	// (bykey.go), so a page number this server's file does not have does not matter there.
	keyed []keyedEntry
	// catalogs is the cache the catalog came from (ResolveCached), nil for none.
	catalogs *catalog.Cache
	// keyColumns is each keyed target's key columns (manifest.Object.KeyColumns).
	keyColumns map[TargetKey]string
	// wholeIndex caches wholeIndexOnly: the path's choice and the tree path ask it.
	wholeIndex map[TargetKey]bool
	// sameSpace says, by index, that this server's tablespace has the manifest's space id:
	// on the manifest's own server, the same tablespace, never rebuilt since (a rebuild,
	// OPTIMIZE, ALTER ... FORCE or TRUNCATE, gives a new id on both flavors).
	sameSpace map[TargetKey]bool
}

// keyedEntry is a manifest entry with a key range, of an index that resolves here.
type keyedEntry struct {
	target uint32 // index in targets
	object uint32 // the manifest's object
	page   uint32 // the page number on the source
	rng    uint32 // manifest.Entry.Range
	rank   int32  // place in the hottest-first order
}

// TargetKey names an index, or the LOB pages, of one table part.
type TargetKey struct {
	Schema, Table, Partition, Index string
	Kind                            Kind
}

// Resolve maps every manifest entry to a page of this server's tablespaces by schema, table
// and partition name (space ids differ between servers), dropping entries of objects this
// server lacks and pages past the end of the file. The manifest must have been verified.
func Resolve(ctx context.Context, conn *connection.Conn, m *manifest.Manifest) (*Resolved, error) {
	return ResolveCached(ctx, conn, m, nil)
}

// ResolveCached is Resolve reading the catalog through cats, for a caller that resolves
// manifests on the same server again and again (each round of follow).
func ResolveCached(ctx context.Context, conn *connection.Conn, m *manifest.Manifest, cats *catalog.Cache) (*Resolved, error) {
	r := &Resolved{Source: m.Header, Name: m.Name, Entries: int64(len(m.Entries)), Dropped: map[string]int64{}, ByTarget: map[TargetKey]int64{},
		m: m, keyColumns: map[TargetKey]string{}, catalogs: cats, sameSpace: map[TargetKey]bool{}}
	if err := m.CheckPageSize(conn.Server.PageSize); err != nil {
		return nil, err
	}
	wanted := map[string]bool{}
	for _, o := range m.Objects {
		wanted[o.Schema] = true
	}
	existing, err := schemasOnServer(ctx, conn)
	if err != nil {
		return nil, err
	}
	var schemas []string
	for s := range wanted {
		if existing[s] {
			schemas = append(schemas, s)
		}
	}
	sort.Strings(schemas)
	cat := &catalog.Catalog{Server: conn.Server}
	if len(schemas) > 0 {
		// Named, the manifest's tables are all the server reads the definitions of: a
		// follow round resolves a manifest of a few hundred tables on a server of thousands.
		var exact []catalog.TableName
		for _, o := range m.Objects {
			exact = append(exact, catalog.TableName{Schema: o.Schema, Table: o.Table})
		}
		// Warm by key reads the stored columns: beside the load where that is cheaper.
		reads := catalog.Reads{StoredColumns: m.Header.KeyedEntries > 0}
		if cat, err = cats.LoadReading(ctx, conn, catalog.Filter{Schemas: schemas, Exact: exact}, reads); err != nil {
			return nil, err
		}
	}
	// Only what the manifest names matters here: not the skips of other tables.
	named := map[[2]string]bool{}
	for _, o := range m.Objects {
		named[[2]string{o.Schema, o.Table}] = true
	}
	var skips []catalog.Skip
	for _, s := range cat.Skipped {
		if named[[2]string{s.Schema, s.Table}] {
			skips = append(skips, s)
		}
	}
	cat.Skipped = skips
	r.Catalog = cat
	type partKey struct{ schema, table, part string }
	parts := map[partKey]*catalog.Part{}
	tables := map[[2]string]*catalog.Table{}
	for _, t := range cat.Tables {
		tables[[2]string{t.Schema, t.Name}] = t
		for _, p := range t.Parts {
			parts[partKey{t.Schema, t.Name, p.Name}] = p
		}
	}
	page := int64(conn.Server.PageSize)
	type objTarget struct {
		space   uint32
		limit   uint32 // pages in the file; 0 = unknown
		key     TargetKey
		reason  string
		unnamed bool // isUnnamed
	}
	targets := make([]objTarget, len(m.Objects))
	for i, o := range m.Objects {
		switch {
		case !existing[o.Schema]:
			targets[i].reason = DropNoSchema
			continue
		case tables[[2]string{o.Schema, o.Table}] == nil:
			targets[i].reason = DropNoTable
			continue
		}
		t := tables[[2]string{o.Schema, o.Table}]
		p := parts[partKey{o.Schema, o.Table, o.Partition}]
		if p == nil {
			targets[i].reason = DropNoPartition
			continue
		}
		if !p.SpaceKnown {
			targets[i].reason = DropNoSpace
			continue
		}
		key := TargetKey{Schema: t.Schema, Table: t.Name, Partition: p.Name, Index: o.Index, Kind: KindIndex}
		if strings.HasPrefix(o.Index, "fts:") {
			// A FULLTEXT auxiliary table, named by role: its own tablespace.
			a := t.AuxByRole(o.Index)
			if a == nil {
				targets[i].reason = DropNoTable
				continue
			}
			targets[i] = objTarget{space: a.Space, limit: uint32(a.FileSize / page), key: key}
			continue
		}
		if o.Index == "" || strings.HasPrefix(o.PageType, "SDI") {
			// Off-page column pages name no index: they are the clustered index's. The
			// space header, descriptors and inodes, MySQL's dictionary copy and pages the
			// snapshot could not name are no index's.
			key.Index, key.Kind = "", KindFile
			if c := t.Clustered(); c != nil && bufferpool.IsLOBPageType(o.PageType) {
				key.Index, key.Kind = c.Name, KindLOB
			}
		}
		targets[i] = objTarget{space: p.Space, limit: uint32(p.FileSize / page), key: key, unnamed: key.Kind == KindFile && isUnnamed(o.PageType)}
		if key.Kind == KindIndex {
			same, seen := r.sameSpace[key]
			r.sameSpace[key] = (same || !seen) && o.SpaceID == p.Space
		}
	}
	entries := append([]manifest.Entry(nil), m.Entries...)
	manifest.SortByHotness(entries)
	r.Pages = make([]PageID, 0, len(entries))
	r.targetOf = make([]uint32, 0, len(entries))
	r.rankOf = make([]int32, 0, len(entries))
	targetID := map[TargetKey]uint32{}
	idOf := func(k TargetKey) uint32 {
		id, ok := targetID[k]
		if !ok {
			id = uint32(len(r.targets))
			targetID[k] = id
			r.targets = append(r.targets, k)
		}
		return id
	}
	for i, e := range entries {
		ot := targets[e.Object]
		if ot.reason != "" {
			r.Dropped[ot.reason]++
			continue
		}
		keyed := false
		if ot.key.Kind == KindIndex && m.Objects[e.Object].KeyColumns != "" {
			if rg := m.RangeOf(e); rg.Low != "" && rg.Low != "-" {
				id := idOf(ot.key)
				r.keyed = append(r.keyed, keyedEntry{target: id, object: e.Object, page: e.Page, rng: e.Range, rank: int32(i)})
				r.keyColumns[ot.key] = m.Objects[e.Object].KeyColumns
				keyed = true
			}
		}
		if ot.limit > 0 && e.Page >= ot.limit {
			if keyed {
				r.KeyedOnly++
			} else {
				r.Dropped[DropPastEOF]++
			}
			continue
		}
		if ot.unnamed {
			r.unnamed = append(r.unnamed, int32(i))
		}
		r.Pages = append(r.Pages, MakePageID(ot.space, e.Page))
		r.ByTarget[ot.key]++
		r.targetOf = append(r.targetOf, idOf(ot.key))
		r.rankOf = append(r.rankOf, int32(i))
	}
	return r, nil
}

func schemasOnServer(ctx context.Context, conn *connection.Conn) (map[string]bool, error) {
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	out := map[string]bool{}
	err = sess.Query(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA", nil, func(rows *sql.Rows) error {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		out[s] = true
		return nil
	})
	return out, err
}

// Hottest is r cut to its n hottest pages (r itself when it has no more): the hot set a
// pool of n pages can hold. Dropped entries stay counted; the cut pages are not.
func (r *Resolved) Hottest(n int) *Resolved {
	if n < 0 || len(r.Pages) <= n {
		return r
	}
	c := *r
	c.Pages = r.Pages[:n:n]
	c.targetOf = r.targetOf[:n:n]
	if len(r.rankOf) == len(r.Pages) { // built by Resolve
		c.rankOf = r.rankOf[:n:n]
	}
	if n < len(r.rankOf) {
		// The keyed entries as hot as the pages kept.
		cut := r.rankOf[n]
		k := sort.Search(len(r.keyed), func(i int) bool { return r.keyed[i].rank >= cut })
		c.keyed = r.keyed[:k:k]
	}
	c.ByTarget = make(map[TargetKey]int64, len(r.ByTarget))
	for _, id := range c.targetOf {
		c.ByTarget[r.targets[id]]++
	}
	return &c
}

// Spaces are the tablespaces the resolved pages live in.
func (r *Resolved) Spaces() map[uint32]bool {
	out := map[uint32]bool{}
	for _, p := range r.Pages {
		out[p.Space()] = true
	}
	return out
}

// Coverage is the share of the resolved pages resident in set, and the count.
func (r *Resolved) Coverage(set bufferpool.PageSet) (float64, int64) {
	var n int64
	for _, p := range r.Pages {
		if set.Has(p.Space(), p.Page()) {
			n++
		}
	}
	if len(r.Pages) == 0 {
		return 0, 0
	}
	return float64(n) / float64(len(r.Pages)), n
}

// TargetCoverage counts, per index (or LOB set), the manifest's pages and how many of them
// are resident in set.
func (r *Resolved) TargetCoverage(set bufferpool.PageSet) map[TargetKey][2]int64 {
	counts := make([][2]int64, len(r.targets))
	for i, p := range r.Pages {
		c := &counts[r.targetOf[i]]
		c[0]++
		if set.Has(p.Space(), p.Page()) {
			c[1]++
		}
	}
	out := make(map[TargetKey][2]int64, len(r.targets))
	for i, k := range r.targets {
		out[k] = counts[i]
	}
	return out
}

// TargetLoaded counts, per index (or LOB set), the requested pages resident in after that
// were not in before: what a load brought in and kept. The difference of two coverages
// also counts the pages that the server's own reads brought in meanwhile (opening a
// table, the traffic). A page is counted once, for the first index that lists it: on a
// copy that is not page-for-page, a page the manifest names by number (a page its source
// did not name: MySQL's read-ahead of an extent's unused pages) can be one the tree path
// places too. A tree-path warm on MySQL 9.7 reported 560 pages loaded of a budget of 531,
// 29 of them twice.
func (r *Resolved) TargetLoaded(requested, before, after bufferpool.PageSet) map[TargetKey]int64 {
	counts := make([]int64, len(r.targets))
	counted := bufferpool.PageSet{}
	for i, p := range r.Pages {
		if requested.Has(p.Space(), p.Page()) && after.Has(p.Space(), p.Page()) && !before.Has(p.Space(), p.Page()) && !counted.Has(p.Space(), p.Page()) {
			counted.Add(p.Space(), p.Page())
			counts[r.targetOf[i]]++
		}
	}
	out := make(map[TargetKey]int64, len(r.targets))
	for i, k := range r.targets {
		out[k] = counts[i]
	}
	return out
}

// ManifestReport is what a warm from a manifest says about it.
type ManifestReport struct {
	File         string           `json:"file"`
	SourceServer string           `json:"source_server"`
	SourceHost   string           `json:"source_host"`
	CapturedAt   string           `json:"captured_at"`
	Entries      int64            `json:"entries"`
	Resolved     int64            `json:"resolved"` // by page number
	Dropped      map[string]int64 `json:"dropped"`
	// Keyed entries carry a key range that resolves here (their page numbers may resolve
	// too); KeyedOnly of them resolve by their key alone (Resolved.KeyedOnly).
	Keyed          int64   `json:"keyed"`
	KeyedOnly      int64   `json:"keyed_only,omitempty"`
	Requested      int64   `json:"requested"`        // after the budget
	AlreadyThere   int64   `json:"already_resident"` // of the requested, before
	LeftOut        int64   `json:"left_out_budget"`
	CoverageBefore float64 `json:"coverage_before"` // of the resolved pages
	CoverageAfter  float64 `json:"coverage_after"`
	// CoveragePages is how many pages the coverage counts: the pages by number (and the
	// tree path's); 0 where every index took the sql path, whose pages here no number
	// names (the coverage is then 0 of nothing, not of the hot set).
	CoveragePages int64 `json:"coverage_pages"`
	ResidentAfter int64 `json:"resident_after"`
	// KeyRanges are the manifest pages whose key ranges the sql path reads (within the
	// budget); NotWarmed the pages of targets with path none.
	KeyRanges int64 `json:"key_ranges_requested"`
	// TreeRanges are those of KeyRanges the tree path found in this server's B-trees: their
	// pages are loaded by number, and counted in Requested too.
	TreeRanges int64 `json:"tree_key_ranges,omitempty"`
	NotWarmed  int64 `json:"not_warmed,omitempty"`
	// UnnamedLeftOut are the pages the source's files did not name, of tables that are not
	// page-for-page copies here: left out, not counted in the hot set
	// (Resolved.withoutUnnamedOnCopies).
	UnnamedLeftOut int64       `json:"unnamed_left_out,omitempty"`
	Paths          []IndexPath `json:"index_paths,omitempty"`
}

// NewManifestReport starts a report for r.
func NewManifestReport(r *Resolved) *ManifestReport {
	return &ManifestReport{
		File: r.Name, SourceServer: r.Source.ServerID, SourceHost: r.Source.Hostname,
		CapturedAt: r.Source.CapturedAt.Format("2006-01-02 15:04:05 MST"), Entries: r.Entries,
		Resolved: int64(len(r.Pages)), Dropped: r.Dropped, Keyed: int64(len(r.keyed)), KeyedOnly: r.KeyedOnly,
		UnnamedLeftOut: r.UnnamedLeftOut,
	}
}

func (mr *ManifestReport) String() string {
	return fmt.Sprintf("manifest %s: %d entries, %d resolved here", mr.File, mr.Entries, mr.Resolved)
}

// ManifestPlan is a warm of a manifest's pages, planned: what of the manifest resolves
// here, what is resident already, and what the budget lets the method load. A dry run prints
// it; Run loads it.
type ManifestPlan struct {
	Method string
	Report *ManifestReport
	// Targets are the manifest's pages per index (or LOB set), most pages first.
	Targets []ManifestTarget
	Native  *NativePlan // Method native: the page list handed to the loader
	Scan    *Plan       // Method scan: the indexes the manifest names, densest first
	// Keyed is the sql path: range scans of the key ranges of the indexes that are not
	// read by page number (Paths), run after the pages' load.
	Keyed *Plan
	// Paths is the path each index takes, and why.
	Paths []IndexPath

	r      *Resolved
	spaces map[uint32]bool
	before bufferpool.PageSet
	// requested holds the pages asked of the loader: what it loaded is those of them
	// resident after and not before.
	requested bufferpool.PageSet
	totals    bufferpool.Totals
}

// ManifestTarget is one index's (or LOB set's) share of a manifest warm's pages: resident
// before the warm, and requested of the loader within the budget (native).
type ManifestTarget struct {
	ManifestRow
	Load int64  `json:"load_pages"` // by number, or (path sql) by key range
	Path string `json:"path"`
}

// CheckWork returns an error wrapping ErrNothingToWarm when the plan loads nothing while
// pages of the manifest are cold (the budget has no room); nil when it loads something or
// the manifest's pages are all resident already.
func (mp *ManifestPlan) CheckWork() error {
	if mp.Keyed != nil && len(mp.Keyed.Units) > 0 {
		return nil
	}
	if mp.Scan != nil {
		if mp.Report.AlreadyThere == mp.Report.Resolved {
			return nil
		}
		return mp.Scan.CheckWork()
	}
	if mp.Native == nil {
		if mp.Report.AlreadyThere > 0 {
			return nil
		}
		var skipped []catalog.Skip
		if mp.Keyed != nil {
			skipped = mp.Keyed.Skipped
		}
		return nothingToWarm(nil, 0, "", skipped)
	}
	return mp.Native.CheckWork()
}

// FromManifest warms the pages a resolved manifest names, hottest first, within the budget
// (by default the free pages, so nothing already cached is evicted): natively, by handing
// the remapped page list to the server's own loader, or by scanning the indexes it names,
// those with the largest share of their pages in the manifest first.
func FromManifest(ctx context.Context, conn *connection.Conn, r *Resolved, method string, o Options, ro RunOptions) (*Result, error) {
	mp, err := PlanFromManifest(ctx, conn, r, method, o, ro.Until.set())
	if err != nil {
		return nil, err
	}
	return mp.Run(ctx, conn, ro)
}

// PlanFromManifest plans FromManifest: untilCoverage loads the hottest pages first, since
// the load may stop early. Each index takes a path (choosePaths, --by-key): its page
// numbers, loaded by the method, or its pages' key ranges, read by range scans (the sql
// path, buildKeyPlan); one budget covers both, hottest pages first.
func PlanFromManifest(ctx context.Context, conn *connection.Conn, full *Resolved, method string, o Options, untilCoverage bool) (*ManifestPlan, error) {
	if method != MethodNative && method != MethodScan {
		return nil, exitcode.BadValue("Method", "%q: a manifest loads with native or scan", method)
	}
	var throttled string
	sampledRate := -1.0 // client statements/s, once sampled
	if method == MethodNative && (o.ByKey == ByKeyAuto || o.ByKey == "") && full.hasKeys() && !o.MeasureOnly {
		var err error
		if throttled, sampledRate, err = throttledLoad(ctx, conn); err != nil {
			return nil, err
		}
	}
	paths := full.choosePaths(ctx, conn, o.ByKey, method == MethodNative, throttled)
	full = full.withoutUnnamedOnCopies(paths)
	byNumber := func(k TargetKey) bool { return paths[k].Path == PathPages }
	r := full.filter(byNumber)
	mp := &ManifestPlan{Method: method, r: r, spaces: r.Spaces()}
	var err error
	if mp.before, err = bufferpool.Resident(ctx, conn, mp.spaces); err != nil {
		return nil, err
	}
	mr := NewManifestReport(full)
	var coveredBefore int64
	mr.CoverageBefore, coveredBefore = r.Coverage(mp.before)
	mr.CoveragePages = int64(len(r.Pages))
	mp.Report = mr
	if mp.totals, err = bufferpool.ReadTotals(ctx, conn); err != nil {
		return nil, err
	}
	// The manifest's own resident pages stay: the rest of its tablespaces' pages are what a
	// budget beyond the free pages replaces (follow's stale pages).
	budget, source := budgetPages(o.Budget, mp.totals, coveredBefore)
	if reserve := mp.totals.PagesTotal / 10; o.ExpectTraffic && o.Budget.Bytes == 0 && o.Budget.Percent == 0 && budget > mp.totals.PagesFree-reserve {
		// Traffic that has arrived needs room for its own misses: a load that fills the
		// pool makes them evict its pages, and a load in hottest-first order its
		// hottest, the first loaded (a restarted 1 GiB pool loading a 64,000-page
		// snapshot under traffic then ran 9% below cold's throughput, docs/experiments.md).
		// Only traffic seen now: a server kept out of service until it is warm (a
		// readiness gate) gets every page it can hold.
		if sampledRate < 0 {
			if sampledRate, err = sampleTraffic(ctx, conn, trafficWindow); err != nil {
				return nil, err
			}
		}
		if sampledRate >= trafficFloor {
			budget = max(mp.totals.PagesFree-reserve, 0)
			source += fmt.Sprintf(", less %d (a tenth of the pool) for the traffic's own reads (%.0f client statements/s)", reserve, sampledRate)
		}
	}
	page := int64(conn.Server.PageSize)
	byTarget := map[TargetKey]*ManifestTarget{}
	targetRow := func(k TargetKey) *ManifestTarget {
		mt := byTarget[k]
		if mt == nil {
			mt = &ManifestTarget{ManifestRow: ManifestRow{Schema: k.Schema, Table: k.Table, Partition: k.Partition, Index: k.Index, Kind: k.Kind}, Path: paths[k].Path}
			byTarget[k] = mt
		}
		return mt
	}
	var req []PageID
	var used int64
	chosen := map[uint32][]keyedEntry{}
	// A tree-path index's key ranges become pages of this server's tree only once it is
	// read (placeTrees), and a range may take more pages here than in the manifest (a
	// sparser copy) or fewer: their budget is settled there, in one order with the pages
	// by number, which are kept here past the budget too (spill) so that the hottest win
	// whichever path reads them.
	hasTrees := false
	for _, ip := range paths {
		hasTrees = hasTrees || ip.Path == PathTree
	}
	var reqRanked []rankedPage // req with ranks and targets, for placeTrees
	var spill []rankedPage
	// One walk over both lists in the manifest's hottest-first order: the budget goes to
	// the hottest pages whichever path reads them.
	keyed := full.keyed
	j := 0
	takeKeyed := func(e keyedEntry) {
		k := full.targets[e.target]
		p := paths[k].Path
		if p != PathSQL && p != PathTree {
			return
		}
		mt := targetRow(k)
		mt.ManifestPages++
		if p == PathTree {
			chosen[e.target] = append(chosen[e.target], e)
			return
		}
		if used >= budget {
			mr.LeftOut++
			return
		}
		used++
		mt.Load++
		mr.KeyRanges++
		chosen[e.target] = append(chosen[e.target], e)
	}
	for i, p := range full.Pages {
		for j < len(keyed) && keyed[j].rank < full.rankOf[i] {
			takeKeyed(keyed[j])
			j++
		}
		k := full.targets[full.targetOf[i]]
		switch paths[k].Path {
		case PathSQL, PathTree:
			continue // its keyed entries are counted by takeKeyed
		case PathNone:
			targetRow(k).ManifestPages++
			mr.NotWarmed++
			continue
		}
		mt := targetRow(k)
		mt.ManifestPages++
		switch {
		case mp.before.Has(p.Space(), p.Page()):
			mr.AlreadyThere++
			mt.Resident++
		case used >= budget && hasTrees:
			spill = append(spill, rankedPage{p, full.rankOf[i], full.targetOf[i]})
		case used >= budget:
			mr.LeftOut++
		default:
			req = append(req, p)
			reqRanked = append(reqRanked, rankedPage{p, full.rankOf[i], full.targetOf[i]})
			used++
			mt.Load++
		}
	}
	for ; j < len(keyed); j++ {
		takeKeyed(keyed[j])
	}
	for _, mt := range byTarget {
		mt.Coverage = ratio(mt.Resident, mt.ManifestPages)
		mp.Targets = append(mp.Targets, *mt)
	}
	sort.Slice(mp.Targets, func(i, j int) bool { return mp.Targets[i].ManifestPages > mp.Targets[j].ManifestPages })
	var kts, trees []keyedTarget
	for id, es := range chosen {
		kt := keyedTarget{key: full.targets[id], chosen: es}
		if paths[kt.key].Path == PathTree {
			trees = append(trees, kt)
		} else {
			kts = append(kts, kt)
		}
	}
	// A tree-path index the budget left no range of is still checked against this
	// server's tree, so that its path and reason do not depend on the pool's free pages.
	for k, ip := range paths {
		if ip.Path != PathTree {
			continue
		}
		if id, ok := idOfTarget(full, k); ok && len(chosen[id]) == 0 {
			trees = append(trees, keyedTarget{key: k})
		}
	}
	if len(trees) > 0 {
		var err error
		// A budget of a size is capped at what the pool can hold besides the selection's
		// resident pages (budgetPages); the trees' resident pages are known only once
		// they are placed, and count there too.
		hold := int64(-1)
		if o.Budget.Bytes > 0 || o.Budget.Percent > 0 {
			hold = PoolHold(mp.totals, coveredBefore+o.Budget.ServerPages)
		}
		if req, kts, err = mp.placeTrees(ctx, conn, full, trees, kts, paths, reqRanked, spill, budget, hold, mr, targetRow); err != nil {
			return nil, err
		}
		r = mp.r
		mr.CoverageBefore, _ = r.Coverage(mp.before)
		mr.CoveragePages = int64(len(r.Pages))
	}
	mr.Requested = int64(len(req))
	mp.requested = bufferpool.PageSet{}
	for _, p := range req {
		mp.requested.Add(p.Space(), p.Page())
	}
	if len(kts) > 0 && !o.MeasureOnly {
		sort.Slice(kts, func(a, b int) bool { return kts[a].chosen[0].rank < kts[b].chosen[0].rank })
		if mp.Keyed, err = full.buildKeyPlan(ctx, conn, kts, paths, max(budget-int64(len(req)), 0), source, o); err != nil {
			return nil, err
		}
		// The plan holds the range scans to the budget with the pages at their ranges'
		// ends: what it cut is left out, not requested ("requested 500 key ranges" was
		// said of a plan that kept 160).
		if mp.Keyed != nil && mp.Keyed.trimmedRanges > 0 {
			mr.KeyRanges = max(mr.KeyRanges-mp.Keyed.trimmedRanges, 0)
			mr.LeftOut += mp.Keyed.trimmedRanges
		}
	}
	mp.Paths = sortedPaths(paths)
	mr.Paths = mp.Paths
	for i := range mp.Targets {
		// As the paths ended: the tree path hands on to range scans an index whose keys its
		// B-tree cannot place.
		mt := &mp.Targets[i]
		if ip, ok := paths[TargetKey{Schema: mt.Schema, Table: mt.Table, Partition: mt.Partition, Index: mt.Index, Kind: mt.Kind}]; ok {
			mt.Path = ip.Path
		}
	}
	if o.MeasureOnly {
		return mp, nil
	}
	if method == MethodScan {
		if len(r.ByTarget) == 0 {
			return mp, nil
		}
		o.Only = map[TargetKey]float64{}
		for k, n := range r.ByTarget {
			o.Only[k] = density(r.Catalog, k, n)
		}
		mp.Scan, err = BuildPlan(ctx, conn, r.Catalog, o)
		return mp, err
	}
	if len(req) == 0 && mp.Keyed != nil {
		return mp, nil
	}
	// Results per index are the manifest's pages of it, before and after: the two page
	// sets read here are all the checking a native load needs.
	res := &Result{Method: MethodNative, Skipped: r.Catalog.Skipped, PageSize: page, PoolBefore: mp.totals, manifestOnly: true}
	np := &NativePlan{Requested: mr.Requested, NewPages: mr.Requested, PageSize: page, PoolPages: mp.totals.PagesTotal, FreePages: mp.totals.PagesFree,
		BudgetPages: budget, BudgetSource: source, Skipped: res.Skipped, Manifest: mr, cat: r.Catalog, res: res,
		budget: o.Budget, poolBefore: mp.totals}
	if mr.LeftOut > 0 {
		reason := fmt.Sprintf("%d manifest pages left out: over budget (%d pages, %s)", mr.LeftOut, budget, source)
		res.Notes = append(res.Notes, reason)
		np.LeftOut = []LeftOut{{Pages: mr.LeftOut, Reason: reason}}
	}
	// The order of the pages in the LRU list matters once the workload must evict: when
	// the load leaves less than a tenth of the pool free.
	tight := mp.totals.PagesFree-int64(len(req)) < mp.totals.PagesTotal/10
	traffic := o.ExpectTraffic
	why := "innowarm was started with the server (--wait-for-server)"
	if !traffic && !untilCoverage && len(req) >= 4*1024 {
		// Only a load long enough to be cut into tiers needs to know.
		rate := sampledRate
		if rate < 0 {
			var err error
			if rate, err = sampleTraffic(ctx, conn, trafficWindow); err != nil {
				return nil, err
			}
		}
		traffic = rate >= trafficFloor
		why = fmt.Sprintf("the server runs %.0f client statements/s", rate)
	}
	np.Order = chooseTierOrder(tight, untilCoverage, traffic)
	// A tight pool without traffic: the old sublist is raised for the load so that its
	// pages replace stale ones (raiseOldBlocksPct). Under traffic the load goes hottest
	// first, and raising it would make the hottest, loaded first, the first evicted:
	// instead any touch of a loaded page makes it young, out of the way of the pages
	// loaded after it, and the traffic's touches push stale pages out.
	np.replaceStale = tight && !traffic
	np.makeYoung = tight && traffic
	np.tiers = hotnessTiers(req, np.Order)
	np.Tiers = len(np.tiers)
	var note string
	switch {
	case len(np.tiers) < 2:
	case untilCoverage:
		note = fmt.Sprintf("loads the manifest's pages hottest first in %d tiers of whole extents: --until-coverage may stop the load early", len(np.tiers))
	case traffic:
		note = fmt.Sprintf("loads the manifest's pages hottest first in %d tiers of whole extents: %s, and its queries need the hottest pages first", len(np.tiers), why)
	default:
		note = fmt.Sprintf("loads the manifest's pages coldest first in %d tiers: the pool will be nearly full, and the hottest pages, loaded last, stay youngest", len(np.tiers))
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
		np.Notes = append(np.Notes, note)
	}
	mp.Native = np
	return mp, nil
}

// Run loads the plan's pages (by number, natively or by scans), then reads the key ranges
// of the indexes that take the sql path, and measures the manifest's coverage after.
func (mp *ManifestPlan) Run(ctx context.Context, conn *connection.Conn, ro RunOptions) (*Result, error) {
	mr := mp.Report
	var res *Result
	var err error
	// One count for both phases: an observer (the agent's status, a sidecar) saw the pages
	// by number, then the key ranges' count from 0 again, which said a warm whose range
	// scans had just begun was done with all of its pages.
	var keyedObserve func(done, total int64)
	if obs := ro.Progress.Observe; obs != nil && mp.Keyed != nil {
		var mu sync.Mutex
		var firstDone int64
		keyedPages := mp.Keyed.EstPages
		ro.Progress.Observe = func(done, total int64) {
			mu.Lock()
			firstDone = done
			mu.Unlock()
			obs(done, total+keyedPages)
		}
		keyedObserve = func(done, total int64) {
			mu.Lock()
			first := firstDone
			mu.Unlock()
			obs(first+done, first+max(total, done)) // range scans can read past their estimate
		}
	}
	switch {
	case mp.Scan != nil:
		res, err = Run(ctx, conn, mp.Scan, ro)
	case mp.Native != nil:
		res, err = mp.Native.Run(ctx, conn, ro)
	}
	var keyed *Result
	// A load stopped for traffic leaves the key ranges to the caller's plan for it, too.
	if mp.Keyed != nil && err == nil && !res.StoppedForTraffic() {
		kro := ro
		kro.Until = Until{} // a coverage of page numbers says nothing about key ranges
		kro.Progress.Title = "warm by key"
		if keyedObserve != nil {
			kro.Progress.Observe = keyedObserve
		}
		keyed, err = Run(ctx, conn, mp.Keyed, kro)
	}
	if err != nil {
		res = mergeKeyed(res, keyed)
		if res != nil {
			res.Manifest = mr
		}
		return res, err
	}
	after, err := bufferpool.Resident(ctx, conn, mp.spaces)
	if err != nil {
		return mergeKeyed(res, keyed), err
	}
	r := mp.r
	mr.CoverageAfter, mr.ResidentAfter = r.Coverage(after)
	mr.CoveragePages = int64(len(r.Pages))
	if res != nil && res.manifestOnly {
		beforeByTarget, afterByTarget := r.TargetCoverage(mp.before), r.TargetCoverage(after)
		loadedByTarget := r.TargetLoaded(mp.requested, mp.before, after)
		keys := make([]TargetKey, 0, len(afterByTarget))
		for k := range afterByTarget {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return afterByTarget[keys[i]][0] > afterByTarget[keys[j]][0] })
		for _, k := range keys {
			a, b := afterByTarget[k], beforeByTarget[k]
			if a[0] == 0 {
				continue
			}
			// Not a[1]-b[1]: an index that lost pages to the pool's evictions during the
			// load would count a loss (a full pool's follow round said "loaded -29"), and
			// the pages the server read for itself meanwhile would count as loaded.
			loaded := loadedByTarget[k]
			res.Targets = append(res.Targets, &TargetResult{Schema: k.Schema, Table: k.Table, Partition: k.Partition, Index: k.Index, Kind: k.Kind,
				EstPages: a[0], IndexPages: a[0], ResidentBefore: b[1], ResidentAfter: a[1], PagesLoaded: loaded,
				CoverageBefore: ratio(b[1], a[0]), CoverageAfter: ratio(a[1], a[0]), CoverageExact: true})
			res.PagesLoaded += loaded
		}
		if t, err := bufferpool.ReadTotals(ctx, conn); err == nil {
			res.PoolAfter = t
		}
		if err := res.openWarmedTables(ctx, conn, ro); err != nil {
			return mergeKeyed(res, keyed), err
		}
	}
	if res = mergeKeyed(res, keyed); res == nil {
		// Nothing to load by number and no statement left by key (follow runs a plan
		// without CheckWork).
		res = &Result{Method: mp.Method, PageSize: int64(conn.Server.PageSize), PoolBefore: mp.totals, PoolAfter: mp.totals}
		if mp.Keyed != nil {
			res.Skipped = mp.Keyed.Skipped
		}
	}
	// The method chosen, whichever paths its indexes took: every index by range scans
	// said "warm (scan)" and "method scan: innowarm runs on the database host and can
	// write the server's dump file" after the log's "method: native".
	res.Method = mp.Method
	res.Manifest = mr
	res.Paths = mp.Paths
	return res, nil
}

// rankedPage is a page to load with its place in the manifest's hottest-first order and
// its target (an index into Resolved.targets).
type rankedPage struct {
	page   PageID
	rank   int32
	target uint32
}

// placeTrees turns the chosen key ranges of the tree path's indexes into this server's
// page numbers (treePages) and settles the budget of the native load: the pages by number
// the walk took (req, with their ranks), those it kept past the budget (spill) and the
// trees' pages go in one hottest-first order, and the budget (less the sql path's
// entries) takes the hottest of them. The trees' pages join what the plan measures
// coverage on. An index whose tree cannot be read here takes the sql path (kts).
func (mp *ManifestPlan) placeTrees(ctx context.Context, conn *connection.Conn, full *Resolved, trees, kts []keyedTarget, paths map[TargetKey]IndexPath,
	req, spill []rankedPage, budget, hold int64, mr *ManifestReport, targetRow func(TargetKey) *ManifestTarget) ([]PageID, []keyedTarget, error) {
	lows := map[[2]uint32]string{}
	for _, e := range full.keyed {
		lows[[2]uint32{e.object, e.page}] = full.m.Ranges[e.rng-1].Low
	}
	pages, fallback := full.treePages(ctx, conn, trees, lows)
	var sqlEntries int64
	for _, kt := range kts {
		sqlEntries += int64(len(kt.chosen))
	}
	spaces := map[uint32]bool{}
	var live []keyedTarget // the trees that place their ranges here
	for _, kt := range trees {
		if why, ok := fallback[kt.key]; ok {
			ip := paths[kt.key]
			ip.Path, ip.Reason = PathSQL, strings.TrimSuffix(ip.Reason, treeReason)+"; its B-tree cannot place the keys here ("+why+"): range scans"
			paths[kt.key] = ip
			if len(kt.chosen) > 0 {
				// The walk did not count them against the budget: they take what is left
				// after the pages by number, hottest first, as the sql path's own do.
				room := max(budget-int64(len(req))-sqlEntries, 0)
				if int64(len(kt.chosen)) > room {
					mr.LeftOut += int64(len(kt.chosen)) - room
					kt.chosen = kt.chosen[:room]
				}
				if len(kt.chosen) > 0 {
					kts = append(kts, kt)
					sqlEntries += int64(len(kt.chosen))
					mr.KeyRanges += int64(len(kt.chosen))
					targetRow(kt.key).Load += int64(len(kt.chosen))
				}
			}
			continue
		}
		if len(kt.chosen) > 0 {
			live = append(live, kt)
		}
		for _, p := range pages[kt.key] {
			spaces[p.page.Space()] = true
		}
	}
	before, err := bufferpool.Resident(ctx, conn, spaces)
	if err != nil {
		return nil, nil, err
	}
	r := mp.r
	r.ByTarget = maps.Clone(r.ByTarget)
	if mp.before == nil {
		mp.before = bufferpool.PageSet{}
	}
	idOf := map[TargetKey]uint32{}
	for i, k := range full.targets {
		idOf[k] = uint32(i)
	}
	all := make([]rankedPage, 0, len(req)+len(spill))
	all = append(all, req...)
	all = append(all, spill...)
	var treeResident int64
	for _, kt := range live {
		ip := paths[kt.key]
		ip.Ranges = int64(len(kt.chosen))
		for _, p := range pages[kt.key] {
			r.Pages = append(r.Pages, p.page)
			r.targetOf = append(r.targetOf, idOf[kt.key])
			r.rankOf = append(r.rankOf, p.rank)
			r.ByTarget[kt.key]++
			ip.TreePages++
			if before.Has(p.page.Space(), p.page.Page()) {
				mp.before.Add(p.page.Space(), p.page.Page())
				treeResident++
				continue
			}
			all = append(all, rankedPage{p.page, p.rank, idOf[kt.key]})
		}
		paths[kt.key] = ip
	}
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return all[order[a]].rank < all[order[b]].rank })
	room := max(budget-sqlEntries, 0)
	if hold >= 0 {
		// A round of follow on a standby its hot set fills (a logical copy, whose rows
		// take more pages than the source's): the trees' pages a round loaded hold the
		// pool, and the next round, counting only the pages by number, loaded what the
		// budget had left out by evicting them, round after round.
		room = min(room, max(hold-treeResident-sqlEntries, 0))
	}
	out := make([]PageID, 0, min(int64(len(all)), room))
	seen := make(map[PageID]bool, len(all))
	var cutRank int32 = math.MaxInt32
	for _, i := range order {
		p := all[i]
		if seen[p.page] {
			continue
		}
		seen[p.page] = true
		if int64(len(out)) >= room {
			cutRank = min(cutRank, p.rank)
			mr.LeftOut++
			if i < len(req) {
				targetRow(full.targets[p.target]).Load-- // the walk had taken it
			}
			continue
		}
		out = append(out, p.page)
		if i >= len(req) {
			targetRow(full.targets[p.target]).Load++ // kept past the walk's budget, or a tree's
		}
	}
	for _, kt := range live {
		for _, e := range kt.chosen {
			if e.rank < cutRank {
				mr.KeyRanges++
				mr.TreeRanges++
			}
		}
	}
	mp.spaces = r.Spaces()
	return out, kts, nil
}

// idOfTarget is the index of k in full.targets.
func idOfTarget(full *Resolved, k TargetKey) (uint32, bool) {
	for i, t := range full.targets {
		if t == k {
			return uint32(i), true
		}
	}
	return 0, false
}

// mergeKeyed adds the sql path's run to the result of the pages' load.
func mergeKeyed(res, keyed *Result) *Result {
	switch {
	case keyed == nil:
		return res
	case res == nil:
		keyed.Notes = append(keyed.Notes, "every index to warm took the sql path: its key ranges were read by range scans, nothing was loaded by page number")
		return keyed
	}
	res.Targets = append(res.Targets, keyed.Targets...)
	res.Skipped = append(res.Skipped, keyed.Skipped...)
	res.LeftOut = append(res.LeftOut, keyed.LeftOut...)
	res.Units += keyed.Units
	res.UnitsDone += keyed.UnitsDone
	res.UnitsFailed += keyed.UnitsFailed
	res.UnitsCancel += keyed.UnitsCancel
	res.PagesRead += keyed.PagesRead
	res.PagesLoaded += keyed.PagesLoaded
	res.Seconds += keyed.Seconds
	res.Parallel = max(res.Parallel, keyed.Parallel)
	res.Errors = append(res.Errors, keyed.Errors...)
	res.Notes = append(res.Notes, keyed.Notes...)
	res.UnitsRun = append(res.UnitsRun, keyed.UnitsRun...)
	res.Interrupted = res.Interrupted || keyed.Interrupted
	if res.Stopped == "" {
		res.Stopped = keyed.Stopped
	}
	if keyed.PoolAfter.PagesTotal > 0 {
		res.PoolAfter = keyed.PoolAfter
	}
	if res.Seconds > 0 {
		res.MBps = float64(res.PagesRead*res.PageSize) / 1e6 / res.Seconds
	}
	return res
}

// isUnnamed says a manifest object's page type is that of pages its source's files did not
// name: UNNAMED (allocated since the server last wrote them, or, on MySQL, unused pages its
// read-ahead brought in) or, in a list from INNODB_BUFFER_PAGE_LRU, ALLOCATED (a page no
// index uses).
func isUnnamed(pageType string) bool {
	return pageType == bufferpool.PageTypeUnnamed || pageType == "ALLOCATED"
}

// withoutUnnamedOnCopies is r without the pages its source's files did not name of the
// tables that are not page-for-page copies here (an index of the table part goes by key:
// sql or tree): their numbers name other pages of this copy, no index's rows are known to
// be on them, and a MySQL source's read-ahead of an extent's unused pages once took 31
// pages of a 185-page budget for random pages of a logical copy. They are counted in
// UnnamedLeftOut, not in Dropped: they are no share of the hot set that this server lacks.
// Where the table is the source's page for page they stay, loaded by number: the pages
// allocated since the source last wrote its files are its newest rows.
func (r *Resolved) withoutUnnamedOnCopies(paths map[TargetKey]IndexPath) *Resolved {
	if len(r.unnamed) == 0 {
		return r
	}
	type part struct{ schema, table, partition string }
	copies := map[part]bool{}
	for k, ip := range paths {
		if k.Kind == KindIndex && (ip.Path == PathSQL || ip.Path == PathTree) {
			copies[part{k.Schema, k.Table, k.Partition}] = true
		}
	}
	if len(copies) == 0 {
		return r
	}
	unnamed := func(i int) bool {
		k := r.targets[r.targetOf[i]]
		if k.Kind != KindFile || !copies[part{k.Schema, k.Table, k.Partition}] {
			return false
		}
		_, found := slices.BinarySearch(r.unnamed, r.rankOf[i])
		return found
	}
	c := r.filterEntries(func(i int) bool { return !unnamed(i) })
	c.UnnamedLeftOut = int64(len(r.Pages) - len(c.Pages))
	if c.UnnamedLeftOut == 0 {
		return r
	}
	return c
}

// filter is r with only the pages of the targets keep keeps (the key path's are read by key).
func (r *Resolved) filter(keep func(TargetKey) bool) *Resolved {
	return r.filterEntries(func(i int) bool { return keep(r.targets[r.targetOf[i]]) })
}

// filterEntries is r with only the pages keep keeps, by their place in r.Pages.
func (r *Resolved) filterEntries(keep func(i int) bool) *Resolved {
	c := *r
	c.Pages, c.targetOf, c.rankOf = nil, nil, nil
	c.ByTarget = map[TargetKey]int64{}
	for i, p := range r.Pages {
		if !keep(i) {
			continue
		}
		c.Pages = append(c.Pages, p)
		c.targetOf = append(c.targetOf, r.targetOf[i])
		c.rankOf = append(c.rankOf, r.rankOf[i])
		c.ByTarget[r.targets[r.targetOf[i]]]++
	}
	return &c
}

// sortedPaths lists the paths by table, partition, index.
func sortedPaths(paths map[TargetKey]IndexPath) []IndexPath {
	out := make([]IndexPath, 0, len(paths))
	for _, ip := range paths {
		out = append(out, ip)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Schema != b.Schema {
			return a.Schema < b.Schema
		}
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.Kind < b.Kind
	})
	return out
}

// density is the share of an index's pages that the manifest names: the indexes that are
// the hottest per page read go first.
func density(cat *catalog.Catalog, k TargetKey, manifestPages int64) float64 {
	for _, t := range cat.Tables {
		if t.Schema != k.Schema || t.Name != k.Table {
			continue
		}
		for _, p := range t.Parts {
			if p.Name != k.Partition {
				continue
			}
			for _, ix := range t.Indexes {
				if ix.Name != k.Index {
					continue
				}
				pages := t.LOBPages(p)
				if k.Kind == KindIndex {
					_, pages = t.IndexPages(ix, p)
				}
				return float64(manifestPages) / float64(max(pages, 1))
			}
		}
	}
	return 0
}

// tierOrder is how a native load of a manifest's pages is cut into tiers (hotnessTiers).
type tierOrder int

const (
	// oneLoad: room to spare and nothing waiting for the pages: one load, sorted.
	oneLoad tierOrder = iota
	// coldestFirst: the pool will be tight: the hottest pages load last, to be the
	// youngest when the workload starts evicting.
	coldestFirst
	// hottestFirst: queries are waiting for the pages (the server serves traffic, or will
	// the moment it answers: --wait-for-server), or the load may stop early
	// (--until-coverage): the pages the workload needs most go first.
	hottestFirst
)

func (o tierOrder) String() string {
	switch o {
	case coldestFirst:
		return "coldest first"
	case hottestFirst:
		return "hottest first"
	}
	return "by page number"
}

// chooseTierOrder: waiting queries come before the LRU order, since the traffic itself
// makes the pages it reads young.
func chooseTierOrder(tight, untilCoverage, traffic bool) tierOrder {
	switch {
	case untilCoverage || traffic:
		return hottestFirst
	case tight:
		return coldestFirst
	}
	return oneLoad
}

// hotnessTiers cuts pages, hottest first, into the tiers a native load reads in turn. The
// server's loader sorts what it is given by page number, and each page it reads pushes the
// earlier ones of the old sublist towards the LRU list's tail: one load of every page would
// leave the lowest page numbers, not the coldest pages, to be evicted first once the
// workload needs room. Only the old sublist keeps the tiers' order, though: as the server
// keeps it at innodb_old_blocks_pct, the rest of each tier passes into the young sublist
// (63% at the default 37), whose pages go from the last tier loaded back to the first. So
// a load into a tight pool without traffic raises the old sublist to 95% (replaceStale):
// 95% of each tier then keeps the tiers' order (TestTightLoadEvictsColdestFirst: the first
// quarter of evictions takes 95-97% of the coldest quarter and none of the hottest, on every
// flavor; at 37% it took 32% of every quarter but the hottest; docs/experiments.md, "What
// a load leaves in the LRU list").
// When the pool will be tight, loading the coldest quarter first and the hottest last keeps
// the manifest's order for the first evictions: on the make bench skewed workload (data 4x the
// pool) the first pass after the load missed 10% fewer pages than after InnoDB's own load
// of the same pages (4,998 against 5,551), for 0.15-0.3 s more loading of 240 MB, since
// each tier waits for its reads to drain. When queries wait for the pages (or the load may
// stop early) the hottest eighth goes first: a load sorted by page number would serve the
// hottest pages no sooner than the coldest, and the queries' own reads queue behind it.
//
// The server sorts each tier by page number, so within a tier the eviction order is the
// page order: where hotness runs with page numbers the other way (the lowest ids hottest,
// as sysbench's pareto keys are), a quarter's hottest pages sit nearest the tail and go
// first. Modelled (the midpoint LRU with innodb_old_blocks_time, a 63,000-page pool, pareto
// point selects on a disk-bound server: scripts/lru-model.py --failover), a standby loaded
// in 4 tiers dips to 90-94% of hot 20-30 s after a failover, as the capped-disk runs do,
// and loses about 3.7 s; in 32 tiers 1.6 s, as much as one holding the primary's exact LRU
// order. So a tight load's tiers are about coldTierPages each, up to maxColdTiers of them,
// unless the page order already is the hotness order (hotPagesHigh: the newest rows
// hottest, in a table filled in key order): then the server's sort puts each tier's hottest
// pages at its young end, an order closer to the truth than the manifest's LRU positions
// (the model: 4 tiers lost 1.4-2.4 s less than 32 there, with hot pages scattered 32 tiers
// lost about 0.3 s less).
func hotnessTiers(pages []PageID, order tierOrder) [][]PageID {
	n, minTier := 4, 1024
	switch {
	case order == hottestFirst:
		n, minTier = 8, 512
	case order == coldestFirst && len(pages) >= n*minTier && !hotPagesHigh(pages):
		n = min(maxColdTiers, max(n, len(pages)/coldTierPages))
	}
	if order == oneLoad || len(pages) < n*minTier {
		return [][]PageID{SortPages(slices.Clone(pages))}
	}
	size := (len(pages) + n - 1) / n
	var tiers [][]PageID
	if order == hottestFirst {
		// Tiers of whole extents, each about size pages.
		var tier []PageID
		for _, e := range byHotExtent(pages) {
			tier = append(tier, e...)
			if len(tier) >= size {
				tiers = append(tiers, SortPages(tier))
				tier = nil
			}
		}
		if len(tier) > 0 {
			tiers = append(tiers, SortPages(tier))
		}
		return tiers
	}
	for i := 0; i < len(pages); i += size {
		tiers = append(tiers, SortPages(slices.Clone(pages[i:min(i+size, len(pages))])))
	}
	if order == coldestFirst {
		slices.Reverse(tiers)
	}
	return tiers
}

// hotPagesHigh reports whether pages, hottest first, are hotter the higher their page
// numbers within their tablespaces: a rank correlation (Spearman's, per tablespace, weighted by its pages) of
// hotness with page number of at least hotPagesHighRho.
func hotPagesHigh(pages []PageID) bool {
	bySpace := map[uint32][]uint32{} // page numbers, hottest first
	for _, p := range pages {
		bySpace[p.Space()] = append(bySpace[p.Space()], p.Page())
	}
	var weighted, total float64
	for _, nums := range bySpace {
		n := len(nums)
		if n < 2 {
			continue
		}
		byPage := make([]int, n) // hotness ranks in page order
		for i := range byPage {
			byPage[i] = i
		}
		slices.SortFunc(byPage, func(a, b int) int { return cmp.Compare(nums[a], nums[b]) })
		var d2 float64
		for pageRank, hotRank := range byPage {
			// hotRank 0 is the hottest; the highest page number has the last pageRank.
			d := float64(n-1-pageRank) - float64(hotRank)
			d2 += d * d
		}
		fn := float64(n)
		rho := 1 - 6*d2/(fn*(fn*fn-1))
		weighted += rho * fn
		total += fn
	}
	return total > 0 && weighted/total >= hotPagesHighRho
}

// hotPagesHighRho: how closely page order must follow hotness for a tight load to keep
// its 4 coarse tiers (a guess between the model's two cases, which are exact: 1 and 0).
const hotPagesHighRho = 0.8

// coldTierPages and maxColdTiers size a tight load's tiers (hotnessTiers): each tier
// waits for its reads to drain before the next starts, a few tens of ms on a fast disk.
const (
	coldTierPages = 2048
	maxColdTiers  = 32
)

// extentPages: pages are grouped by extent, 64 pages (1 MiB of 16 KiB pages, the unit
// InnoDB allocates and reads ahead).
const extentPages = 64

// byHotExtent groups pages, given hottest first, by extent: the extents in the order of
// their pages' mean rank, each extent's pages by page number. Tiers of whole extents hold
// runs of neighbouring pages instead of every eighth page of the hot range: a disk that
// counts merged neighbouring reads as one operation (a cloud volume: EBS merges reads of
// up to 256 KiB) serves such a run at the cost of one read, where scattered pages cost
// one read each. Measured on a disk that
// merges queued reads under a cap of 1,000 reads/s (a loop device, docs/experiments.md),
// a 64,000-page hot set under traffic: eight page-ranked tiers loaded in 59 s (18 MB/s),
// tiers of whole extents in 36.5 s (29 MB/s).
func byHotExtent(pages []PageID) [][]PageID {
	type extent struct {
		rankSum int
		pages   []PageID
	}
	extents := map[PageID]*extent{}
	var order []*extent
	for rank, p := range pages {
		key := MakePageID(p.Space(), p.Page()/extentPages)
		e := extents[key]
		if e == nil {
			e = &extent{}
			extents[key] = e
			order = append(order, e)
		}
		e.rankSum += rank
		e.pages = append(e.pages, p)
	}
	// order holds the extents by their hottest page; stable, so that equal means keep it.
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		return a.rankSum*len(b.pages) < b.rankSum*len(a.pages)
	})
	out := make([][]PageID, len(order))
	for i, e := range order {
		out[i] = SortPages(e.pages)
	}
	return out
}

// ManifestRow is one index's (or LOB set's) share of a manifest's pages resident now.
type ManifestRow struct {
	Schema        string  `json:"schema"`
	Table         string  `json:"table"`
	Partition     string  `json:"partition,omitempty"`
	Index         string  `json:"index"`
	Kind          Kind    `json:"kind"`
	ManifestPages int64   `json:"manifest_pages"`
	Resident      int64   `json:"resident"`
	Coverage      float64 `json:"coverage"`
}

// ManifestCoverage is how much of a manifest's pages are resident on this server.
type ManifestCoverage struct {
	Resolved *Resolved
	// Measured are the pages counted: the manifest's by number where this server is a
	// page-for-page copy of its source, and where it is not, the pages of this server's
	// own B-trees that hold the manifest's key ranges (the tree path), as warm --from
	// finds them. Resolved.Pages on a copy that is not page-for-page name other rows.
	Measured *Resolved
	Coverage float64
	Resident int64
	Rows     []ManifestRow // most manifest pages first
	// Paths is how each index was measured; Uncounted the manifest pages of indexes that
	// warm reads by range scans here (no page numbers to count), and Note says so.
	Paths     []IndexPath
	Uncounted int64
	Note      string
}

// MeasureTarget is what of a resolved manifest can be counted on this server: its pages by
// number where sampling says this server is a page-for-page copy of the source, the pages
// of this server's trees that hold the manifest's key ranges where it is not and
// innowarm can read the files (the tree path), and nothing of the indexes warm would read
// by range scans (their pages are counted in Uncounted). Nothing is read into the pool.
func MeasureTarget(ctx context.Context, conn *connection.Conn, r *Resolved) (measured *Resolved, paths []IndexPath, uncounted int64, err error) {
	if !r.hasKeys() {
		return r, nil, 0, nil
	}
	// Counting reads the tablespace files only: a user who may not drive the server's
	// loader (no SET GLOBAL privilege), or a load under way, does not stop it. Planned as a
	// scan, a logical copy's hot set was "unknown" on a standby wholly warm (follow, after
	// a REVOKE).
	method := MethodScan
	if a := CheckNative(ctx, conn); a.OK || a.Readable {
		method = MethodNative
	}
	mp, err := PlanFromManifest(ctx, conn, r, method, Options{Budget: Budget{Percent: 100, Raw: "100%"}, Order: "small-first",
		SplitPages: DefaultSplitPages, ByKey: ByKeyAuto, MeasureOnly: true}, false)
	if err != nil {
		return nil, nil, 0, err
	}
	// The paths as they ended: the tree path hands an index whose keys its B-tree cannot
	// place to range scans after its rows were counted.
	final := map[TargetKey]string{}
	for _, ip := range mp.Paths {
		final[TargetKey{Schema: ip.Schema, Table: ip.Table, Partition: ip.Partition, Index: ip.Index, Kind: ip.Kind}] = ip.Path
	}
	var leftOut int64
	for _, mt := range mp.Targets {
		k := TargetKey{Schema: mt.Schema, Table: mt.Table, Partition: mt.Partition, Index: mt.Index, Kind: mt.Kind}
		switch cmp.Or(final[k], mt.Path) {
		case PathSQL:
			uncounted += mt.ManifestPages
		case PathNone:
			uncounted += mt.ManifestPages
			leftOut += mt.ManifestPages
		}
	}
	measured = mp.r
	if leftOut > 0 {
		c := *measured
		c.LeftOut = leftOut
		measured = &c
	}
	return measured, mp.Paths, uncounted, nil
}

// MeasureManifest resolves a manifest on this server and measures its pages' residency,
// overall and per index; a manifest of which nothing resolves here is a usage error.
func MeasureManifest(ctx context.Context, conn *connection.Conn, mf *manifest.Manifest) (*ManifestCoverage, error) {
	r, err := Resolve(ctx, conn, mf)
	if err != nil {
		return nil, err
	}
	if err := CheckResolved(mf, r); err != nil {
		return nil, err
	}
	measured, paths, uncounted, err := MeasureTarget(ctx, conn, r)
	if err != nil {
		return nil, err
	}
	set, err := bufferpool.Resident(ctx, conn, measured.Spaces())
	if err != nil {
		return nil, err
	}
	mc := &ManifestCoverage{Resolved: r, Measured: measured, Paths: paths, Uncounted: uncounted}
	if uncounted > 0 {
		mc.Note = fmt.Sprintf("%d manifest pages of indexes that are not page-for-page copies here are not counted: warm --from reads them by range scans, which name no pages (path sql: innowarm cannot read their trees here, not on the database host, or keys it does not compare), or leaves them out (path none: the paths say why)", uncounted)
	}
	mc.Coverage, mc.Resident = measured.Coverage(set)
	for k, c := range measured.TargetCoverage(set) {
		row := ManifestRow{Schema: k.Schema, Table: k.Table, Partition: k.Partition, Index: k.Index, Kind: k.Kind, ManifestPages: c[0], Resident: c[1]}
		if c[0] > 0 {
			row.Coverage = float64(c[1]) / float64(c[0])
		}
		mc.Rows = append(mc.Rows, row)
	}
	sort.Slice(mc.Rows, func(i, j int) bool { return mc.Rows[i].ManifestPages > mc.Rows[j].ManifestPages })
	return mc, nil
}
