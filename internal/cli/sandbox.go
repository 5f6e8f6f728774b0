package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/units"
)

func init() { register(newSandboxCmd) }

type sandboxFlags struct {
	dir    string
	asJSON bool
}

func (f *sandboxFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "dir", sandbox.DefaultDir(), "sandbox directory")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print as JSON")
}

func newSandboxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a throwaway local MariaDB/MySQL server for demos, experiments and tests",
		Long: `sandbox manages a throwaway server in a directory of its own: --no-defaults, a free
127.0.0.1 port, a socket inside the directory, root with an empty password, InnoDB with
O_DIRECT (so a restart is truly cold) and buffer-pool dump/load at shutdown/startup OFF.
It never touches another server.`,
		Example: `  innowarm sandbox up --pool-size 256M
  innowarm sandbox status --json
  innowarm sandbox cold-restart
  innowarm sandbox down --purge`,
	}
	cmd.AddCommand(newSandboxUpCmd(), newSandboxDownCmd(), newSandboxStatusCmd(), newSandboxRestartCmd(false), newSandboxRestartCmd(true), newSandboxFlavorsCmd())
	return cmd
}

func newSandboxUpCmd() *cobra.Command {
	var f sandboxFlags
	var pool string
	var cfg sandbox.Config
	cmd := &cobra.Command{
		Use:     "up",
		Short:   "Create the sandbox if needed and start its server",
		Example: "  innowarm sandbox up --dir /tmp/sb --pool-size 1G\n  innowarm sandbox up --flavor mysql-9.7 --dir /tmp/my97\n  innowarm sandbox up --server-arg=--performance-schema=ON",
	}
	f.bind(cmd)
	flavorFlag(cmd, &cfg.Flavor)
	cmd.Flags().StringVar(&pool, "pool-size", "256M", "innodb_buffer_pool_size")
	cmd.Flags().IntVar(&cfg.Port, "port", 0, "TCP port on 127.0.0.1 (default: a free one)")
	cmd.Flags().StringVar(&cfg.ServerBinary, "server-binary", "", "mariadbd or mysqld to run (default: the --flavor's, else found on PATH or in /usr/sbin)")
	cmd.Flags().BoolVar(&cfg.BufferedIO, "buffered-io", false, "use buffered I/O instead of O_DIRECT (restarts are then only cold after dropping the OS cache)")
	cmd.Flags().BoolVar(&cfg.DumpAtShutdown, "dump-at-shutdown", false, "innodb_buffer_pool_dump_at_shutdown=ON")
	cmd.Flags().BoolVar(&cfg.LoadAtStartup, "load-at-startup", false, "innodb_buffer_pool_load_at_startup=ON")
	cmd.Flags().StringArrayVar(&cfg.ServerArgs, "server-arg", nil, "extra server option, repeatable (e.g. --server-arg=--performance-schema=ON)")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		size, err := units.ParseBytes(pool)
		if err != nil {
			return usagef("--pool-size: %v", err)
		}
		cfg.Dir, cfg.PoolSize = f.dir, size
		if !cmd.Flags().Changed("server-arg") {
			cfg.ServerArgs = nil
		}
		if existing, err := sandbox.Open(f.dir); err == nil {
			// An existing sandbox keeps the settings it was made with unless a flag says
			// otherwise: "up" after "down" restarted it with a 256 MiB pool and the dump at
			// shutdown off, whatever it had.
			changed := cmd.Flags().Changed
			if !changed("pool-size") {
				cfg.PoolSize = existing.PoolSize
			}
			if !changed("buffered-io") {
				cfg.BufferedIO = existing.BufferedIO
			}
			if !changed("dump-at-shutdown") {
				cfg.DumpAtShutdown = existing.DumpAtShutdown
			}
			if !changed("load-at-startup") {
				cfg.LoadAtStartup = existing.LoadAtStartup
			}
		}
		sb, rep, err := sandbox.Up(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		st := sb.Status(cmd.Context())
		if f.asJSON {
			return printJSON(cmd.OutOrStdout(), map[string]any{"up": rep, "status": st})
		}
		w := cmd.OutOrStdout()
		switch rep.Action {
		case "created":
			fmt.Fprintf(w, "sandbox created in %s (install %.1f s, start %.1f s)\n", sb.Dir, rep.InstallSeconds, rep.StartSeconds)
		case "started":
			fmt.Fprintf(w, "sandbox started in %s (start %.1f s)\n", sb.Dir, rep.StartSeconds)
		default:
			fmt.Fprintf(w, "sandbox already running in %s\n", sb.Dir)
		}
		printSandboxStatus(w, sb, st)
		printNotes(w, rep.Stale, rep.Notes)
		return nil
	})
	return cmd
}

