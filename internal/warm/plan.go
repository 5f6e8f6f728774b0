// Package warm loads chosen indexes into the InnoDB buffer pool with SQL: one statement per
// unit (an index, or a key range of one, of one table or partition) that reads every page
// of exactly that index and returns one number. It plans units within a page budget,
// checks with EXPLAIN that each statement reads its index, runs them on parallel
// read-only sessions, and reports what became resident.
package warm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sqlerr"
	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/units"
)

// Kind is what a unit reads.
type Kind string

const (
	KindIndex Kind = "index" // the B-tree of one index
	KindLOB   Kind = "lob"   // the off-page column pages of the clustered index
	// KindFile: pages of a table's file that are no index's (its header, extent
	// descriptors, inodes, MySQL's copy of its dictionary entry), or pages a snapshot could
	// not name; a manifest's only, never scanned.
	KindFile Kind = "file"
	// KindTablespace: a whole tablespace (a native load of a selection's files).
	KindTablespace Kind = "tablespace"
)

// IndexLabel names what a row of results is about: the index, "PRIMARY (LOB)", or the
// table's file pages of no index.
func IndexLabel(index string, k Kind) string {
	switch k {
	case KindLOB:
		return index + " (LOB)"
	case KindFile:
		return "(file pages)"
	}
	return index
}

// Orders accepted by --order.
var Orders = []string{"small-first", "large-first", "dense-first", "catalog"}

// Options shape a plan.
type Options struct {
	Budget     Budget
	Order      string
	Parallel   int
	LOB        bool
	SplitPages int64 // split indexes above this many pages into key ranges
	// LockWaitTimeout bounds how long planning statements (EXPLAIN, key-range descents)
	// wait for a table's metadata lock.
	LockWaitTimeout time.Duration
	// Only restricts the plan to these targets, highest score first (warm --from with the
	// scan method: the indexes a manifest names, densest first).
	Only map[TargetKey]float64
	// ByKey (warm --from) chooses how the manifest's indexes are warmed: auto, pages or sql
	// (ByKeyModes).
	ByKey string
	// ExpectTraffic says queries will arrive with the warm (warm --wait-for-server): a native
	// load of a manifest then puts the hottest pages first without sampling the server's
	// statement rate.
	ExpectTraffic bool
	// MeasureOnly (inspect --manifest, a readiness gate) plans a manifest only as far as the
	// pages it would load by number here, the tree path's included: no range statement is
	// planned (their planning reads pages), no traffic sampled.
	MeasureOnly bool
}

func (t *Target) key() TargetKey {
	return TargetKey{Schema: t.Table.Schema, Table: t.Table.Name, Partition: t.Part.Name, Index: t.Index.Name, Kind: t.Kind}
}

// Budget caps the pages a warm may add to the pool.
type Budget struct {
	Bytes   int64
	Percent float64
	Raw     string
	// ServerPages is the pool's pages the server keeps for itself, beside the selection,
	// where the caller counted them (follow: bufferpool.CountResident of its own
	// tablespaces): a budget is capped at what the pool holds besides them too.
	ServerPages int64
}

// ParseBudget reads "2G", "512M", "80%".
func ParseBudget(s string) (Budget, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Budget{}, nil
	}
	if strings.HasSuffix(s, "%") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || v <= 0 || v > 100 {
			return Budget{}, fmt.Errorf("bad budget %q: use a size (2G) or a percent of the pool (1-100%%)", s)
		}
		return Budget{Percent: v, Raw: s}, nil
	}
	b, err := units.ParseBytes(s)
	if err != nil || b <= 0 {
		return Budget{}, fmt.Errorf("bad budget %q: use a size (2G) or a percent of the pool (80%%)", s)
	}
	if b < manifest.MinPageSize {
		// A bare number is bytes, as in the servers' own options: "--budget 10" was a
		// budget of no page, and the warm said only that nothing fitted.
		return Budget{}, fmt.Errorf("bad budget %q: %d bytes is less than one page (InnoDB's smallest is 4 KiB); a size takes its unit (10M, 2G) or is a percent of the pool (10%%)", s, b)
	}
	return Budget{Bytes: b, Raw: s}, nil
}

