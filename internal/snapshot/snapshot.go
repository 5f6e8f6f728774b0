// Package snapshot captures a running server's hot set, the pages in its buffer pool in LRU
// order, to a portable manifest (internal/manifest) that names every page's schema, table,
// partition and index, so that another server can load the same pages.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/dumpfile"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// Options shape a capture.
type Options struct {
	// Path is where the manifest goes: a file, "-" for stdout, or an object
	// (s3://BUCKET/PREFIX/NAME) reached through Store.
	Path string
	// OnFailure, for Every, is told of each capture that failed to replace the manifest
	// (how many in a row): a sidecar's failures must show where it is watched, not only in
	// its log.
	OnFailure func(err error, inARow int)
	// replace, when set (Every), decides whether a capture may replace the manifest there.
	replace     func(manifest.Header) error
	Keep        int  // previous manifests kept as PATH.1 ... PATH.N
	AllowEmpty  bool // let an empty capture replace a manifest
	Filter      catalog.Filter
	ToolVersion string
	// PageList chooses how the page list is read: PageListAuto (the server's own dump when
	// innowarm runs on the database host with the rights to borrow it, else the LRU table),
	// bufferpool.SourceDump or bufferpool.SourceLRUTable.
	PageList string
	// History, when set, takes in each capture, and the manifest holds every page it
	// remembers, scored over the captures (format version 2's history fields): Every uses
	// one. Without it a manifest is this capture's LRU list alone.
	History *History
	// Catalogs, when set, gives repeated captures the catalog of the last one while the
	// server's dictionary has not changed (Every and CaptureObserving set one).
	Catalogs *catalog.Cache
	// ObserveOnly feeds the capture to History and writes nothing.
	ObserveOnly bool
	// NoKeys leaves out the pages' key ranges (format version 3), which need the
	// tablespace files: the manifest then names pages by number only.
	NoKeys bool
	Log    *logx.Logger
	// Store writes the manifest; nil: local files, and object storage configured by the
	// environment alone.
	Store *location.Store
}

// PageListAuto picks the cheapest page list the server allows.
const PageListAuto = "auto"

// Validate checks the options' values.
func (o Options) Validate() error {
	switch o.PageList {
	case "", PageListAuto, bufferpool.SourceDump, bufferpool.SourceLRUTable:
	default:
		return fmt.Errorf("page list %q: want %s, %s or %s", o.PageList, PageListAuto, bufferpool.SourceDump, bufferpool.SourceLRUTable)
	}
	if o.Keep < 0 {
		return fmt.Errorf("manifests kept: %d, want 0 or more", o.Keep)
	}
	return nil
}

// Result describes one capture.
type Result struct {
	Path        string  `json:"path"`
	Entries     int64   `json:"entries"`
	Objects     int64   `json:"objects"`
	Bytes       int64   `json:"bytes,omitempty"`
	Seconds     float64 `json:"seconds"`
	ReadSeconds float64 `json:"read_seconds"` // of which reading the page list
	// PageList is where the page list came from (bufferpool.SourceDump or SourceLRUTable),
	// PageListNote why the dump was not used when it was not.
	PageList     string `json:"page_list"`
	PageListNote string `json:"page_list_note,omitempty"`
	Unnamed      int64  `json:"unnamed_pages,omitempty"`
	PoolPages    int64  `json:"pool_pages"`
	Unattributed int64  `json:"unattributed_pages"`
	// Notes say what of the selection a manifest cannot carry (tables in the system
	// tablespace).
	Notes      []string        `json:"notes,omitempty"`
	Header     manifest.Header `json:"header"`
	CapturedAt time.Time       `json:"captured_at"`
	// ObservedOnly: the capture went into the history only (Options.ObserveOnly).
	ObservedOnly bool `json:"observed_only,omitempty"`
	// ChurnCaptures counts the captures Every took into the history between this manifest
	// and the previous one because the pool was turning over (see Every).
	ChurnCaptures int `json:"churn_captures,omitempty"`
	// Keys says what the capture learned of its pages' key ranges.
	Keys KeyStats `json:"keys"`
	// Observed says how the pool was watched before this manifest was written
	// (CaptureObserving), nil for one look.
	Observed *ObserveStats `json:"observed,omitempty"`
}

