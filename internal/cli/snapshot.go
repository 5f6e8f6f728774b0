package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
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
	)
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Capture the hot set of a running server to a portable manifest file",
		Long: `snapshot reads the buffer pool's page list (INNODB_BUFFER_PAGE_LRU, data pages only) and
writes a manifest: a versioned, checksummed text file that names every page's schema, table,
partition and index with its LRU position (see docs/manifest-format.md). Unlike InnoDB's own
dump file it survives a crash when taken periodically, and works on another server, whose
tablespace ids differ: 'innowarm warm --from FILE' loads the same pages there.

The file is written atomically (temporary file, fsync, rename); a failed or empty capture
never replaces a good manifest. --every keeps capturing until stopped (a sidecar), --keep
keeps that many previous manifests as FILE.1 ... FILE.N. Needs the PROCESS privilege.`,
		Example: `  innowarm snapshot -u admin -p -o /var/lib/innowarm/hot.manifest
  innowarm snapshot -o hot.manifest.gz --every 5m --keep 3     # sidecar
  innowarm snapshot -D shop -o - | gzip > shop.manifest.gz`,
	}
	cf := addConnFlags(cmd)
	sel.bind(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "manifest file to write (- for stdout; .gz compresses)")
	cmd.Flags().DurationVar(&every, "every", 0, "capture again every interval until stopped (e.g. 5m)")
	cmd.Flags().IntVar(&keep, "keep", 0, "previous manifests to keep as FILE.1 ... FILE.N")
	cmd.Flags().BoolVar(&allowEmpty, "allow-empty", false, "let a capture with no pages replace an existing manifest")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the capture summary as JSON")
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
		if every > 0 && out == manifest.StdioName {
			return usagef("--every needs a file: -o FILE")
		}
		if out == manifest.StdioName && asJSON {
			return usagef("-o - writes the manifest to stdout; --json would mix with it")
		}
		if out != manifest.StdioName {
			dir := filepath.Dir(out)
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usagef("cannot write the manifest %s: directory %s does not exist", out, dir)
			}
			if err := unix.Access(dir, unix.W_OK); err != nil {
				return usagef("cannot write the manifest %s: directory %s is not writable", out, dir)
			}
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
		so := snapshot.Options{Path: out, Keep: keep, AllowEmpty: allowEmpty, Filter: filter, ToolVersion: version}
		// The summary goes to stderr when the manifest itself goes to stdout.
		w := cmd.OutOrStdout()
		if out == manifest.StdioName {
			w = cmd.ErrOrStderr()
		}
		report := func(r *snapshot.Result) {
			if asJSON {
				_ = printJSON(w, r)
				return
			}
			printSnapshot(w, r)
		}
		if every > 0 {
			logx.Infof("capturing every %s to %s until stopped (keeping %d previous)", every, out, keep)
			return snapshot.Every(cmd.Context(), conn, so, every, report, logx.Default())
		}
		res, err := snapshot.Capture(cmd.Context(), conn, so)
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
	fmt.Fprintf(w, "snapshot: %d pages of %d objects (pool %d pages, %d not attributable) in %.2f s (page list read in %.2f s) → %s%s\n",
		r.Entries, r.Objects, r.PoolPages, r.Unattributed, r.Seconds, r.ReadSeconds, dest, size)
	fmt.Fprintf(w, "server %s, captured %s, sha256 %s\n", r.Header.ServerID, r.CapturedAt.Format(time.RFC3339), short(r.Header.SHA256))
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}