// Unit is one statement's worth of work.
type Unit struct {
	ID       int
	Target   *Target
	Table    *catalog.Table
	Part     *catalog.Part
	Index    *catalog.Index
	Kind     Kind
	Range    *KeyRange
	RangeNo  int // 1-based
	Ranges   int
	EstPages int64
	NewPages int64

	splitColumn  string
	prefixColumn string
	keyed        *keyedRead // the sql path of warm --from: key runs of the manifest
}

// Label names the unit for progress lines.
func (u *Unit) Label() string {
	s := u.Target.Name()
	if u.Ranges > 1 {
		s += fmt.Sprintf(" [range %d/%d]", u.RangeNo, u.Ranges)
	}
	return s
}

// Target is one index (or the LOB pages) of one table part: what results are reported on.
type Target struct {
	Table          *catalog.Table
	Part           *catalog.Part
	Index          *catalog.Index
	Kind           Kind
	EstPages       int64
	ResidentBefore int64
	Units          []*Unit
	Partial        bool // some key ranges were left out for the budget
	Prefix         bool // first key part is a column prefix: read with clustered lookups
	// Bounded: the target's size is only a range (EstPages its top) and did not fit whole;
	// it is read until the run reaches its budget (watchBudget).
	Bounded bool

	minPages int64 // the bottom of the size's range: EstPages when the size is known

	budget int64 // pages a partial target may add
}

// Name is `schema`.`table` [partition] index (+ LOB).
func (t *Target) Name() string {
	s := t.Table.Quoted()
	if t.Part.Name != "" {
		s += " " + sqltext.Ident(t.Part.Name)
	}
	s += " " + t.Index.Name
	if t.Kind == KindLOB {
		s += " LOB pages"
	}
	return s
}

func (t *Target) newPages() int64 { return max(0, t.EstPages-t.ResidentBefore) }

// Name says what was left out: `schema`.`table`, the partition, and the index, its LOB
// pages, or (a native load's) the tablespace, named by the table alone.
func (l LeftOut) Name() string {
	s := sqltext.Table(l.Schema, l.Table)
	if l.Partition != "" {
		s += " partition " + sqltext.Ident(l.Partition)
	}
	switch l.Kind {
	case KindLOB:
		s += " LOB pages"
	case KindFile:
		s += " file pages"
	case KindTablespace:
		if l.Index != "" {
			s += " " + l.Index // an auxiliary table's role
		}
	default:
		s += " index " + sqltext.Ident(l.Index)
	}
	return s
}

// LeftOut is a planned target (or part of one) not warmed, with the reason.
type LeftOut struct {
	Schema    string `json:"schema"`
	Table     string `json:"table"`
	Partition string `json:"partition,omitempty"`
	Index     string `json:"index"`
	Kind      Kind   `json:"kind"`
	Pages     int64  `json:"pages"`
	Reason    string `json:"reason"`
}

// Plan is what a warm will do.
type Plan struct {
	Server       flavor.Server
	Targets      []*Target // in priority order
	Units        []*Unit   // in execution order
	Skipped      []catalog.Skip
	LeftOut      []LeftOut
	Resident     []*Target // already resident: nothing to read
	PageSize     int64
	PoolPages    int64
	FreePages    int64
	Budget       Budget // as asked: the run cuts it if the pool shrinks (poolGuard)
	BudgetPages  int64
	BudgetSource string
	// budgetReadMark is Innodb_pages_read when the budget's free pages were read (0:
	// unknown): the run's budget is what is left of it after the pages read since (the
	// planning's descents, a key range's ends), which took free pages too.
	budgetReadMark int64
	EstPages       int64 // pages of the planned targets
	NewPages       int64 // of those, not resident yet
	Parallel       int
	Notes          []string
	Before         *bufferpool.Residency

	// sessionSetup runs on every session of the run and on the planning session (the sql
	// path's time zone, for its TIMESTAMP literals).
	sessionSetup []string
	// trimmedRanges counts the manifest pages whose key ranges the sql path's plan left
	// out for the budget (trimToBudget): the manifest's summary counts them left out.
	trimmedRanges int64
}