// LoadCatalog loads the catalog of the options' selection (all databases when empty) as
// Capture does, through o.Catalogs: a caller that looks at the selection first and gives
// Capture the same cache reads it once.
func LoadCatalog(ctx context.Context, conn *connection.Conn, o Options) (*catalog.Catalog, error) {
	f := o.Filter
	if f.Empty() {
		f.All = true
	}
	// The key capture's stored columns are read beside the load where that is cheaper; a
	// manifest uses no size.
	cat, err := o.Catalogs.LoadReading(ctx, conn, f, catalog.Reads{StoredColumns: !o.NoKeys, NoSizes: true})
	return cat, explainRefused(ctx, conn, err)
}

// captureSessions is how many connections a capture needs at once: the catalog's load
// reads the dictionary beside its own session, and the server's dump is borrowed under a
// lock one connection holds while another has the server write it. Every read beyond them
// (the key dictionary's) waits for one of theirs to end where the server refuses more.
const captureSessions = 2

// explainRefused says in one line why a capture failed when the server refused it a
// connection for a limit on connections (connection.ExplainLimit).
func explainRefused(ctx context.Context, conn *connection.Conn, err error) error {
	return connection.ExplainLimit(ctx, conn, err, captureSessions, "a capture")
}

// Capture writes one manifest of the pool's current content.
func Capture(ctx context.Context, conn *connection.Conn, o Options) (*Result, error) {
	t0 := time.Now()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = logx.New(os.Stderr, true)
	}
	cat, err := LoadCatalog(ctx, conn, o)
	if err != nil {
		return nil, err
	}
	totals, err := bufferpool.ReadTotals(ctx, conn)
	if err != nil {
		return nil, err
	}
	h := manifest.HeaderFor(conn.Server, t0.UTC(), o.ToolVersion)
	if totals.PagesTotal > 0 {
		h.PoolPages = totals.PagesTotal
	}
	if totals.PoolBytes > 0 {
		h.PoolBytes = totals.PoolBytes // the pool now, not when the sidecar connected
	}
	filtered := !o.Filter.Empty()
	chosen := map[string]bool{}
	for _, t := range cat.Tables {
		chosen[t.Schema+"\x00"+t.Name] = true
	}
	var st bufferpool.LRUStats
	stream, note, err := choosePageList(ctx, conn, o)
	if err != nil {
		return nil, err
	}
	keep := func(p bufferpool.LRUPage) bool { return !filtered || chosen[p.Schema+"\x00"+p.Table] }
	var produce func(w *manifest.Writer) error
	var ks KeyStats
	if o.NoKeys && o.History == nil {
		// Nothing is done for all pages at once: each goes to the file as the list gives it.
		produce = func(w *manifest.Writer) error {
			var err error
			st, err = stream(ctx, conn, cat, func(p bufferpool.LRUPage) error {
				if !keep(p) {
					return nil
				}
				return w.Page(manifest.Object{SpaceID: p.Space, PageType: p.PageType, Schema: p.Schema, Table: p.Table, Partition: p.Partition, Index: p.Index}, p.Page, p.LRU, p.Old)
			})
			w.SetCaptureDuration(time.Since(t0))
			return err
		}
	} else {
		var res *Result
		if produce, ks, res, err = collect(ctx, conn, cat, o, &h, keep, stream, &st, log, t0); err != nil || res != nil {
			if res != nil {
				res.PageListNote, res.Notes = *note, systemSpaceNotes(cat)
			}
			return res, err
		}
	}
	store := o.Store
	if store == nil {
		store = &location.Store{}
	}
	written, err := store.Write(ctx, o.Path, h, manifest.WriteOptions{Keep: o.Keep, AllowEmpty: o.AllowEmpty, Replace: o.replace}, produce)
	if err != nil {
		return nil, err
	}
	hdr := written.Header
	return &Result{Path: o.Path, Entries: hdr.Entries, Objects: hdr.Objects, Bytes: written.Bytes, Seconds: time.Since(t0).Seconds(), ReadSeconds: st.Seconds,
		PoolPages: h.PoolPages, Unattributed: st.Unattributed, Header: hdr, CapturedAt: h.CapturedAt,
		PageList: st.Source, PageListNote: *note, Unnamed: st.Unnamed, Keys: ks, Notes: systemSpaceNotes(cat)}, nil
}

