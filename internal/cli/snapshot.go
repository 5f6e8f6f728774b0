package cli

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/metrics"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/units"
)

func init() { register(newSnapshotCmd) }

func newSnapshotCmd() *cobra.Command {
	var (
		sel        selectionFlags
		out        string
		every      time.Duration
		keep       int
		allowEmpty bool
		asJSON     bool
		pageList   string
		metricsOut string
		metricsAt  string
		noKeys     bool
		observeArg string
	)
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Capture the hot set of a running server to a portable manifest file",
		Long: `snapshot reads the buffer pool's page list and writes a manifest: a versioned, checksummed text file that names every page's schema, table,
partition and index with its LRU position (see docs/manifest-format.md). Unlike InnoDB's own
dump file it survives a crash when taken periodically, and works on another server, whose
tablespace ids differ: 'innowarm warm --from FILE' loads the same pages there.

The file is written atomically (temporary file, fsync, rename); a failed or empty capture
never replaces a good manifest. --every keeps capturing until stopped (a sidecar), --keep
keeps that many previous manifests as FILE.1 ... FILE.N; with --json it prints one JSON
object per line (JSON Lines): one per capture, and the error, if it stops on one. Needs
the PROCESS privilege.

-o s3://BUCKET/PREFIX/NAME writes to S3 or an S3-compatible store (MinIO, Ceph, ...), with
credentials, endpoint and region from the AWS environment and shared config files or the
--s3-* flags (docs/object-storage.md): the object is uploaded to a temporary key, its
checksum verified by the store, then copied into place, so it too is only replaced whole.

With --every each manifest holds the history of the captures so far, not one look at the
LRU list: every page a capture held, with how many captures held it and a score: the
share of the captures, weighted by age (half-life: four intervals, at least a minute), in
which the page was seen touched since the previous one (read from disk, or moved towards
the head of the list; see docs/manifest-format.md). Pages a workload keeps touching outrank what a bulk load, a backup
or a report left behind, and hot pages that were evicted just before the last capture are
still there; warm --from loads and cuts to its budget by score. Between the files, --every
also takes a capture into the history (writing nothing) whenever a quarter of the pool has
been read from disk since the last one (checked once a second): a pool that turns over fast
evicts hot pages before the next interval's capture could see them.

The page list (--page-list): on the database host, with the datadir readable and SUPER or
SYSTEM_VARIABLES_ADMIN, innowarm borrows the server's own dump (innodb_buffer_pool_dump_now,
about 0.2 µs of server time per resident page, no table built) and names each page from the
tablespace file's allocation metadata ("dump"); elsewhere it reads INNODB_BUFFER_PAGE_LRU
("lru-table": the server builds a row per resident page, 2-3 µs each, in a temporary
table). "auto" (the default) takes the dump when it can and says why not when it cannot.

Key ranges: on the database host innowarm also records the key range each captured index
page holds (its first key, and the next page's), read from the index's non-leaf pages in
the tablespace file (about 1% of the index), so that the manifest can warm any copy of the
data by key: a logical replica, a rebuilt table, another flavor. Where the files are not
readable (innowarm elsewhere, a managed server) the manifest names pages by number only,
and snapshot says so in one line. --no-keys leaves them out.

A pool that is turning over (a workload starting among what a bulk load, a backup or a
report left, or a hot set larger than the old sublist) evicts much of its hot set between
any two moments, so one look misses it. --observe auto (the default) takes one look and
counts the pages read from disk meanwhile: when that rate reads a quarter of the pool
within a minute, snapshot says so and watches the pool for up to a minute, taking a look
into a history (as --every does) whenever a quarter of the pool has been read, and writes
one manifest scored over them; the watch ends early once two looks in a row found almost
nothing new (fewer pages than 1% of the pool) or nothing is read for 5 s. A settled pool costs nothing more. --observe 0 always takes
one look; --observe DURATION always watches that long.`,
		Example: `  innowarm snapshot -u admin -p -o /var/lib/innowarm/hot.manifest
  innowarm snapshot -o hot.manifest.gz --every 5m --keep 3     # sidecar
  innowarm snapshot -o s3://manifests/prod/db1/hot.manifest.gz --every 5m --s3-endpoint https://minio:9000
  innowarm snapshot -D shop -o - | gzip > shop.manifest.gz`,
	}
	cf := addConnFlags(cmd)
	sel.bind(cmd)
	s3 := addS3Flags(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "manifest file or object to write: PATH, s3://BUCKET/PREFIX/NAME, or - for stdout (.gz compresses)")
	cmd.Flags().DurationVar(&every, "every", 0, "capture again every interval until stopped (e.g. 5m)")
	cmd.Flags().IntVar(&keep, "keep", 0, "previous manifests to keep as FILE.1 ... FILE.N")
	cmd.Flags().BoolVar(&allowEmpty, "allow-empty", false, "let a capture with no pages replace an existing manifest")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the capture summary as JSON (with --every: one compact object per capture and line, JSON Lines, the final error too)")
	cmd.Flags().StringVar(&pageList, "page-list", snapshot.PageListAuto, "how to read the page list: auto, dump (the server's own dump, on the database host) or lru-table (INNODB_BUFFER_PAGE_LRU)")
	cmd.Flags().BoolVar(&noKeys, "no-keys", false, "leave out each page's key range (read from the tablespace files, on the database host): the manifest then warms only a page-for-page copy")
	cmd.Flags().StringVar(&observeArg, "observe", "auto", "watch a pool that is turning over before writing: auto (up to 1m when the pool turns over during the capture), 0 (one look) or a duration (always)")
	cmd.Flags().StringVar(&metricsOut, "metrics-file", "", "with --every: write Prometheus text-format metrics (the manifest's age and size) to this file after every capture")
	cmd.Flags().StringVar(&metricsAt, "metrics-listen", "", "with --every: serve Prometheus metrics on this address, e.g. :9105 (path /metrics)")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		opts, err := cf.resolve(cmd)
		if err != nil {
			return err
		}
		if out == "" {
			return usagef("say where to write the manifest: -o FILE (or -o - for stdout)")
		}
		if every < 0 || (every > 0 && every < time.Second) {
			return usagef("--every must be at least 1s")
		}
		if keep < 0 || keep > 1000 {
			return usagef("--keep must be between 0 and 1000")
		}
		observeFor, observeAuto, err := parseObserve(observeArg)
		if err != nil {
			return err
		}
		if every > 0 && cmd.Flags().Changed("observe") {
			return usagef("--observe goes without --every: --every keeps a history of its own")
		}
		if every > 0 && out == manifest.StdioName {
			return usagef("--every needs a file: -o FILE")
		}
		if out == manifest.StdioName && asJSON {
			return usagef("-o - writes the manifest to stdout; --json would mix with it")
		}
		if err := s3.store().CheckWritable(cmd.Context(), out, keep); err != nil {
			return err
		}
		filter, err := sel.filter(&opts)
		if err != nil {
			return err
		}
		conn, err := connection.Open(cmd.Context(), opts)
		if err != nil {
			return err
		}
		defer conn.Close()
		so := snapshot.Options{Path: out, Keep: keep, AllowEmpty: allowEmpty, Filter: filter, ToolVersion: version, PageList: pageList, NoKeys: noKeys, Log: logx.Default(), Store: s3.store()}
		if err := so.Validate(); err != nil {
			return usagef("%v", err)
		}
		if !filter.Empty() {
			// A selection that names nothing here is a typo or the wrong server: say so
			// rather than write (or keep) a manifest of nothing. The capture is given the
			// load again (a cache): on a server of many tables a load takes seconds.
			so.Catalogs = &catalog.Cache{}
			cat, err := snapshot.LoadCatalog(cmd.Context(), conn, so)
			if err != nil {
				return err
			}
			if err := matchesSomething(true, cat); err != nil {
				return err
			}
		}
		// The summary goes to stderr when the manifest itself goes to stdout.
		w := cmd.OutOrStdout()
		if out == manifest.StdioName {
			w = cmd.ErrOrStderr()
		}
		report := func(r *snapshot.Result) {
			switch {
			case asJSON && every > 0:
				// A stream of captures: one object per line, which a script reads line by
				// line (as follow --json); objects printed indented back to back are not.
				_ = printJSONLine(w, r)
				return
			case asJSON:
				_ = printJSON(w, r)
				return
			}
			printSnapshot(w, r)
		}
		if every > 0 {
			exp, err := metrics.New(metricsAt, metricsOut)
			if err != nil {
				return usagef("%v", err)
			}
			defer exp.Close()
			sm := newSnapshotMetrics(exp.Registry)
			so.OnFailure = func(err error, n int) {
				sm.failed(err, n)
				if err := exp.Flush(); err != nil {
					logx.Warnf("%v", err)
				}
			}
			logx.Infof("capturing every %s to %s until stopped (keeping %d previous)", every, out, keep)
			err = snapshot.Every(cmd.Context(), conn, so, every, func(r *snapshot.Result) {
				report(r)
				sm.observe(r)
				if err := exp.Flush(); err != nil {
					logx.Warnf("%v", err)
				}
			}, logx.Default())
			return serviceEnd(cmd.Context(), err)
		}
		if metricsOut != "" || metricsAt != "" {
			return usagef("--metrics-file and --metrics-listen go with --every")
		}
		res, err := snapshot.CaptureObserving(cmd.Context(), conn, so, observeFor, observeAuto)
		if errors.Is(err, manifest.ErrEmpty) {
			return fmt.Errorf("the pool holds no pages of the selected tables; kept the existing %s (use --allow-empty to replace it)", out)
		}
		if err != nil {
			return err
		}
		report(res)
		return nil
	})
	return cmd
}

