package warm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/pacing"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// Warm methods.
const (
	MethodAuto   = "auto"
	MethodNative = "native"
	MethodScan   = "scan"
)

// Methods accepted by --method.
var Methods = []string{MethodAuto, MethodNative, MethodScan}

// ChooseMethod resolves auto: native when innowarm runs on the database host and can write
// the server's dump file, scan otherwise. An explicit native that is not possible is a
// usage error saying why. The second result says why the method was chosen.
func ChooseMethod(ctx context.Context, conn *connection.Conn, method string) (string, string, error) {
	switch method {
	case MethodScan:
		return MethodScan, "asked for", nil
	case MethodNative, MethodAuto, "":
		a := CheckNative(ctx, conn)
		if a.OK {
			why := "innowarm runs on the database host and can write the server's dump file"
			var capacity int64
			if conn.Server.LoadThrottledWhenBusy() && conn.DB.QueryRowContext(ctx, "SELECT @@innodb_io_capacity").Scan(&capacity) == nil && capacity < 2000 {
				// Measured on MySQL 9.7 at 200: a load 77 times as slow under two writing
				// clients (docs/flavors.md).
				why += fmt.Sprintf("; note: this server's loader slows to innodb_io_capacity = %d pages/s while it has write activity (--method scan is not throttled)", capacity)
			}
			return MethodNative, why, nil
		}
		if method == MethodNative {
			return "", "", exitcode.BadValue("Method", "native is not possible: %s; use scan", a.Reason)
		}
		return MethodScan, "native load not possible: " + a.Reason, nil
	}
	return "", "", exitcode.BadValue("Method", "%q: use auto, native or scan", method)
}

// ChooseSelectionMethod is ChooseMethod for a warm of a table selection (a page list, a
// manifest or a followed hot set, is loaded natively wherever it can be: scans could only
// approximate it by key ranges). Where scans outrun the server's loader
// (flavor.ScansOutrunNativeLoad), auto scans, provided scans read all that the loader would.
func ChooseSelectionMethod(ctx context.Context, conn *connection.Conn, method string, cat *catalog.Catalog, lob bool) (string, string, error) {
	m, why, err := ChooseMethod(ctx, conn, method)
	if err == nil && m == MethodNative && (method == MethodAuto || method == "") {
		if system := inSystemSpace(cat); system != "" && scansWouldMiss(cat, lob) == "" {
			return MethodScan, system + " is in the system tablespace (created while innodb_file_per_table was off): the server's loader cannot tell its pages from the others', scans read it", nil
		}
	}
	if err != nil || m != MethodNative || (method != MethodAuto && method != "") || !conn.Server.ScansOutrunNativeLoad() {
		return m, why, err
	}
	srv := conn.Server.String()
	if missed := scansWouldMiss(cat, lob); missed != "" {
		return m, why + "; scans would be faster on " + srv + " but would not read " + missed, nil
	}
	return MethodScan, srv + "'s own loader reads a page at a time: scans, which read ahead, load whole tables faster (1.4-2.8x the native load, measured on MySQL 9.7) and are not slowed by write activity; --method native uses the loader", nil
}

// inSystemSpace names a selected table stored in the system tablespace, "" when none is.
func inSystemSpace(cat *catalog.Catalog) string {
	if sys := systemSpaceTables(cat); sys != nil {
		return sys.Tables[0].Quoted()
	}
	return ""
}

// systemSpaceSkip is why a native load leaves out a table in the system tablespace.
const systemSpaceSkip = "in the system tablespace (created while innodb_file_per_table was off): the server's loader cannot tell its pages from the others'; --method scan warms it"

// scansWouldMiss names what of the selection index scans would leave out and the native
// loader reads (empty when nothing): FULLTEXT and SPATIAL indexes, indexes the optimizer
// may not use (IGNORED, invisible), full-text auxiliary tables, and off-page LOB pages
// unless scans read them (--lob). auto prefers scans only where they read everything.
func scansWouldMiss(cat *catalog.Catalog, lob bool) string {
	for _, t := range cat.Tables {
		if len(t.Aux) > 0 {
			return t.Quoted() + "'s full-text index tables"
		}
		for _, ix := range t.Indexes {
			if ix.Type == "FULLTEXT" || ix.Type == "SPATIAL" || !ix.Usable || ix.Internal {
				return t.Quoted() + " index " + sqltext.Ident(ix.Name)
			}
		}
		if !lob {
			for _, p := range t.Parts {
				if t.LOBPages(p) > 0 {
					return t.Quoted() + "'s off-page BLOB/TEXT pages (--lob reads them)"
				}
			}
		}
	}
	return ""
}