// systemSpaceNotes says which selected tables no manifest carries: those in the system
// tablespace, whose pages the server's list names by a tablespace that is no table's (its
// page numbers name InnoDB's own pages on any other server).
func systemSpaceNotes(cat *catalog.Catalog) []string {
	var names []string
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown && p.Space == 0 {
				names = append(names, t.Schema+"."+t.Name)
				break
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("and %d more", len(names)-3))
	}
	return []string{"not captured: " + strings.Join(names, ", ") + ", in the system tablespace (created while innodb_file_per_table was off); a manifest names pages by a table's own tablespace: warm them with warm --tables (scans)"}
}

type pageStream func(context.Context, *connection.Conn, *catalog.Catalog, func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error)

// choosePageList returns the page list reader the options ask for, and where auto reads
// the LRU table instead of the dump, why (set once the reader has run: the dump may turn
// out unable to name some pages, MySQL's partitions, which the table names).
func choosePageList(ctx context.Context, conn *connection.Conn, o Options) (pageStream, *string, error) {
	log := o.Log
	if log == nil {
		log = logx.New(os.Stderr, true)
	}
	note := new(string)
	fromDump := func(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, each func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error) {
		if shared := bufferpool.SharedSpaces(cat); len(shared) > 0 {
			// The dump names a page by tablespace and number, the files its index by id
			// only: in a tablespace several tables share, the server's own names say whose.
			return bufferpool.LRUStats{}, fmt.Errorf("%w: tables share a tablespace (%s)", bufferpool.ErrFilesUnreadable, strings.Join(shared, "; "))
		}
		return bufferpool.StreamDump(ctx, conn, cat, log, each)
	}
	switch o.PageList {
	case bufferpool.SourceLRUTable:
		return bufferpool.StreamLRU, note, nil
	case bufferpool.SourceDump:
		if a := dumpfile.Check(ctx, conn); !a.OK {
			return nil, note, fmt.Errorf("the server's dump cannot be used: %s", a.Reason)
		}
		return func(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, each func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error) {
			st, err := fromDump(ctx, conn, cat, each)
			if errors.Is(err, bufferpool.ErrFilesUnreadable) {
				err = fmt.Errorf("the server's dump cannot name every page: %w (--page-list lru-table can)", err)
			}
			return st, err
		}, note, nil
	}
	if a := dumpfile.Check(ctx, conn); !a.OK {
		*note = a.Reason
		return bufferpool.StreamLRU, note, nil
	}
	if dumpfile.Busy(ctx, conn) {
		// A native load holds the file, for minutes when it is paced under traffic (follow
		// on a promoted standby): waiting for it would fail this capture after 30 s.
		*note = "another innowarm holds the server's dump file (a native load)"
		return bufferpool.StreamLRU, note, nil
	}
	return func(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, each func(bufferpool.LRUPage) error) (bufferpool.LRUStats, error) {
		st, err := fromDump(ctx, conn, cat, each)
		if errors.Is(err, bufferpool.ErrFilesUnreadable) {
			// StreamDump gave no page yet.
			*note = err.Error()
			return bufferpool.StreamLRU(ctx, conn, cat, each)
		}
		return st, err
	}, note, nil
}