func printNotes(w io.Writer, lists ...[]string) {
	for _, l := range lists {
		for _, n := range l {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
}

func printSandboxStatus(w io.Writer, sb *sandbox.Sandbox, st sandbox.Status) {
	state := "stopped"
	if st.Running {
		state = fmt.Sprintf("running, pid %d, up %.0f s", st.Pid, st.UptimeSecs)
	}
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	rows := [][2]string{
		{"server", fmt.Sprintf("%s (%s)", sb.Description(), sb.ServerBinary)},
		{"state", state},
		{"socket", st.Socket},
		{"port", fmt.Sprintf("127.0.0.1:%d", st.Port)},
		{"buffer pool", fmt.Sprintf("%s, %s, dump at shutdown %s, load at startup %s", units.FormatBytes(st.PoolSize), st.FlushMethod, onOff(sb.DumpAtShutdown), onOff(sb.LoadAtStartup))},
		{"error log", sb.ErrorLog},
	}
	if len(sb.ServerArgs) > 0 {
		rows = append(rows, [2]string{"server args", strings.Join(sb.ServerArgs, " ")})
	}
	if st.Running {
		rows = append(rows, [2]string{"connect", fmt.Sprintf("innowarm ping -S %s -u root   (or: mariadb -S %s -u root)", st.Socket, st.Socket)})
	}
	if st.StalePid != "" {
		rows = append(rows, [2]string{"stale pid", st.StalePid})
	}
	if st.StaleSocket != "" {
		rows = append(rows, [2]string{"stale socket", st.StaleSocket})
	}
	kvTable(w, rows)
}

func newSandboxStatusCmd() *cobra.Command {
	var f sandboxFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether the sandbox server runs, where, and with which settings",
		Long: `status says whether the sandbox's own server runs (the process its pid file names, serving
the sandbox's data directory), where it listens, and the settings it starts with. --json
prints dir, running, pid, socket, port, flavor, server_version, server_version_line,
pool_size, flush_method, dump_at_shutdown, load_at_startup, server_args (the extra server
options 'sandbox up --server-arg' recorded, [] when none), uptime_seconds, and
stale_pid_file / stale_socket when a crash left them.`,
		Example: "  innowarm sandbox status\n  innowarm sandbox status --dir /tmp/sb --json",
	}
	f.bind(cmd)
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		sb, err := sandbox.Open(f.dir)
		if err != nil {
			return err
		}
		st := sb.Status(cmd.Context())
		if f.asJSON {
			return printJSON(cmd.OutOrStdout(), st)
		}
		printSandboxStatus(cmd.OutOrStdout(), sb, st)
		printNotes(cmd.OutOrStdout(), st.Notes)
		return nil
	})
	return cmd
}