// DefaultSplitPages is the index size above which an index is cut into key ranges
// (32 MiB with 16 KiB pages): big enough that a statement's overhead is negligible, small
// enough for parallel sessions to share big indexes and for progress to move.
const DefaultSplitPages = 2048

// minPartialPages is the smallest key range a budget that an index does not fit is filled
// with: a range's statement costs a round trip and a descent of the tree.
const minPartialPages = 16

// maxRanges bounds the key ranges of one index.
const maxRanges = 256

// BuildPlan chooses and orders the units for the catalog's tables.
func BuildPlan(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, o Options) (*Plan, error) {
	srv := conn.Server
	if o.SplitPages <= 0 {
		o.SplitPages = DefaultSplitPages
	}
	if o.Order == "" {
		o.Order = "small-first"
	}
	// The pages read from here on take free pages the budget is measured in: the run
	// counts them (Plan.budgetReadMark).
	mark, markErr := pagesRead(ctx, conn)
	before, err := readResidency(ctx, conn, cat)
	if err != nil {
		return nil, err
	}
	pl := &Plan{
		Server: srv, Skipped: append([]catalog.Skip(nil), cat.Skipped...), Notes: append([]string(nil), cat.Notes...),
		PageSize: int64(srv.PageSize), PoolPages: before.Totals.PagesTotal, FreePages: before.Totals.PagesFree, Before: before,
	}
	resident := map[string]int64{}
	for _, r := range before.Indexes {
		k := r.Schema + "\x00" + r.Table + "\x00" + r.Partition + "\x00" + r.Index
		resident[k+"\x00index"] += r.Resident
		resident[k+"\x00lob"] += r.LOBResident
	}
	residentOf := func(t *catalog.Table, p *catalog.Part, ix *catalog.Index, k Kind) int64 {
		return resident[t.Schema+"\x00"+t.Name+"\x00"+p.Name+"\x00"+ix.Name+"\x00"+string(k)]
	}

	var targets []*Target
	for _, t := range cat.Tables {
		clustered := t.Clustered()
		for _, ix := range t.Indexes {
			skip := func(reason string) {
				pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: t.Schema, Table: t.Name, Index: ix.Name, Reason: reason})
			}
			switch {
			case ix.Type == "FULLTEXT":
				skip("FULLTEXT: its words live in hidden auxiliary tables that SQL cannot scan; they load on the first MATCH()")
				continue
			case ix.Type == "SPATIAL":
				skip("SPATIAL: an R-tree cannot be read by an index scan; its pages load on the first spatial search")
				continue
			case ix.Type == "HASH":
				// MariaDB's UNIQUE on a long or BLOB/TEXT column: InnoDB keeps a B-tree of the
				// values' hashes (a hidden DB_ROW_HASH column), which no statement names.
				skip("HASH index (a long UNIQUE): InnoDB's B-tree of a hidden hash column, which SQL cannot scan; --method native loads it with the table")
				continue
			case ix.Type != "BTREE":
				skip(ix.Type + " index: not an InnoDB B-tree")
				continue
			case ix.Internal:
				skip("InnoDB's own index of the FULLTEXT document ids, which no statement can name; --method native loads it with the table")
				continue
			case !ix.Usable:
				skip("the index is ignored (invisible) for the optimizer, so no statement can be made to read it")
				continue
			}
			for _, p := range t.Parts {
				lo, pages := t.IndexPages(ix, p)
				tg := &Target{Table: t, Part: p, Index: ix, Kind: KindIndex, EstPages: pages, minPages: lo}
				tg.ResidentBefore = min(tg.EstPages, residentOf(t, p, ix, KindIndex))
				if len(ix.Columns) > 0 && ix.Columns[0].SubPart > 0 && !ix.Clustered {
					tg.Prefix = true
				}
				targets = append(targets, tg)
			}
		}
		// With --lob every table that may have off-page values gets a LOB unit: the estimate
		// can miss a few large values among many small rows.
		if (o.LOB || o.Only != nil) && clustered != nil && t.MayHoldLOBs() && len(t.LOBColumns()) > 0 {
			for _, p := range t.Parts {
				tg := &Target{Table: t, Part: p, Index: clustered, Kind: KindLOB, EstPages: max(t.LOBPages(p), 1), minPages: 1}
				if clustered.Sizes[p.Name].FromFile {
					tg.minPages = tg.EstPages
				}
				tg.ResidentBefore = min(tg.EstPages, residentOf(t, p, clustered, KindLOB))
				targets = append(targets, tg)
			}
		}
	}
	if o.Only != nil {
		kept := targets[:0]
		for _, tg := range targets {
			if _, ok := o.Only[tg.key()]; ok {
				kept = append(kept, tg)
			}
		}
		targets = kept
		sort.SliceStable(targets, func(i, j int) bool { return o.Only[targets[i].key()] > o.Only[targets[j].key()] })
	} else {
		orderTargets(targets, o.Order)
	}

	// Planning statements run on one session, stopped on the server if interrupted.
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if o.LockWaitTimeout <= 0 {
		o.LockWaitTimeout = 10 * time.Second
	}
	if err := sess.SetLockWaitTimeout(ctx, o.LockWaitTimeout); err != nil {
		return nil, err
	}

	pl.Budget = o.Budget
	pl.BudgetPages, pl.BudgetSource = budgetPages(o.Budget, before.Totals, before.Selected)
	if markErr == nil {
		pl.budgetReadMark = mark
	}
	remaining := pl.BudgetPages
	planned := map[*catalog.Table]map[string]bool{} // tables and parts whose clustered index is planned or resident
	markClustered := func(t *Target) {
		if t.Index.Clustered && t.Kind == KindIndex {
			if planned[t.Table] == nil {
				planned[t.Table] = map[string]bool{}
			}
			planned[t.Table][t.Part.Name] = true
		}
	}
	// Prefix indexes are decided last: they are only worth reading once their clustered
	// index is resident or planned.
	var prefixed []*Target
	for _, tg := range targets {
		if tg.Prefix {
			prefixed = append(prefixed, tg)
		}
	}
	for _, tg := range append(nonPrefix(targets), prefixed...) {
		need := tg.newPages()
		if tg.EstPages > 0 && need <= tg.EstPages/100 && tg.ResidentBefore > 0 {
			pl.Resident = append(pl.Resident, tg)
			markClustered(tg)
			continue
		}
		if tg.Prefix && !planned[tg.Table][tg.Part.Name] {
			pl.leaveOut(tg, need, "prefix index: reading it looks up every row in the clustered index, which did not fit the budget")
			continue
		}
		if need <= remaining {
			remaining -= need
			pl.Targets = append(pl.Targets, tg)
			markClustered(tg)
			continue
		}
		// A size that is only a range (no file to count it in: statistics that count a
		// clustered index's LOB pages as its leaves, a LOB estimate) may fit though its top
		// does not: it is planned for the bottom of its range, and read until the run
		// reaches the budget (what comes after it is then stopped too).
		if lo := max(tg.minPages-tg.ResidentBefore, 0); tg.minPages < tg.EstPages && remaining > 0 && lo <= remaining {
			tg.Bounded, tg.budget, remaining = true, remaining, remaining-lo
			pl.Targets = append(pl.Targets, tg)
			markClustered(tg)
			continue
		}
		// Part of an index is worth warming: its first key ranges, as many as fit (cut
		// to the budget that is left, makeUnits), whatever --split-pages says.
		if col := splitColumn(tg.Index); col != nil && remaining >= minPartialPages && tg.EstPages >= 2*minPartialPages {
			tg.Partial, tg.budget, remaining = true, remaining, 0
			pl.Targets = append(pl.Targets, tg)
			continue
		}
		pl.leaveOut(tg, need, fmt.Sprintf("over budget: needs %d new pages, %d left of %d (%s)", need, remaining, pl.BudgetPages, pl.BudgetSource))
	}

	// Prefix indexes go last: their clustered-index lookups then hit cached pages.
	sort.SliceStable(pl.Targets, func(i, j int) bool { return !pl.Targets[i].Prefix && pl.Targets[j].Prefix })

	id := 0
	// A table whose key-range descent waited out --lock-wait-timeout (DDL, LOCK TABLES) is
	// skipped whole: each of its other indexes and parts would wait as long again, in the
	// plan or in the run.
	locked := map[*catalog.Table]string{}
	for _, tg := range pl.Targets {
		if reason, ok := locked[tg.Table]; ok {
			pl.Targets = removeTarget(pl.Targets, tg)
			pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: tg.Table.Schema, Table: tg.Table.Name, Index: tg.Index.Name, Reason: reason})
			continue
		}
		if err := pl.makeUnits(ctx, sess, tg, o); err != nil {
			if reason := skippable(err); reason != "" {
				if sqlerr.Is(err, sqlerr.LockWaitTimeout) {
					locked[tg.Table] = reason
				}
				pl.Targets = removeTarget(pl.Targets, tg)
				pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: tg.Table.Schema, Table: tg.Table.Name, Index: tg.Index.Name, Reason: reason})
				continue
			}
			return nil, err
		}
		for _, u := range tg.Units {
			id++
			u.ID = id
			pl.Units = append(pl.Units, u)
			pl.EstPages += u.EstPages
			pl.NewPages += u.NewPages
		}
	}
	if err := pl.verify(ctx, sess); err != nil {
		return nil, err
	}
	if n := pl.sizeRanges(); n > 0 {
		pl.Notes = append(pl.Notes, fmt.Sprintf("%d of the planned targets have only a range for their size (no tablespace file to count them in): the run stops at its budget, watching the pages it reads", n))
	}
	pl.Parallel = o.Parallel
	if pl.Parallel <= 0 {
		pl.Parallel = defaultParallel(ctx, conn, len(pl.Units))
	}
	return pl, nil
}