// ChurnShare is the share of the pool read from disk after which Every takes an extra
// capture into its history before the interval is up.
const ChurnShare = 0.25

// Every captures every interval until ctx is cancelled: a sidecar that keeps a recent
// manifest on disk, so that a crash does not lose the hot set. A failed capture is logged and
// leaves the previous manifest in place; the next tick tries again. It returns nil when
// stopped by ctx (that is how it is meant to end) and each capture's result to report.
//
// Each manifest holds the history of the captures so far (History). A page that is read
// and evicted between two captures is in none of them, which is what happens to much of
// the hot set while a pool is far from settled (a workload starting among a bulk load's
// leftovers: on the make bench polluted scenario, captures 2 s apart named 89% of it). So
// between the interval's captures Every also looks at the server's pages-read counter once
// a second and takes a capture into the history, without writing the file, whenever a
// quarter of the pool (ChurnShare) has been read from disk since the last one: captures
// follow the pool's turnover, and a settled pool costs one counter read a second.
func Every(ctx context.Context, conn *connection.Conn, o Options, interval time.Duration, report func(*Result), log *logx.Logger) error {
	if o.Path == manifest.StdioName {
		return exitcode.BadValue("Path", "%s (stdout): repeated captures need a file", o.Path)
	}
	if o.History == nil {
		o.History = NewHistory(HalfLifeFor(interval))
	}
	if o.Catalogs == nil {
		o.Catalogs = &catalog.Cache{}
	}
	failures, churnCaptures := 0, 0
	captured := false // a capture written: later failures may pass (privileges, load)
	var lastWrite time.Time
	guard := &restartGuard{baseline: -1}
	if o.Store != nil || !location.IsRemote(o.Path) {
		store := o.Store
		if store == nil {
			store = &location.Store{}
		}
		if m, err := store.Load(ctx, o.Path); err == nil {
			guard.prev = m.Header
		}
	}
	o.replace = func(h manifest.Header) error { return guard.check(ctx, conn, h) }
	var readAtCapture int64 = -1
	for {
		now := time.Now()
		read, poolPages, readErr := readAndPoolPages(ctx, conn)
		var res *Result
		var err error
		if readErr != nil {
			read = -1
		}
		switch captureDue(now, lastWrite, interval, read, readAtCapture, poolPages) {
		case captureFile:
			lastWrite = now
			res, err = Capture(ctx, conn, o)
			if err == nil {
				res.ChurnCaptures, churnCaptures = churnCaptures, 0
				// Files not readable here stay so: say it once, not every interval.
				o.NoKeys = o.NoKeys || res.Keys.Note != ""
			}
		case captureHistory:
			oo := o
			oo.ObserveOnly = true
			if res, err = Capture(ctx, conn, oo); err == nil {
				churnCaptures++
			}
		}
		if read >= 0 && (res != nil || err != nil) {
			readAtCapture = read
		}
		switch {
		case ctx.Err() != nil:
			return nil //nolint:nilerr // stopped by ctx is how the sidecar ends
		case res == nil && err == nil:
			// nothing was due
		case sqlerr.ConnectionLost(err):
			// A server that went away (or restarted) ends the sidecar with the reason: its
			// supervisor restarts it, rather than a warning every interval nobody reads.
			return fmt.Errorf("snapshot --every: %w", err)
		case errors.Is(err, manifest.ErrEmpty):
			log.Warnf("capture found no pages; kept the previous manifest %s", o.Path)
		case errors.Is(err, errPoolFilling):
			log.Infof("%v", err)
		case err != nil && exitcode.Of(err) == exitcode.Usage && !captured:
			// The first capture refused for the account or the input (a connection limit of
			// one, a missing privilege): no later tick does better, and a sidecar that logs
			// a warning each interval and never writes a file looks alive to its supervisor.
			return fmt.Errorf("snapshot --every: %w", err)
		case err != nil:
			failures++
			log.Warnf("capture failed (%d in a row), previous manifest kept: %v", failures, err)
			if o.OnFailure != nil {
				o.OnFailure(err, failures)
			}
		case res.ObservedOnly:
			failures = 0
		default:
			failures, captured = 0, true
			guard.prev = res.Header
			report(res)
		}
		wait := min(time.Second, time.Until(lastWrite.Add(interval)))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(max(wait, 10*time.Millisecond)):
		}
	}
}

