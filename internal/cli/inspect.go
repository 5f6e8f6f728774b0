package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/readiness"
	"github.com/innowarm/innowarm/internal/units"
	"github.com/innowarm/innowarm/internal/warm"
)

func init() { register(newInspectCmd) }

type inspectOptions struct {
	sel      selectionFlags
	top      int
	by       string
	asJSON   bool
	zero     bool
	manifest string
	wait     string
	timeout  time.Duration
	interval time.Duration
	pageList string

	// manifestKey identifies the manifest for a readiness probe (location.Info.Identity).
	manifestKey string
}

func newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Show what the buffer pool holds now, per schema/table/partition/index, as % resident",
		Long: `inspect reads the buffer pool's page list (--page-list below) and reports, per index of each table
(and partition), the pages resident, the index's pages (counted in the tablespace files on
the database host, else from persistent statistics, shown as a range where those only
bound them), the share resident, the share in the old LRU sublist, and off-page LOB pages; then the pool
totals (size, free, data, dirty pages, hit rate since start-up).

Without a selection it lists every index of a user table with resident pages (and, with
--page-list lru-table, of the system tables); with -D/--tables it lists
every index of the selected tables, resident or not; a selection (or a --manifest) that
matches nothing on this server exits 2. It needs the PROCESS privilege.

The page list (--page-list): reading INNODB_BUFFER_PAGE_LRU ("lru-table") costs what the
pool holds: the server builds a row per resident page (about 0.3 s and a temporary table
of some 20 MB for 1 GiB of data pages). On the database host with the datadir readable and
SUPER or SYSTEM_VARIABLES_ADMIN, innowarm instead borrows the server's own dump of its LRU
list (innodb_buffer_pool_dump_now, a copy of the list, no table built), keeps the selected
tables' pages and names each one's index from the tablespace files ("dump": the server's
cost is the dump, about 0.2 µs per resident page; innowarm's grows with the selection's
resident pages). "auto" (the default) takes the dump when it can. The dump knows no dirty
pages; a page allocated since the server last wrote it to disk cannot be named from the
file and is listed as "(unknown index)"; so is every unwritten page of a table whose file
header the server has not flushed yet (MariaDB may hold it back for hours), for which
"auto" reads the LRU table instead where the pool is 1 GiB or less. Without a selection,
the dump names the user tables' pages and counts the rest (system tablespace, undo logs,
the mysql schema's tables) as other pages; --page-list lru-table lists the system tables'
indexes by name.
Tables sharing a tablespace (MySQL's general tablespaces) are read from the LRU table.`,
		Example: `  innowarm inspect -u admin -p --top 20
  innowarm inspect -D shop --tables 'shop.order*' --by table
  innowarm inspect -S /run/mysqld/mysqld.sock -D shop --json`,
	}
	cf := addConnFlags(cmd)
	o.sel.bind(cmd)
	s3 := addS3Flags(cmd)
	cmd.Flags().IntVar(&o.top, "top", 0, "show only the N rows with the most resident pages")
	cmd.Flags().StringVar(&o.by, "by", "index", "group rows by index, table or schema")
	cmd.Flags().BoolVar(&o.zero, "with-empty", false, "also list indexes with no resident page when no tables are selected")
	cmd.Flags().StringVar(&o.manifest, "manifest", "", "report how much of a manifest's pages (innowarm snapshot; a file or s3://BUCKET/PREFIX/NAME) are resident here, per index")
	cmd.Flags().StringVar(&o.wait, "wait-coverage", "", "wait until the selected tables (or --manifest's pages) are this resident, e.g. 95%: exit 0 when reached, 3 on --timeout")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 10*time.Minute, "with --wait-coverage: give up after this long (exit 3)")
	cmd.Flags().DurationVar(&o.interval, "interval", 2*time.Second, "with --wait-coverage: time between checks")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print as JSON")
	cmd.Flags().StringVar(&o.pageList, "page-list", bufferpool.PageListAuto, "how to read the page list: auto, dump (the server's own dump, on the database host) or lru-table (INNODB_BUFFER_PAGE_LRU)")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		opts, err := cf.resolve(cmd)
		if err != nil {
			return err
		}
		if o.by != "index" && o.by != "table" && o.by != "schema" {
			return usagef("--by %q: use index, table or schema", o.by)
		}
		if o.top < 0 {
			return usagef("--top must be positive")
		}
		switch o.pageList {
		case bufferpool.PageListAuto, bufferpool.SourceDump, bufferpool.SourceLRUTable:
		default:
			return usagef("--page-list %q: use auto, dump or lru-table", o.pageList)
		}
		f, err := o.sel.filter(&opts)
		if err != nil {
			return err
		}
		var mf *manifest.Manifest
		if o.manifest != "" {
			if !f.Empty() {
				return usagef("--manifest reports on the manifest's own tables: leave out -D, --tables and --all-databases")
			}
			if o.wait == "" {
				if mf, err = s3.store().Load(cmd.Context(), o.manifest); err != nil {
					return err
				}
			} else {
				// A probe reads the manifest only when it must count (manifestProbe); its
				// identity says whether the last count was of this one.
				info, err := s3.store().Stat(cmd.Context(), o.manifest)
				if err != nil {
					return err
				}
				o.manifestKey = info.Identity
			}
		}
		var want float64
		if o.wait != "" {
			if want, err = readiness.ParsePercent(o.wait); err != nil {
				return usagef("--wait-coverage: %v", err)
			}
			if o.manifest == "" && f.Empty() {
				return usagef("--wait-coverage needs a target: -D/--tables for whole tables, or --manifest FILE")
			}
			if o.interval < 100*time.Millisecond || o.timeout < 0 {
				return usagef("--interval must be at least 100ms and --timeout positive")
			}
		}
		conn, err := connection.Open(cmd.Context(), opts)
		if err != nil {
			return err
		}
		defer conn.Close()
		if want > 0 {
			return waitCoverage(cmd, conn, f, want, o, s3.store())
		}
		if mf != nil {
			return inspectManifest(cmd, conn, mf, o)
		}
		selected := !f.Empty()
		if !selected {
			f.All = true
		}
		cat, err := catalog.Load(cmd.Context(), conn, f)
		if err != nil {
			return connection.ExplainLimit(cmd.Context(), conn, err, 2, "inspect")
		}
		if err := matchesSomething(selected, cat); err != nil {
			return err
		}
		ro := bufferpool.ReadOptions{IncludeZero: selected || o.zero, OnlyCatalog: selected}
		res, err := bufferpool.ReadSelection(cmd.Context(), conn, cat, ro, o.pageList, logx.Default())
		if err != nil {
			return err
		}
		rows := bufferpool.Group(res.Indexes, o.by)
		if o.top > 0 && len(rows) > o.top {
			rows = rows[:o.top]
		}
		if o.asJSON {
			return printJSON(cmd.OutOrStdout(), map[string]any{
				"server": conn.Server.String(), "by": o.by, "rows": rows, "totals": res.Totals,
				"selected_pages": res.Selected, "other_pages": res.Other, "read_seconds": res.ReadSeconds,
				"page_list": res.PageList, "page_list_note": res.PageListNote, "unnamed_pages": res.Unnamed,
				"skipped": cat.Skipped, "notes": cat.Notes,
			})
		}
		printResidency(cmd.OutOrStdout(), rows, res, int64(conn.Server.PageSize), o.by)
		for _, n := range cat.Notes {
			fmt.Fprintf(cmd.OutOrStdout(), "note: %s\n", n)
		}
		return nil
	})
	return cmd
}