// PlanCoverage is the share of a plan's targets resident now: each target's resident pages
// (at most its estimate) over their estimated pages, summed.
func PlanCoverage(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, pl *Plan) (float64, string, error) {
	res, err := bufferpool.Read(ctx, conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true})
	if err != nil {
		return 0, "", err
	}
	type k struct{ schema, table, part, index string }
	idx := map[k]bufferpool.IndexResidency{}
	for _, r := range res.Indexes {
		idx[k{r.Schema, r.Table, r.Partition, r.Index}] = r
	}
	var want, have int64
	for _, tg := range append(append([]*Target{}, pl.Targets...), pl.Resident...) {
		r := idx[k{tg.Table.Schema, tg.Table.Name, tg.Part.Name, tg.Index.Name}]
		n := r.Resident
		if tg.Kind == KindLOB {
			n = r.LOBResident
		}
		want += tg.EstPages
		have += min(n, tg.EstPages)
	}
	if want == 0 {
		return 1, "nothing planned", nil
	}
	c := float64(have) / float64(want)
	return c, fmt.Sprintf("%d of %d planned pages resident", have, want), nil
}

// spaceUnit is one tablespace to load natively.
type spaceUnit struct {
	t         *catalog.Table
	p         *catalog.Part // nil for an auxiliary table
	aux       string        // an auxiliary table's role (catalog.AuxSpace.Role)
	name      string
	space     uint32
	pages     int64 // to load: the pages in use, or the whole file
	filePages int64
	// sharers are the other selected tables' parts in the same tablespace (MySQL's general
	// tablespaces): one load of the file is theirs too.
	sharers []*catalog.Part
}

// NativePlan is a load by the server's own loader, planned: the pages it hands the loader
// within the budget (a selection's tablespaces, or a manifest's pages), what it leaves out
// and why. A dry run prints it; Run loads it.
type NativePlan struct {
	// Spaces are a selection's tablespaces, in load order (none for a manifest).
	Spaces       []NativeSpace   `json:"tablespaces"`
	Requested    int64           `json:"requested_pages"` // pages handed to the loader
	NewPages     int64           `json:"new_pages"`       // of those, not resident yet (estimated)
	PageSize     int64           `json:"page_size"`
	PoolPages    int64           `json:"pool_pages"`
	FreePages    int64           `json:"free_pages"`
	BudgetPages  int64           `json:"budget_pages"`
	BudgetSource string          `json:"budget_source"`
	LeftOut      []LeftOut       `json:"left_out"`
	Resident     []string        `json:"already_resident"` // tablespaces with nothing to load
	Skipped      []catalog.Skip  `json:"skipped"`
	Notes        []string        `json:"notes"`
	Manifest     *ManifestReport `json:"manifest,omitempty"`

	// Order is how a manifest's pages are cut into tiers; Tiers how many (1: one load).
	Order tierOrder `json:"-"`
	Tiers int       `json:"tiers,omitempty"`

	cat   *catalog.Catalog
	tiers [][]PageID
	res   *Result // what a run starts from: the targets, skips and the pool before
	// afterLoad proves the residency after the load from the page counters.
	afterLoad    func(ctx context.Context) (*bufferpool.Residency, string, error)
	replaceStale bool
	makeYoung    bool // innodb_old_blocks_time=0 during the load (PlanFromManifest)
	// budget and poolBefore let a run cut its budget when the pool shrinks under it.
	budget     Budget
	poolBefore bufferpool.Totals
}

// NativeSpace is one tablespace of a native plan.
type NativeSpace struct {
	Name      string `json:"tablespace"` // `schema`.`table` [partition | full-text table]
	Pages     int64  `json:"pages"`      // pages in use (the file's allocation bitmaps), or the whole file
	FilePages int64  `json:"file_pages"`
	Resident  int64  `json:"resident_before"`
	Load      int64  `json:"load_pages"` // handed to the loader: fewer than Pages when the budget cuts it
}