// errPoolFilling: a capture of a server restarted since the manifest on disk was taken,
// whose pool is still filling, is not written over it.
var errPoolFilling = errors.New("pool still filling since a restart")

// restartGuard keeps a sidecar restarted with its server (a pod, a host reboot) from
// replacing the hot set on disk with its captures of a pool that is still filling: a
// capture with fewer than half the pages of the manifest it would replace is not written
// while the server has started since that manifest was taken and, since the first capture
// held back, has read fewer pages from disk than the manifest names (its workload has not
// yet had the chance to read them). The count starts at the sidecar's first held-back
// capture, not at the server's start: a server reads pages of its own as it starts (MySQL's
// dictionary, a few thousand), which say nothing of the workload.
type restartGuard struct {
	prev     manifest.Header
	baseline int64 // Innodb_pages_read at the first capture held back; -1 before
}

func (g *restartGuard) check(ctx context.Context, conn *connection.Conn, h manifest.Header) error {
	if g.prev.Entries == 0 || g.prev.CapturedAt.IsZero() || 2*h.Entries >= g.prev.Entries {
		return nil
	}
	st, err := conn.GlobalStatus(ctx, "Uptime", "Innodb_pages_read")
	if err != nil {
		return nil //nolint:nilerr // without the counters nothing says the pool is filling: written, as before
	}
	started := time.Now().Add(-time.Duration(st["uptime"]) * time.Second)
	if !started.After(g.prev.CapturedAt) {
		return nil
	}
	read := st["innodb_pages_read"]
	if g.baseline < 0 || read < g.baseline {
		g.baseline = read
	}
	if read-g.baseline >= g.prev.Entries {
		return nil
	}
	return fmt.Errorf("%w: the server started %s after the manifest there was captured (%d pages) and has read %d pages since this sidecar held back its first capture: this capture's %d pages are not written over it",
		errPoolFilling, started.Sub(g.prev.CapturedAt).Round(time.Second), g.prev.Entries, read-g.baseline, h.Entries)
}

type captureKind int

const (
	captureNone    captureKind = iota
	captureFile                // the interval is up: capture and write the manifest
	captureHistory             // the pool turned over: capture into the history only
)

// captureDue says what Every does now: read is the pages-read counter (-1 when it could
// not be read), readAtCapture its value at the last capture (-1 before the first).
func captureDue(now, lastWrite time.Time, interval time.Duration, read, readAtCapture, poolPages int64) captureKind {
	switch {
	case lastWrite.IsZero() || now.Sub(lastWrite) >= interval:
		return captureFile
	case read >= 0 && readAtCapture >= 0 && float64(read-readAtCapture) >= ChurnShare*float64(max(poolPages, 1)):
		return captureHistory
	}
	return captureNone
}

// readAndPoolPages reads the server's count of pages read from disk since start-up and the
// pool's size in pages now: a sidecar runs for the server's life, and the pool can be resized
// under it (by an admin, or on MariaDB 10.11.12+ by the server under memory pressure), so
// the size found at connect time would set the churn threshold of another pool.
func readAndPoolPages(ctx context.Context, conn *connection.Conn) (read, poolPages int64, err error) {
	st, err := conn.GlobalStatus(ctx, "Innodb_pages_read", "Innodb_buffer_pool_pages_total")
	if err != nil {
		return 0, conn.Server.PoolSize / int64(max(conn.Server.PageSize, 1)), err
	}
	return st["innodb_pages_read"], st["innodb_buffer_pool_pages_total"], nil
}