func printSnapshot(w io.Writer, r *snapshot.Result) {
	size := ""
	if r.Bytes > 0 {
		size = ", " + units.FormatBytes(r.Bytes)
	}
	dest := r.Path
	if dest == manifest.StdioName {
		dest = "stdout"
	}
	fmt.Fprintf(w, "snapshot: %d pages of %d objects (pool %d pages, %d not attributable) in %.2f s (page list read in %.2f s from %s) → %s%s\n",
		r.Entries, r.Objects, r.PoolPages, r.Unattributed, r.Seconds, r.ReadSeconds, pageListName(r.PageList), dest, size)
	if r.PageListNote != "" {
		fmt.Fprintf(w, "page list from INNODB_BUFFER_PAGE_LRU, not the server's dump: %s\n", r.PageListNote)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if k := r.Keys; k.Pages > 0 && k.Note == "" {
		extra := ""
		if k.ReadAlone > 0 {
			extra += fmt.Sprintf("; %d pages no parent on disk points to yet (split since) read alone, %d of them with a range", k.ReadAlone, k.KeyedAlone)
		}
		if k.Unplaced > 0 {
			extra += fmt.Sprintf("; %d pages the list names by tablespace only (allocated since the file's descriptors were written) carry none", k.Unplaced)
		}
		if k.NoPortableKey > 0 {
			extra += fmt.Sprintf("; %d of tables without a primary key (hidden row id: no portable key)", k.NoPortableKey)
		}
		fmt.Fprintf(w, "key ranges: %d of %d index pages (%d indexes, %d non-leaf pages read, %.2f s)%s\n",
			k.Keyed, k.Pages, k.Indexes, k.TreePages, k.Seconds, extra)
	}
	if ob := r.Observed; ob != nil {
		fmt.Fprintf(w, "watched the pool for %.1f s (%s; %s): %d captures, %d pages read from disk meanwhile\n", ob.Seconds, ob.Why, ob.Ended, ob.Captures, ob.PagesRead)
	}
	if r.Header.Captures > 1 && r.Observed == nil {
		churn := ""
		if r.ChurnCaptures > 0 {
			churn = fmt.Sprintf(", %d of them since the last file because a quarter of the pool was read from disk", r.ChurnCaptures)
		}
		fmt.Fprintf(w, "history of %d captures%s: pages scored over them, in the pool now or within the last few captures\n", r.Header.Captures, churn)
	}
	fmt.Fprintf(w, "server %s, captured %s, sha256 %s\n", r.Header.ServerID, r.CapturedAt.Format(time.RFC3339), short(r.Header.SHA256))
}

// parseObserve reads --observe: auto, 0 (or off) or a duration of at least 1s.
func parseObserve(v string) (time.Duration, bool, error) {
	switch v {
	case "auto":
		return snapshot.ObserveAuto, true, nil
	case "0", "off":
		return 0, false, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, false, usagef("--observe %q: want auto, 0 or a duration of at least 1s (e.g. 30s)", v)
	}
	return d, false, nil
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

func pageListName(source string) string {
	if source == bufferpool.SourceDump {
		return "the server's dump"
	}
	return "INNODB_BUFFER_PAGE_LRU"
}

// snapshotMetrics are snapshot --every's Prometheus metrics: an alert on the age catches a
// sidecar whose captures keep failing (the age grows) as well as one that stopped.
type snapshotMetrics struct {
	pages, bytes, seconds prometheus.Gauge
	captures, failures    prometheus.Counter
	last                  atomic.Int64 // unix nanoseconds of the last capture
	started               time.Time
}

func newSnapshotMetrics(reg prometheus.Registerer) *snapshotMetrics {
	m := &snapshotMetrics{
		pages:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_snapshot_pages", Help: "Pages in the last manifest written."}),
		bytes:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_snapshot_bytes", Help: "Size of the last manifest written, in bytes."}),
		seconds:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "innowarm_snapshot_capture_seconds", Help: "Time the last capture took."}),
		captures: prometheus.NewCounter(prometheus.CounterOpts{Name: "innowarm_snapshot_captures_total", Help: "Manifests written."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "innowarm_snapshot_failures_total", Help: "Captures that failed to replace the manifest (the previous one kept)."}),
		started:  time.Now(),
	}
	// Before the first manifest the age is the time since the sidecar started: a sidecar
	// whose every capture fails (a bucket that does not exist, wrong credentials) then
	// grows old like one whose captures stopped, where an age of 0 looked freshest.
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "innowarm_snapshot_age_seconds", Help: "Age of the manifest this process last wrote (time since its capture); before its first, the time since it started."}, func() float64 {
		if n := m.last.Load(); n != 0 {
			return time.Since(time.Unix(0, n)).Seconds()
		}
		return time.Since(m.started).Seconds()
	})
	reg.MustRegister(m.pages, m.bytes, m.seconds, m.captures, m.failures, age)
	return m
}

func (m *snapshotMetrics) failed(error, int) { m.failures.Inc() }

func (m *snapshotMetrics) observe(r *snapshot.Result) {
	m.pages.Set(float64(r.Entries))
	m.bytes.Set(float64(r.Bytes))
	m.seconds.Set(r.Seconds)
	m.captures.Inc()
	m.last.Store(r.CapturedAt.UnixNano())
}