// CheckWork returns an error wrapping ErrNothingToWarm when the plan loads nothing and
// leaves pages cold (the budget has no room, the tablespaces' sizes are unknown); nil when it
// loads something or everything is resident already.
func (np *NativePlan) CheckWork() error {
	if np.Requested > 0 || ((len(np.Resident) > 0 || (np.Manifest != nil && np.Manifest.AlreadyThere > 0)) && len(np.LeftOut) == 0) {
		return nil
	}
	return nothingToWarm(np.LeftOut, np.BudgetPages, np.BudgetSource, np.Skipped)
}

// Run loads the plan's pages.
func (np *NativePlan) Run(ctx context.Context, conn *connection.Conn, ro RunOptions) (*Result, error) {
	ro.afterLoad = np.afterLoad
	ro.ReplaceStale = ro.ReplaceStale || np.replaceStale
	ro.makeYoungIfAllowed = np.makeYoung
	ro.guard = newPoolGuard(ctx, conn, np.budget, np.poolBefore, np.BudgetPages)
	ro.guard.newPages = np.NewPages
	return runNativeLoad(ctx, conn, np.cat, np.tiers, np.res, ro)
}

// NativeFromCatalog loads every page of the chosen tables' tablespaces (and of their FULLTEXT
// auxiliary tables) with the server's own loader, within the budget (PlanNative).
func NativeFromCatalog(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, o Options, ro RunOptions) (*Result, error) {
	np, err := PlanNative(ctx, conn, cat, o)
	if err != nil {
		return nil, err
	}
	if err := np.CheckWork(); err != nil {
		return np.res, err
	}
	return np.Run(ctx, conn, ro)
}