// sizeRanges counts the planned targets whose size is not one number: an index whose
// statistics only bound it, LOB pages not counted in the file.
func (pl *Plan) sizeRanges() int {
	n := 0
	for _, tg := range pl.Targets {
		switch tg.Kind {
		case KindLOB:
			if !tg.Index.Sizes[tg.Part.Name].FromFile {
				n++
			}
		default:
			if !tg.Table.SizeExact(tg.Index, tg.Part) {
				n++
			}
		}
	}
	return n
}

func nonPrefix(ts []*Target) []*Target {
	var out []*Target
	for _, t := range ts {
		if !t.Prefix {
			out = append(out, t)
		}
	}
	return out
}

// orderTargets sorts the targets for the budget in the order asked for, LOB pages after
// every index: rows are found through the indexes first, and a LOB set's size is the least
// certain.
func orderTargets(ts []*Target, order string) {
	density := func(t *Target) float64 { return float64(t.Part.Rows) / float64(max(t.EstPages, 1)) }
	sort.SliceStable(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		if a.Kind != b.Kind {
			return a.Kind == KindIndex
		}
		switch order {
		case "catalog":
			return false
		case "large-first":
			return a.EstPages > b.EstPages
		case "dense-first":
			return density(a) > density(b)
		default:
			if a.EstPages != b.EstPages {
				return a.EstPages < b.EstPages
			}
			return !a.Index.Clustered && b.Index.Clustered
		}
	})
}