// collect reads the whole page list, the pages' key ranges and, with a history, scores
// them, and returns what writes the manifest; with Options.ObserveOnly, the result.
func collect(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, o Options, h *manifest.Header, keep func(bufferpool.LRUPage) bool,
	stream pageStream, stp *bufferpool.LRUStats, log *logx.Logger, t0 time.Time) (func(w *manifest.Writer) error, KeyStats, *Result, error) {
	var err error
	// The list is read whole before the file is written: the pages' key ranges are read
	// for all of them at once, and a history scores them.
	objs := newObjectTable()
	if o.History != nil {
		objs = o.History.objects
	}
	// The page list and the dictionary's reads for the keys run at once, and one after
	// another where the server refuses more connections (an account's
	// MAX_USER_CONNECTIONS 2): each waits for one of the others' to end.
	share := &connection.Share{}
	kc := &keyCapture{conn: conn, cat: cat, history: o.History != nil, catalogs: o.Catalogs, share: share}
	if !o.NoKeys {
		// The dictionary's queries run while the page list is read.
		prepCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		kc.prepare(prepCtx)
	}
	// The pool's size bounds the list: one allocation instead of a slice growing by copies.
	pages := make([]observed, 0, min(max(h.PoolPages, 0), 1<<26))
	err = share.Run(ctx, func() error {
		// A list refused its connection gave no page yet; read again, it starts over.
		pages = pages[:0]
		var err error
		*stp, err = stream(ctx, conn, cat, func(p bufferpool.LRUPage) error {
			if keep(p) {
				pages = append(pages, observed{object: objs.id(p), page: p.Page, lru: p.LRU, old: p.Old, next: noPage})
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, KeyStats{}, nil, explainRefused(ctx, conn, err)
	}
	st := *stp
	var ks KeyStats
	if !o.NoKeys {
		ks = kc.capture(ctx, objs, pages)
		if ks.Note != "" {
			log.Warnf("%s", RemoteKeysNote(ks.Note))
		}
		for _, s := range ks.Skipped {
			log.Infof("keys not captured: %s", s)
		}
	}
	h.FormatVersion = manifest.VersionFor(objs.all())
	var produce func(w *manifest.Writer) error
	if hist := o.History; hist != nil {
		hist.observe(t0, pages, &kc.txt)
		if o.ObserveOnly {
			return nil, ks, &Result{Path: o.Path, Entries: int64(len(pages)), Seconds: time.Since(t0).Seconds(), ReadSeconds: st.Seconds,
				PoolPages: h.PoolPages, Unattributed: st.Unattributed, CapturedAt: h.CapturedAt,
				PageList: st.Source, Unnamed: st.Unnamed, ObservedOnly: true, Keys: ks}, nil
		}
		h.Captures = min(hist.Captures(), math.MaxUint16)
		produce = func(w *manifest.Writer) error {
			w.SetCaptureDuration(time.Since(t0))
			return hist.write(ctx, w)
		}
	} else {
		produce = func(w *manifest.Writer) error {
			// The pages go to the file in their order, each with its range: no copy of the
			// list to write from.
			w.SetCaptureDuration(time.Since(t0))
			ew := newEntryWriter(w, objs)
			for i, p := range pages {
				if i%interruptCheckEntries == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				e := manifest.Entry{Object: p.object, Page: p.page, LRU: p.lru, Old: p.old, Seen: 1}
				r, next := manifest.Range{}, noPage
				if p.kt.flags&ktRange != 0 {
					r, next = kc.txt.rangeOf(p.kt), p.next
				}
				if err := ew.write(e, r, next); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return produce, ks, nil, nil
}