// PlanNative plans a native load of the chosen tables' tablespaces (and of their FULLTEXT
// auxiliary tables) within the budget: whole tablespaces, smaller first (or --order), and
// the first pages of the one that fits in part. A tablespace already resident is not loaded.
func PlanNative(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, o Options) (*NativePlan, error) {
	srv := conn.Server
	page := int64(srv.PageSize)
	// A FULLTEXT index's auxiliary tables may be sized only by their files (MariaDB).
	auxInUse, auxSkips := sizeUnlistedFulltextTables(ctx, conn, cat)
	before, err := readResidency(ctx, conn, cat)
	if err != nil {
		return nil, err
	}
	residentBySpace := map[uint32]int64{}
	// complete: every index of the tablespace is wholly resident by its exact size (the file's
	// count). Its file-metadata and SDI pages are nobody's index, and a pool can lose one
	// of them while every index stays resident: that alone must not load the whole file
	// again (a second warm of a resident table asked for all its pages, and said so only
	// when no background read touched the counters meanwhile).
	complete := map[uint32]bool{}
	for _, r := range before.Indexes {
		if r.Fulltext {
			// A FULLTEXT row is of its auxiliary tables' files, not of its table's
			// (r.Space): each of those is counted by itself below.
			continue
		}
		residentBySpace[r.Space] += r.Resident + r.LOBResident
		whole := r.Known && r.Coverage >= 1 && r.LOBResident >= r.LOBPages
		if c, seen := complete[r.Space]; !seen || c {
			complete[r.Space] = whole
		}
	}
	var spaces []spaceUnit
	res := &Result{Method: MethodNative, Skipped: append(cat.Skipped[:len(cat.Skipped):len(cat.Skipped)], auxSkips...), Notes: cat.Notes, PageSize: page, PoolBefore: before.Totals}
	sharedAt := map[uint32]int{} // a shared tablespace's unit in spaces
	sharedNote := false
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown && p.Space == 0 {
				res.Skipped = append(res.Skipped, catalog.Skip{Schema: t.Schema, Table: t.Name, Index: p.Name, Reason: systemSpaceSkip})
				continue
			}
			if !p.SpaceKnown || p.FileSize == 0 {
				res.Skipped = append(res.Skipped, catalog.Skip{Schema: t.Schema, Table: t.Name, Index: p.Name, Reason: "tablespace size unknown (the server has not opened it)"})
				continue
			}
			if p.SharedSpace {
				// The loader reads a file's pages, whoever's: a tablespace several tables
				// share is loaded once, for all of them.
				if i, ok := sharedAt[p.Space]; ok {
					spaces[i].name += ", " + t.Quoted() + partSuffix(p)
					spaces[i].sharers = append(spaces[i].sharers, p)
					continue
				}
				sharedAt[p.Space] = len(spaces)
				if !sharedNote {
					sharedNote = true
					res.Notes = append(res.Notes, "tables that share a tablespace (a general tablespace) are loaded together, the tables the selection leaves out with them: the loader reads the file's pages, whoever's")
				}
			}
			spaces = append(spaces, spaceUnit{t: t, p: p, name: t.Quoted() + partSuffix(p), space: p.Space, pages: p.FileSize / page, filePages: p.FileSize / page})
		}
		for _, a := range t.Aux {
			if a.FileSize > 0 {
				spaces = append(spaces, spaceUnit{t: t, name: t.Quoted() + " " + a.Name, aux: a.Role, space: a.Space, pages: a.FileSize / page, filePages: a.FileSize / page})
				residentBySpace[a.Space] = before.FulltextResident(a.Space)
			}
		}
	}
	switch o.Order {
	case "large-first":
		sort.SliceStable(spaces, func(i, j int) bool { return spaces[i].pages > spaces[j].pages })
	case "catalog":
	default:
		sort.SliceStable(spaces, func(i, j int) bool { return spaces[i].pages < spaces[j].pages })
	}
	inUse := pagesInUse(ctx, conn, spaces)
	for space, m := range auxInUse {
		if inUse[space] == nil {
			inUse[space] = m
		}
	}
	for i := range spaces {
		if m := inUse[spaces[i].space]; m != nil {
			spaces[i].pages = min(m.InUsePages(), spaces[i].filePages)
		}
	}
	budget, source := budgetPages(o.Budget, before.Totals, before.Selected)
	np := &NativePlan{PageSize: page, PoolPages: before.Totals.PagesTotal, FreePages: before.Totals.PagesFree, BudgetPages: budget, BudgetSource: source,
		Skipped: res.Skipped, Notes: res.Notes, cat: cat, res: res}
	remaining := budget
	var pages []PageID
	included := map[*catalog.Part]bool{}
	// fulltext: tables some of whose FULLTEXT auxiliary tables the plan loads or finds
	// resident: their FULLTEXT rows are the result's too.
	fulltext := map[*catalog.Table]bool{}
	for _, su := range spaces {
		need := max(su.pages-residentBySpace[su.space], 0)
		if complete[su.space] {
			need = 0
		}
		n := su.pages
		if need == 0 {
			np.Resident = append(np.Resident, su.name)
			if su.p != nil {
				included[su.p] = true
			}
			if su.aux != "" {
				fulltext[su.t] = true
			}
			for _, p := range su.sharers {
				included[p] = true
			}
			continue
		}
		if need > remaining {
			if remaining <= 0 {
				res.LeftOut = append(res.LeftOut, LeftOut{Schema: su.t.Schema, Table: su.t.Name, Partition: su.partition(), Index: su.aux, Kind: KindTablespace, Pages: need,
					Reason: fmt.Sprintf("over budget: needs %d new pages, none left of %d (%s)", need, budget, source)})
				continue
			}
			n = su.pages * remaining / max(need, 1)
			res.LeftOut = append(res.LeftOut, LeftOut{Schema: su.t.Schema, Table: su.t.Name, Partition: su.partition(), Index: su.aux, Kind: KindTablespace, Pages: su.pages - n,
				Reason: fmt.Sprintf("over budget: only the first %d of %d pages fit (%s)", n, su.pages, source)})
			np.NewPages += remaining
			remaining = 0
		} else {
			remaining -= need
			np.NewPages += need
		}
		list := su.pageList(n, inUse[su.space])
		for _, pg := range list {
			pages = append(pages, MakePageID(su.space, pg))
		}
		np.Spaces = append(np.Spaces, NativeSpace{Name: su.name, Pages: su.pages, FilePages: su.filePages, Resident: residentBySpace[su.space], Load: int64(len(list))})
		if su.p != nil {
			included[su.p] = true
		}
		if su.aux != "" {
			fulltext[su.t] = true
		}
		for _, p := range su.sharers {
			included[p] = true
		}
	}
	pages = SortPages(pages)
	np.Requested, np.LeftOut = int64(len(pages)), res.LeftOut
	np.tiers = [][]PageID{pages}
	res.Targets = targetsForParts(cat, included, fulltext, before)
	np.afterLoad = func(ctx context.Context) (*bufferpool.Residency, string, error) {
		return before.AfterLoad(ctx, conn, pages)
	}
	np.budget, np.poolBefore = o.Budget, before.Totals
	return np, nil
}