// budgetPages is the default budget, the free pages less a reserve for the server's own
// needs (so nothing already cached is evicted), or --budget, capped at what the pool holds
// beside that reserve and the selection's pages already resident (resident): past it the
// warm's later pages evict its earlier ones, or the selection's (measured: --budget 100% of
// a 64 MiB pool whose page cleaner keeps 1,536 of its 4,056 pages free loaded 4,467 pages,
// and 3,859 left the pool during the load).
func budgetPages(b Budget, tot bufferpool.Totals, resident int64) (int64, string) {
	page := int64(tot.PageSize)
	var asked int64
	var source string
	switch {
	case b.Bytes > 0:
		asked, source = b.Bytes/page, "--budget "+b.Raw
	case b.Percent > 0:
		asked, source = int64(float64(tot.PagesTotal)*b.Percent/100), "--budget "+b.Raw+" of the pool"
	default:
		room, reserve := tot.Room()
		return room, fmt.Sprintf("free pages less %d the page cleaner keeps free", reserve)
	}
	if tot.PagesTotal <= 0 {
		return asked, source
	}
	_, reserve := tot.Room()
	if hold := PoolHold(tot, resident+b.ServerPages); asked > hold {
		kept := ""
		if b.ServerPages > 0 {
			kept = fmt.Sprintf(", the server's own %d", b.ServerPages)
		}
		if tot.PagesMisc > 0 {
			kept += fmt.Sprintf(", the %d of its other uses", tot.PagesMisc)
		}
		return hold, fmt.Sprintf("%s, capped at %d pages: the pool's %d less the %d the page cleaner keeps free%s and the selection's %d already resident", source, hold, tot.PagesTotal, reserve, kept, resident)
	}
	return asked, source
}

