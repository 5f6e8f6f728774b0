package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sqlerr"
	"github.com/innowarm/innowarm/internal/units"
)

func init() { register(newPingCmd) }

// serverFacts is what ping prints.
type serverFacts struct {
	Flavor          string            `json:"flavor"`
	Version         string            `json:"version"`
	VersionComment  string            `json:"version_comment"`
	Identity        string            `json:"identity"`
	Target          string            `json:"connected_via"`
	User            string            `json:"user"`
	TLS             string            `json:"tls"`
	Datadir         string            `json:"datadir"`
	PageSize        int               `json:"page_size"`
	ReadOnly        bool              `json:"read_only"`
	Pool            bufferpool.Totals `json:"buffer_pool"`
	DumpFile        string            `json:"dump_file"`
	DumpFileDynamic bool              `json:"dump_file_dynamic"`
	DumpPct         int               `json:"dump_pct"`
	Dictionary      []string          `json:"dictionary_tables"`
	TimeLimit       string            `json:"statement_time_limit"`
}

// describeServer lists the dictionary tables innowarm reads, each "ok", "missing", or
// "needs PROCESS" when the user may not read them (process: whether the user may).
func describeServer(s flavor.Server, process bool) (dict []string, limit string) {
	for _, t := range []string{s.TablesTable(), s.IndexesTable(), s.TablespacesTable(), s.BufferPageTable(), s.BufferPageLRUTable()} {
		name := strings.TrimPrefix(t, "information_schema.")
		mark := "missing"
		switch {
		case s.HasInfoSchema(name) && !process:
			mark = "needs PROCESS"
		case s.HasInfoSchema(name):
			mark = "ok"
		}
		dict = append(dict, name+" "+mark)
	}
	limit = strings.Replace(s.WithTimeLimit("SELECT ...", 1e9), "SELECT ...", "<select>", 1)
	return dict, limit
}

func newPingCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ping",
		Short: "Connect and print the server's flavor, version and buffer pool",
		Long: `ping connects with the mysql-style options and prints what innowarm detected: flavor,
version, page size, buffer pool totals, where the buffer-pool dump file lives, which
dictionary tables exist, and how statements get a time limit on this server.`,
		Example: "  innowarm ping -h db1 -u admin -p\n  innowarm ping -S /run/mysqld/mysqld.sock --json",
	}
	cf := addConnFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		conn, err := cf.open(cmd)
		if err != nil {
			return err
		}
		defer conn.Close()
		s := conn.Server
		pool, err := bufferpool.ReadTotals(cmd.Context(), conn)
		if err != nil {
			return err
		}
		dict, limit := describeServer(s, mayReadInnoDBTables(cmd.Context(), conn))
		var name, tlsVersion, cipher string
		_ = conn.DB.QueryRowContext(cmd.Context(), "SHOW SESSION STATUS LIKE 'Ssl_version'").Scan(&name, &tlsVersion)
		_ = conn.DB.QueryRowContext(cmd.Context(), "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher)
		tlsDesc := "none"
		if cipher != "" {
			tlsDesc = tlsVersion + " " + cipher
		}
		f := serverFacts{
			Flavor: string(s.Kind), Version: s.VersionString, VersionComment: s.VersionComment,
			Identity: s.Identity(), Target: conn.Opts.Target(), User: conn.Opts.User, TLS: tlsDesc, Datadir: s.Datadir,
			PageSize: s.PageSize, ReadOnly: s.ReadOnly, Pool: pool, DumpFile: s.DumpFilePath(),
			DumpFileDynamic: s.DumpFileDynamic(), DumpPct: s.DumpPct, Dictionary: dict, TimeLimit: limit,
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), f)
		}
		dyn := "fixed in the datadir"
		if f.DumpFileDynamic {
			dyn = "settable at runtime"
		}
		kvTable(cmd.OutOrStdout(), [][2]string{
			{"server", fmt.Sprintf("%s %s (%s)", f.Flavor, f.Version, f.VersionComment)},
			{"connected", fmt.Sprintf("%s as %s", f.Target, f.User)},
			{"tls", f.TLS},
			{"identity", f.Identity},
			{"datadir", f.Datadir},
			{"page size", units.FormatBytes(int64(f.PageSize))},
			{"buffer pool", fmt.Sprintf("%s = %d pages: %d free, %d data, %d dirty; %s", units.FormatBytes(pool.PoolBytes), pool.PagesTotal, pool.PagesFree, pool.PagesData, pool.PagesDirty, pool.HitRateText())},
			{"dump file", fmt.Sprintf("%s (%s), dump_pct %d", f.DumpFile, dyn, f.DumpPct)},
			{"dictionary", strings.Join(dict, ", ")},
			{"time limit", limit},
		})
		return nil
	})
	return cmd
}

// mayReadInnoDBTables reports whether the user may read the InnoDB information_schema
// tables: the server lists them to everyone and refuses their rows without PROCESS. One
// row of INNODB_BUFFER_POOL_STATS (a row per pool instance) asks at no cost.
func mayReadInnoDBTables(ctx context.Context, conn *connection.Conn) bool {
	var one int
	err := conn.DB.QueryRowContext(ctx, "SELECT 1 FROM information_schema.INNODB_BUFFER_POOL_STATS LIMIT 1").Scan(&one)
	return !sqlerr.PrivilegeMissing(err)
}