func newSandboxDownCmd() *cobra.Command {
	var f sandboxFlags
	var purge bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the sandbox server cleanly (--purge also deletes what the sandbox made)",
		Long: `down stops the sandbox server cleanly. --purge then removes the sandbox's own entries
(data, tmp, files, its logs, pid file, socket, sandbox.json), and the directory itself when
'sandbox up' created it and nothing else is left in it: files you added are kept, and named.
It stops only the server 'sandbox up' started on the sandbox's own data directory: a
sandbox.json that names another directory's paths, or a pid file that names another server,
is refused (exit 1). --purge removes only what innowarm can prove it made: a sandbox.json
without the identity 'sandbox up' records (written by hand, or by an older innowarm) beside
a data directory without innowarm's mark is refused, as are entries that are not what
'sandbox up' makes, a file system mounted inside them, and a socket another process listens
on. Symbolic links are removed, never followed; --dir given as a link acts on the sandbox it
leads to, and says so. A sandbox copied whole (cp -a) is the copy's own: 'sandbox up --dir
COPY' starts it on its own paths and port, and a purge of either leaves the other alone.`,
		Example: "  innowarm sandbox down\n  innowarm sandbox down --purge",
	}
	f.bind(cmd)
	cmd.Flags().BoolVar(&purge, "purge", false, "also delete the sandbox's data and files (and its directory, when up created it and nothing else is in it)")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		sb, unlock, err := openLocked(cmd, f.dir)
		if err != nil {
			return err
		}
		defer unlock()
		if purge {
			// Refused before the server stops: a purge that would remove nothing of the
			// user's is known before anything changes.
			if err := sb.CheckPurge(); err != nil {
				return err
			}
		}
		was := sb.Status(cmd.Context())
		secs, err := sb.Stop(cmd.Context())
		if err != nil {
			return err
		}
		res := map[string]any{"dir": sb.Dir, "was_running": was.Running, "stop_seconds": secs, "purged": purge}
		if notes := sb.Notes(); len(notes) > 0 {
			res["notes"] = notes
		}
		var purged sandbox.PurgeReport
		if purge {
			if purged, err = sb.Purge(cmd.Context()); err != nil {
				return err
			}
			res["purge"] = purged
		}
		if f.asJSON {
			return printJSON(cmd.OutOrStdout(), res)
		}
		w := cmd.OutOrStdout()
		printNotes(w, sb.Notes())
		switch {
		case was.Running:
			fmt.Fprintf(w, "sandbox server pid %d stopped in %.1f s\n", was.Pid, secs)
		default:
			fmt.Fprintln(w, "sandbox server was not running")
		}
		switch {
		case !purge:
		case purged.DirRemoved:
			fmt.Fprintf(w, "removed %s\n", sb.Dir)
		default:
			fmt.Fprintf(w, "removed the sandbox's files from %s (%s); kept %s: %s\n", sb.Dir, strings.Join(purged.Removed, ", "), sb.Dir, purged.KeptReason)
		}
		return nil
	})
	return cmd
}

func newSandboxRestartCmd(cold bool) *cobra.Command {
	var f sandboxFlags
	var pool string
	cmd := &cobra.Command{
		Use:     "restart",
		Short:   "Stop and start the sandbox server (--pool-size changes the pool)",
		Example: "  innowarm sandbox restart --pool-size 1G",
	}
	if cold {
		cmd.Use = "cold-restart"
		cmd.Short = "Clean shutdown, drop the OS page cache when permitted, start: the pool is truly cold"
		cmd.Example = "  innowarm sandbox cold-restart\n  innowarm sandbox cold-restart --json"
	}
	f.bind(cmd)
	if !cold {
		cmd.Flags().StringVar(&pool, "pool-size", "", "new innodb_buffer_pool_size")
	}
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		sb, unlock, err := openLocked(cmd, f.dir)
		if err != nil {
			return err
		}
		defer unlock()
		var size int64
		if pool != "" {
			if size, err = units.ParseBytes(pool); err != nil {
				return usagef("--pool-size: %v", err)
			}
		}
		var rep sandbox.RestartReport
		if cold {
			rep, err = sb.ColdRestart(cmd.Context())
		} else {
			rep, err = sb.Restart(cmd.Context(), size)
		}
		if err != nil {
			return err
		}
		if f.asJSON {
			return printJSON(cmd.OutOrStdout(), rep)
		}
		w := cmd.OutOrStdout()
		if cold {
			fmt.Fprintf(w, "cold restart in %.1f s: stop %.1f s, OS page cache %s (%.2f s), start %.1f s; pid %d\n", rep.TotalSeconds, rep.StopSeconds, rep.DropCache, rep.DropSeconds, rep.StartSeconds, rep.Pid)
			fmt.Fprintf(w, "cold: %s\n", rep.ColdGuarantee)
		} else {
			fmt.Fprintf(w, "restarted in %.1f s: stop %.1f s, start %.1f s; pid %d, pool %s\n", rep.TotalSeconds, rep.StopSeconds, rep.StartSeconds, rep.Pid, units.FormatBytes(rep.PoolSize))
		}
		printNotes(w, sb.Notes(), rep.Stale, rep.Notes)
		return nil
	})
	return cmd
}