// PoolHold is how many pages a load may add to a pool that already holds resident pages
// of its selection (and pages the server keeps, when counted; follow sizes its hot set by
// it with those alone): the pool less the page
// cleaner's free target, its other uses (adaptive hash, locks) and those pages. A follow
// round on a 64 MiB standby whose budget left the server's own 145 pages out of the hot
// set's room was allowed them again in the next round by a cap that counted neither.
func PoolHold(tot bufferpool.Totals, resident int64) int64 {
	_, reserve := tot.Room()
	return max(tot.PagesTotal-tot.PagesMisc-reserve-resident, 0)
}

func (pl *Plan) leaveOut(tg *Target, pages int64, reason string) {
	pl.LeftOut = append(pl.LeftOut, LeftOut{Schema: tg.Table.Schema, Table: tg.Table.Name, Partition: tg.Part.Name, Index: tg.Index.Name, Kind: tg.Kind, Pages: pages, Reason: reason})
}

// makeUnits cuts a target into key-range units when it is big and its first key column
// allows it; a partial target keeps the ranges that fit in what is left of the budget.
func (pl *Plan) makeUnits(ctx context.Context, sess *connection.Session, tg *Target, o Options) error {
	newPages := tg.newPages()
	if tg.Bounded {
		// Read until the budget: what it adds is at most what is left of it.
		newPages = min(newPages, tg.budget)
	}
	base := Unit{Target: tg, Table: tg.Table, Part: tg.Part, Index: tg.Index, Kind: tg.Kind, RangeNo: 1, Ranges: 1, EstPages: tg.EstPages, NewPages: newPages}
	if tg.Prefix {
		base.prefixColumn = tg.Index.Columns[0].Name
	}
	var ranges []*KeyRange
	splitOn := tg.Index
	var n int64
	if tg.EstPages > o.SplitPages {
		n = (tg.EstPages + o.SplitPages - 1) / o.SplitPages
	}
	if tg.Partial && tg.budget > 0 {
		// Ranges of at most an eighth of what is left of the budget: the last range that
		// fits then leaves little of it unused (ranges of --split-pages left up to 2,048
		// pages of it unused: a 10% budget of 811 pages loaded 168).
		piece := max(tg.budget/8, minPartialPages)
		n = max(n, (tg.EstPages+piece-1)/piece)
	}
	if n >= 2 {
		var err error
		if ranges, err = splitRanges(ctx, sess, pl.Server, tg.Table, tg.Part, splitOn, int(min(n, maxRanges))); err != nil {
			return err
		}
	}
	if len(ranges) == 0 {
		if tg.Partial {
			tg.Partial = false
			pl.Targets = removeTarget(pl.Targets, tg)
			pl.leaveOut(tg, tg.newPages(), fmt.Sprintf("over budget: needs %d new pages, %d left, and it cannot be cut into key ranges", tg.newPages(), tg.budget))
			return nil
		}
		u := base
		tg.Units = []*Unit{&u}
		return nil
	}
	col := splitColumn(splitOn).Name
	per, perNew := tg.EstPages/int64(len(ranges)), newPages/int64(len(ranges))
	for i, r := range ranges {
		u := base
		u.Range, u.RangeNo, u.Ranges, u.splitColumn = r, i+1, len(ranges), col
		u.EstPages, u.NewPages = max(per, 1), perNew
		if tg.Partial {
			if perNew > tg.budget {
				pl.leaveOut(tg, perNew*int64(len(ranges)-i), fmt.Sprintf("over budget: key ranges %d-%d of %d left out (%d pages)", i+1, len(ranges), len(ranges), perNew*int64(len(ranges)-i)))
				break
			}
			tg.budget -= perNew
		}
		tg.Units = append(tg.Units, &u)
	}
	if len(tg.Units) == 0 {
		pl.Targets = removeTarget(pl.Targets, tg)
	}
	return nil
}