// pagesInUse reads, for each tablespace, which of its pages may hold data, from the file's
// own extent descriptors (internal/ibd): a file is often larger than its data (reserved
// extents, space freed by deletes), and a native load of the whole file spends the budget
// and the disk on pages that hold nothing (measured on MySQL 9.7: a 600-page table in a
// 1,600-page file). A file that cannot be read (encrypted, compressed) is loaded whole.
func pagesInUse(ctx context.Context, conn *connection.Conn, spaces []spaceUnit) map[uint32]*ibd.Map {
	want := map[uint32]bool{}
	for _, su := range spaces {
		want[su.space] = true
	}
	out := map[uint32]*ibd.Map{}
	paths, err := catalog.TablespaceFiles(ctx, conn, want)
	if err != nil {
		return out
	}
	for space, path := range paths {
		if m, err := ibd.Open(path, conn.Server.PageSize, nil); err == nil {
			out[space] = m
		}
	}
	return out
}

// pageList is the first n pages of the space to load: the pages in use when the file's
// metadata says which, else every page.
func (su spaceUnit) pageList(n int64, m *ibd.Map) []uint32 {
	var out []uint32
	for pg := uint32(0); int64(len(out)) < n && int64(pg) < su.filePages; pg++ {
		if m == nil || m.InUse(pg) {
			out = append(out, pg)
		}
	}
	return out
}

// partition names the part the unit loads ("" for a table without partitions or an
// auxiliary table).
func (su spaceUnit) partition() string {
	if su.p == nil {
		return ""
	}
	return su.p.Name
}

func partSuffix(p *catalog.Part) string {
	if p.Name == "" {
		return ""
	}
	return " " + sqltext.Ident(p.Name)
}

// targetsForParts lists every index of the included parts, for coverage before and after,
// and the FULLTEXT rows (each FULLTEXT index, and bufferpool.FulltextCommon) of the tables
// whose auxiliary tables the plan includes (fulltext): their pages are those tables', sized
// as the residency sizes them (by their files).
func targetsForParts(cat *catalog.Catalog, included map[*catalog.Part]bool, fulltext map[*catalog.Table]bool, before *bufferpool.Residency) []*TargetResult {
	resident := map[TargetKey]int64{}
	fulltextRows := map[TargetKey]bufferpool.IndexResidency{}
	for _, r := range before.Indexes {
		resident[TargetKey{r.Schema, r.Table, r.Partition, r.Index, KindIndex}] = r.Resident
		resident[TargetKey{r.Schema, r.Table, r.Partition, r.Index, KindLOB}] = r.LOBResident
		if r.Fulltext {
			fulltextRows[TargetKey{r.Schema, r.Table, r.Partition, r.Index, KindIndex}] = r
		}
	}
	var out []*TargetResult
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if !included[p] {
				continue
			}
			for _, ix := range t.Indexes {
				if ix.Type == "FULLTEXT" {
					continue // listed below, by its auxiliary tables
				}
				k := TargetKey{t.Schema, t.Name, p.Name, ix.Name, KindIndex}
				_, hi := t.IndexPages(ix, p)
				out = append(out, &TargetResult{Schema: t.Schema, Table: t.Name, Partition: p.Name, Index: ix.Name, Kind: KindIndex, EstPages: hi, ResidentBefore: resident[k]})
				if ix.Clustered && t.LOBPages(p) > 0 {
					kl := k
					kl.Kind = KindLOB
					out = append(out, &TargetResult{Schema: t.Schema, Table: t.Name, Partition: p.Name, Index: ix.Name, Kind: KindLOB, EstPages: t.LOBPages(p), ResidentBefore: resident[kl]})
				}
			}
		}
		if fulltext[t] && len(t.Parts) == 1 {
			p := t.Parts[0]
			names := []string{}
			for _, ix := range t.Indexes {
				if ix.Type == "FULLTEXT" {
					names = append(names, ix.Name)
				}
			}
			for _, name := range append(names, bufferpool.FulltextCommon) {
				r, ok := fulltextRows[TargetKey{t.Schema, t.Name, p.Name, name, KindIndex}]
				if !ok {
					continue
				}
				out = append(out, &TargetResult{Schema: t.Schema, Table: t.Name, Partition: p.Name, Index: name, Kind: KindIndex, EstPages: r.Pages, ResidentBefore: r.Resident, Fulltext: true})
			}
		}
	}
	return out
}