// openLocked opens the sandbox in dir holding its directory's lock, which a concurrent
// 'up', 'down' or 'restart' of the same sandbox waits for: a purge while another 'up'
// installed, or a stop while it started, removed or stopped what the other had just made.
func openLocked(cmd *cobra.Command, dir string) (*sandbox.Sandbox, func(), error) {
	if _, err := sandbox.Open(dir); err != nil {
		return nil, nil, err
	}
	unlock, err := sandbox.LockDir(cmd.Context(), dir)
	if err != nil {
		return nil, nil, err
	}
	// Read again under the lock: the holder we waited for may have changed it.
	sb, err := sandbox.Open(dir)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return sb, unlock, nil
}

// flavorFlag binds --flavor, whose default is $INNOWARM_FLAVOR.
func flavorFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "flavor", os.Getenv(sandbox.FlavorEnv),
		"server to run: "+strings.Join(sandbox.FlavorNames(), ", ")+" (installed from Debian on first use, as root; default $"+sandbox.FlavorEnv+", else the machine's own server)")
}

func newSandboxFlavorsCmd() *cobra.Command {
	var asJSON, install bool
	cmd := &cobra.Command{
		Use:   "flavors [FLAVOR...]",
		Short: "List the server flavors a sandbox can run, and install them (--install)",
		Long: `flavors lists the servers --flavor accepts and where each comes from. The machine's own
server is used when it is of the flavor's series; otherwise --install (or the first
'sandbox up --flavor') installs the flavor's Debian packages with debootstrap into a private
root file system under ` + sandbox.ServersDir() + ` (root needed, once: 47-56 s on an idle 2-vCPU machine, 195-219 s on a loaded one); the
server then runs on this machine through that root's own dynamic loader.`,
		Example: "  innowarm sandbox flavors\n  innowarm sandbox flavors --install mysql-9.7 mariadb-11.8",
		Args:    cobra.ArbitraryArgs,
	}
	cmd.Flags().BoolVar(&install, "install", false, "install the named flavors (all when none is named) now")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.RunE = run(func(cmd *cobra.Command, args []string) error {
		var want []sandbox.Distribution
		for _, a := range args {
			d, err := sandbox.LookupDistribution(a)
			if err != nil {
				return err
			}
			want = append(want, d)
		}
		if len(want) == 0 {
			want = sandbox.Distributions
		}
		type row struct {
			sandbox.Distribution
			Source  string `json:"source"`
			Version string `json:"version,omitempty"`
			Binary  string `json:"binary,omitempty"`
		}
		var rows []row
		for _, d := range want {
			r := row{Distribution: d, Source: "not installed"}
			if install && !d.OnHost(cmd.Context()) {
				if _, err := sandbox.Provision(cmd.Context(), d); err != nil {
					return err
				}
			}
			if b, ok := d.Available(cmd.Context()); ok {
				r.Version, r.Binary, r.Source = fmt.Sprintf("%s %s", b.Kind, b.Version), b.Path, "this machine's packages: "+b.Path
				if b.Root != "" {
					r.Source = "installed in " + b.Root
				}
			}
			rows = append(rows, r)
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), rows)
		}
		t := [][2]string{}
		for _, r := range rows {
			v := r.Version + ", " + r.Source
			if r.Version == "" {
				v = fmt.Sprintf("not installed: Debian %s's %s (sandbox flavors --install %s)", r.Suite, strings.Join(r.Packages, ", "), r.Name)
			}
			t = append(t, [2]string{r.Name, v})
		}
		kvTable(cmd.OutOrStdout(), t)
		return nil
	})
	return cmd
}