func removeTarget(ts []*Target, tg *Target) []*Target {
	out := ts[:0:0]
	for _, t := range ts {
		if t != tg {
			out = append(out, t)
		}
	}
	return out
}

// verify asks the optimizer, with EXPLAIN, which index each target's first statement reads;
// a target whose statement would read another index is skipped with the reason.
func (pl *Plan) verify(ctx context.Context, sess *connection.Session) error {
	keep := pl.Targets[:0:0]
	var units []*Unit
	locked := map[*catalog.Table]string{} // one lock wait per table is enough
	for _, tg := range pl.Targets {
		if len(tg.Units) == 0 {
			continue
		}
		if reason, ok := locked[tg.Table]; ok {
			pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: tg.Table.Schema, Table: tg.Table.Name, Index: tg.Index.Name, Reason: reason})
			continue
		}
		if tg.Units[0].keyed != nil {
			// A statement the optimizer would read as a scan from the index's start
			// would read far more than its runs (verifyKeyed).
			bad, err := pl.verifyKeyed(ctx, sess, tg)
			if reason := skippable(err); reason != "" {
				locked[tg.Table] = reason
				pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: tg.Table.Schema, Table: tg.Table.Name, Index: tg.Index.Name, Reason: reason})
				continue
			}
			if err != nil {
				return fmt.Errorf("EXPLAIN for %s: %w", tg.Name(), err)
			}
			if bad != "" {
				pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: tg.Table.Schema, Table: tg.Table.Name, Index: tg.Index.Name, Reason: bad})
				continue
			}
			keep = append(keep, tg)
			units = append(units, tg.Units...)
			continue
		}
		q, args := explainStatement(pl.Server, tg.Units[0])
		key, typ, err := explain(ctx, sess, pl.Server.ExplainTabular()+q, args)
		if reason := skippable(err); reason != "" {
			locked[tg.Table] = reason
			pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: tg.Table.Schema, Table: tg.Table.Name, Index: tg.Index.Name, Reason: reason})
			continue
		}
		if err != nil {
			return fmt.Errorf("EXPLAIN for %s: %w", tg.Name(), err)
		}
		// InnoDB's full table scan reads the clustered index: MariaDB 11's cost model
		// (and MySQL's, for some tables) shows a FORCE INDEX (PRIMARY) COUNT(*) as type
		// ALL with no key, which reads the same pages.
		ok := key == tg.Index.Name || (tg.Index.Clustered && key == "" && typ == "ALL")
		if !ok {
			got := key
			if got == "" {
				got = "a full table scan (type " + typ + ")"
			}
			pl.Skipped = append(pl.Skipped, catalog.Skip{Schema: tg.Table.Schema, Table: tg.Table.Name, Index: tg.Index.Name,
				Reason: fmt.Sprintf("the optimizer would read %s instead of %s (EXPLAIN)", got, tg.Index.Name)})
			continue
		}
		keep = append(keep, tg)
		units = append(units, tg.Units...)
	}
	if len(keep) != len(pl.Targets) {
		pl.Targets = keep
		pl.EstPages, pl.NewPages = 0, 0
		for i, u := range units {
			u.ID = i + 1
			pl.EstPages += u.EstPages
			pl.NewPages += u.NewPages
		}
		pl.Units = units
	}
	return nil
}