// niceQueuedChunkPages is the chunk of a --nice native load where the loader queues its
// reads (see chunkReads).
const niceQueuedChunkPages = 64

func runNativeLoad(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, tiers [][]PageID, res *Result, ro RunOptions) (_ *Result, err error) {
	log := logx.New(ro.Progress.Out, ro.Progress.Quiet)
	if ro.Progress.Out == nil {
		log = logx.Default()
	}
	start, _ := pagesRead(ctx, conn)
	t0 := time.Now()
	prog := ro.Progress
	prog.Title = "native load"
	ro.Pacing.Workers = 1
	gov, err := pacing.New(ctx, conn, ro.Pacing)
	if err != nil {
		return res, err
	}
	defer gov.Close()
	chunk := int(ro.Pacing.SuggestedUnitBytes() / max(res.PageSize, 1))
	if chunk == 0 {
		chunk = DefaultSplitPages
	}
	if ro.Pacing.Nice && conn.Server.LoadQueuesReads() {
		// The loader submits a chunk's reads at once, ahead of the foreground's: a chunk
		// of 64 pages keeps that to 64 ms on a disk capped at 1,000 reads per second.
		chunk = min(chunk, niceQueuedChunkPages)
	}
	restoreVars, err := applyVariables(ctx, conn, ro, log)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, restoreVars()) }()
	if ro.makeYoungIfAllowed && !ro.MakeYoung && !ro.Pacing.Nice {
		young := ro
		young.MakeYoung = true
		if restoreYoung, yerr := applyVariables(ctx, conn, young, log); yerr != nil {
			log.Warnf("%v: pages the traffic touches during the load may be evicted by those loaded after them", yerr)
		} else {
			defer func() { err = errors.Join(err, restoreYoung()) }()
		}
	}
	if ro.ReplaceStale {
		restorePct, perr := raiseOldBlocksPct(ctx, conn, log)
		if perr != nil {
			return res, perr
		}
		defer func() { err = errors.Join(err, restorePct()) }()
	}
	nr, err := loadNative(ctx, conn, tiers, prog, log, ro.Until, gov, chunk, ro.guard, ro.StopOnTraffic)
	res.Native = nr
	res.Stopped = nr.Stopped
	if res.PoolResize = nr.PoolResize; res.PoolResize != nil && !res.PoolResize.Stopped {
		res.Notes = append(res.Notes, res.PoolResize.Text())
	}
	if gov != nil {
		st := gov.Stats()
		res.Pacing = &st
	}
	res.Seconds = time.Since(t0).Seconds()
	res.Units, res.Parallel = 1, 1
	if n, perr := pagesRead(context.WithoutCancel(ctx), conn); perr == nil {
		res.PagesRead = n - start
	}
	if err != nil {
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, ctx.Err()
		}
		res.UnitsFailed = 1
		res.Errors = append(res.Errors, err.Error())
		return res, err
	}
	res.UnitsDone = 1
	res.MBps = nr.MBps
	if res.manifestOnly {
		return res, nil
	}
	ro.Catalog = cat
	return res, finish(ctx, conn, &Plan{PageSize: res.PageSize}, res, ro, nil)
}

// readResidency is the per-index residency a warm reports before and after: from the
// server's own dump where innowarm may borrow it (0.2 µs of server time per resident page,
// no table built, exact per index and LOB: bufferpool.ReadDump), else from
// INNODB_BUFFER_PAGE_LRU (2-3 µs a page). Not for --until-coverage, which measures while a
// native load holds the dump file.
func readResidency(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog) (*bufferpool.Residency, error) {
	// Quiet, but for its warnings: a repair of what a killed innowarm left (the server's
	// dump file) is said, also by a dry run.
	return bufferpool.ReadSelection(ctx, conn, cat, bufferpool.ReadOptions{IncludeZero: true, OnlyCatalog: true}, bufferpool.PageListAuto, logx.New(logx.Default().Writer(), true))
}