// waitCoverage blocks until the target is resident enough: the readiness gate.
func waitCoverage(cmd *cobra.Command, conn *connection.Conn, f catalog.Filter, want float64, o inspectOptions, store *location.Store) error {
	ctx := cmd.Context()
	var target readiness.Counted
	var key string
	if o.manifest != "" {
		target, key = &manifestProbe{conn: conn, path: o.manifest, store: store}, o.manifestKey
	} else {
		cat, err := catalog.Load(ctx, conn, f)
		if err != nil {
			return connection.ExplainLimit(ctx, conn, err, 2, "inspect")
		}
		if err := matchesSomething(true, cat); err != nil {
			return err
		}
		target, key = readiness.Selection{Conn: conn, Catalog: cat}, fmt.Sprintf("selection %q %v %q %q", f.Schemas, f.All, f.Tables, f.Exclude)
	}
	// Probes run again and again (a readiness probe every few seconds): the page counters
	// answer most of them without reading the page list (readiness.Bounded).
	bounded := &readiness.Bounded{Conn: conn, Target: target, Key: key, Want: want, MaxAge: time.Hour}
	res, err := readiness.Wait(ctx, bounded, want, o.timeout, o.interval, logx.Default())
	w := cmd.OutOrStdout()
	if o.asJSON {
		// One document, with the error in it when the wait failed (a timeout, exit 3).
		doc := struct {
			readiness.Result
			Error    string `json:"error,omitempty"`
			ExitCode int    `json:"exit_code,omitempty"`
		}{Result: res}
		if err != nil {
			doc.Error, doc.ExitCode = errorFields(ctx, err)
			err = &shownInJSON{err}
		}
		if jerr := printJSON(w, doc); jerr != nil {
			return jerr
		}
	} else if err == nil {
		fmt.Fprintf(w, "ready: coverage %.1f%% >= %.1f%% after %.1f s: %s\n", 100*res.Coverage, 100*want, res.Seconds, res.Detail)
	}
	return err
}