// explain returns the key and access type a tabular EXPLAIN (the statement given with its
// EXPLAIN prefix) reports for the statement's table.
func explain(ctx context.Context, sess *connection.Session, explainStmt string, args []any) (key, typ string, err error) {
	first := true
	err = sess.Query(ctx, explainStmt, args, func(rows *sql.Rows) error {
		if !first {
			return nil
		}
		first = false
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, c := range cols {
			switch strings.ToLower(c) {
			case "key":
				key = vals[i].String
			case "type":
				typ = vals[i].String
			}
		}
		return nil
	})
	return key, typ, err
}

// defaultParallel: twice innodb_read_io_threads (4 by default, so 8 sessions), between 4
// and 16, never more than there are units. A scan reads a page the read-ahead did not bring
// with a synchronous read in its own session, so on an index whose pages are not in key
// order (built by inserts in random key order, as most live tables are) the sessions are
// the disk's queue depth: on a 2-vCPU VM, 8 sessions warmed such a table 1.25x faster than
// 4, and on a freshly bulk-loaded table (where read-ahead does the reading) as fast.
func defaultParallel(ctx context.Context, conn *connection.Conn, units int) int {
	n := 4
	var v int
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@innodb_read_io_threads").Scan(&v); err == nil && v > 0 {
		n = v
	}
	n = min(max(2*n, 4), 16)
	return max(min(n, units), 1)
}

// skippable says why a planning statement's error concerns only its table (and the target is
// skipped), or "" when the error must stop the plan.
func skippable(err error) string {
	n, _ := sqlerr.Number(err)
	switch n {
	case sqlerr.LockWaitTimeout:
		return "its table is locked (DDL or LOCK TABLES?): waited --lock-wait-timeout, skipped"
	case sqlerr.NoSuchTable:
		return "the table was dropped while planning"
	case sqlerr.KeyDoesNotExist:
		return "the index was dropped while planning"
	}
	return ""
}

// ErrNothingToWarm is returned by CheckWork when a plan would load nothing for reasons that
// leave pages cold (no room in the budget, an index the optimizer will not read, a lock, a
// privilege): a warm that exits 0 promises that pages were loaded or were already there.
var ErrNothingToWarm = errors.New("nothing to warm")

// CheckWork returns an error wrapping ErrNothingToWarm, saying why (nothingToWarm), when the
// plan has no unit to run and nothing already resident.
func (pl *Plan) CheckWork() error {
	// Indexes already resident do not make a warm whose budget left out all it would load
	// a success: scans and the native load said so alike.
	if len(pl.Units) > 0 {
		return nil
	}
	// Only an index resident counts as warm already: a table's file pages resident while
	// every index was skipped (a manifest's "(file pages)") left the warm with nothing.
	indexResident := false
	for _, t := range pl.Resident {
		indexResident = indexResident || t.Kind == KindIndex
	}
	if indexResident && len(pl.LeftOut) == 0 {
		return nil
	}
	return nothingToWarm(pl.LeftOut, pl.BudgetPages, pl.BudgetSource, pl.Skipped)
}