// manifestProbe is a manifest as a readiness target, read and resolved only when a probe
// must count: between counts (readiness.Bounded) a probe answers from the page counters
// and the manifest's identity (location.Info: a file's path, size and modification time,
// an object's ETag), without reading the manifest's M pages (0.3 s for a 12 GiB pool's
// manifest here).
type manifestProbe struct {
	conn   *connection.Conn
	path   string
	store  *location.Store
	target readiness.Counted
}

func (m *manifestProbe) Count(ctx context.Context) (covered, total int64, detail string, err error) {
	if m.target == nil {
		mf, err := m.store.Load(ctx, m.path)
		if err != nil {
			return 0, 0, "", err
		}
		r, err := warm.Resolve(ctx, m.conn, mf)
		if err != nil {
			return 0, 0, "", err
		}
		if err := warm.CheckResolved(mf, r); err != nil {
			return 0, 0, "", err
		}
		// On a copy that is not page-for-page the manifest's page numbers name other rows:
		// the gate counts the pages that hold its keys here, as warm --from finds them.
		measured, _, uncounted, err := warm.MeasureTarget(ctx, m.conn, r)
		if err != nil {
			return 0, 0, "", err
		}
		// Pages no number names here cannot be told resident: a gate that counted the
		// rest said ready on a server whose hot index was cold. Beyond a tenth of the
		// manifest, it refuses.
		if counted := int64(len(measured.Pages)); uncounted > 0 && 10*uncounted > counted+uncounted {
			return 0, 0, "", exitcode.UsageError(fmt.Errorf("manifest %s: %d of its %d pages cannot be counted here: their indexes are no page-for-page copies of the source's and innowarm cannot place their keys in this server's trees (not on the database host, or keys it does not compare, such as case-insensitive strings): warm --from reads them by range scans, which name no pages; gate on warm --from's exit, or on an agent that runs the warm (--warm)", r.Name, uncounted, counted+uncounted))
		}
		m.target = readiness.Manifest{Conn: m.conn, Resolved: measured}
	}
	return m.target.Count(ctx)
}

func (m *manifestProbe) PageExact() bool { return true }

// manifestRow is one index's share of a manifest's pages resident now.
func inspectManifest(cmd *cobra.Command, conn *connection.Conn, mf *manifest.Manifest, o inspectOptions) error {
	mc, err := warm.MeasureManifest(cmd.Context(), conn, mf)
	if err != nil {
		return err
	}
	rows := mc.Rows
	if o.top > 0 && len(rows) > o.top {
		rows = rows[:o.top]
	}
	w := cmd.OutOrStdout()
	r := mc.Resolved
	if o.asJSON {
		return printJSON(w, map[string]any{"manifest": r.Name, "source_server": r.Source.ServerID, "captured_at": r.Source.CapturedAt,
			"entries": r.Entries, "keyed_entries": mf.Header.KeyedEntries, "resolved": len(r.Pages), "dropped": r.Dropped,
			"counted": len(mc.Measured.Pages), "uncounted": mc.Uncounted, "unnamed_left_out": mc.Measured.UnnamedLeftOut, "index_paths": nonNil(mc.Paths), "note": mc.Note,
			"resident": mc.Resident, "coverage": mc.Coverage, "rows": rows})
	}
	t := newTable(w, table.Row{"schema", "table", "partition", "index", "manifest pages", "resident", "coverage"}, 5)
	for _, row := range rows {
		idx := warm.IndexLabel(row.Index, row.Kind)
		t.AppendRow(table.Row{row.Schema, row.Table, row.Partition, idx, row.ManifestPages, row.Resident, fmt.Sprintf("%.1f%%", 100*row.Coverage)})
	}
	t.Render()
	dropped, _ := r.DroppedByReason()
	keyed := ""
	if mf.Header.KeyedEntries > 0 {
		keyed = fmt.Sprintf(" (%d with key ranges)", mf.Header.KeyedEntries)
	}
	counted := ""
	if len(mc.Measured.Pages) != len(r.Pages) || mc.Uncounted > 0 {
		counted = fmt.Sprintf(", %d counted here (pages of this server's trees that hold its key ranges where this is no page-for-page copy)", len(mc.Measured.Pages))
	}
	if n := mc.Measured.UnnamedLeftOut; n > 0 {
		counted += fmt.Sprintf(", %d not counted: pages its source's files did not name, of tables that are not page-for-page copies here (their numbers name other pages)", n)
	}
	fmt.Fprintf(w, "manifest %s (from %s, captured %s): %d entries%s, %d resolved here, %d dropped%s; %d resident now: coverage %.1f%%\n",
		r.Name, r.Source.ServerID, r.Source.CapturedAt.Format("2006-01-02 15:04:05 MST"), r.Entries, keyed, len(r.Pages), dropped, counted, mc.Resident, 100*mc.Coverage)
	printPaths(w, mc.Paths)
	if mc.Note != "" {
		fmt.Fprintf(w, "note: %s\n", mc.Note)
	}
	return nil
}

// matchesSomething is a usage error (exit 2) when a selection (selected) names no table on
// this server: a typo or the wrong server, not an empty report.
func matchesSomething(selected bool, cat *catalog.Catalog) error {
	if selected && len(cat.Tables) == 0 && len(cat.Skipped) == 0 {
		return exitcode.BadValue("Selection", "matches no tables")
	}
	if why := cat.NoInnoDBTable(); selected && why != "" {
		return exitcode.BadValue("Selection", "%s", why)
	}
	return nil
}

// fmtCoverage prints a coverage; one computed against an upper bound of the index's pages
// is a lower bound, and says so.
func fmtCoverage(c float64, exact bool) string {
	if exact || c >= 1 {
		return fmt.Sprintf("%.1f%%", 100*c)
	}
	return fmt.Sprintf("≥%.1f%%", 100*c)
}

func pct(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

func printResidency(w io.Writer, rows []bufferpool.IndexResidency, res *bufferpool.Residency, pageSize int64, by string) {
	header := table.Row{"schema"}
	if by != "schema" {
		header = append(header, "table")
	}
	if by == "index" {
		header = append(header, "partition", "index")
	}
	header = append(header, "resident", "pages", "resident %", "old %", "LOB resident", "MiB")
	t := newTable(w, header, len(header)-5)
	for _, r := range rows {
		row := table.Row{r.Schema}
		if by != "schema" {
			row = append(row, r.Table)
		}
		if by == "index" {
			row = append(row, r.Partition, r.Index)
		}
		leaf := fmt.Sprint(r.Pages)
		if r.MinPages != r.Pages {
			leaf = fmt.Sprintf("%d-%d", r.MinPages, r.Pages)
		} else if !r.Known && r.Pages > 0 {
			leaf = "~" + leaf
		}
		if r.Pages == 0 && !r.Known {
			leaf = "-"
		}
		cov := "-"
		if r.Pages > 0 || r.Resident > 0 {
			cov = fmtCoverage(r.Coverage, r.Known)
		}
		lob := "-"
		if r.LOBResident > 0 || r.LOBPages > 0 {
			lob = fmt.Sprintf("%d of ~%d", r.LOBResident, r.LOBPages)
		}
		row = append(row, r.Resident, leaf, cov, pct(r.Old, r.Resident+r.LOBResident), lob,
			fmt.Sprintf("%.1f", float64((r.Resident+r.LOBResident)*pageSize)/(1<<20)))
		t.AppendRow(row)
	}
	t.Render()
	for _, r := range rows {
		if r.SizeNote != "" {
			part := ""
			if r.Partition != "" {
				part = " partition " + r.Partition
			}
			fmt.Fprintf(w, "size of %s.%s%s %s: %s: pages from the %s (ANALYZE TABLE refreshes the statistics)\n", r.Schema, r.Table, part, r.Index, r.SizeNote, r.SizeSource)
		}
	}
	tot := res.Totals
	fmt.Fprintf(w, "buffer pool: %s = %d pages: %d free, %d data (%d of the tables listed), %d dirty, %d old; %s\n",
		units.FormatBytes(tot.PoolBytes), tot.PagesTotal, tot.PagesFree, tot.PagesData, res.Selected, tot.PagesDirty, tot.PagesOld, tot.HitRateText())
	fmt.Fprintf(w, "read in %.2f s from %s", res.ReadSeconds, pageListName(res.PageList))
	if res.OpenedTables > 0 {
		fmt.Fprintf(w, " (opened %d tables to name their pages; no rows read)", res.OpenedTables)
	}
	fmt.Fprintln(w)
	if res.PageList == bufferpool.SourceDump && res.Other > 0 {
		fmt.Fprintf(w, "%d pages of no listed table (system tablespace, undo logs, system and other tables, file metadata) counted as other\n", res.Other)
	}
	if res.PageListNote != "" {
		fmt.Fprintf(w, "page list from INNODB_BUFFER_PAGE_LRU, not the server's dump: %s\n", res.PageListNote)
	}
	if res.Unnamed > 0 {
		fmt.Fprintf(w, "%d resident pages the files do not name (allocated since the server last wrote them, or, on MySQL with dirty pages in the pool, unused pages its read-ahead brought in): listed as %s (--page-list lru-table names the first kind; the second it lists as ALLOCATED, no index's)\n", res.Unnamed, bufferpool.UnknownIndex)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
