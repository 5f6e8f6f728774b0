package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/pacing"
)

// replayArgs is warm --replay FILE on a socket where no server listens: every case here is
// settled before a connection.
func replayArgs(t *testing.T, extra ...string) []string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "r.sql")
	if err := os.WriteFile(file, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return append([]string{"warm", "--no-defaults", "-S", filepath.Join(dir, "none.sock"), "--replay", file}, extra...)
}

// Every warm flag that a replay does not use is refused with --replay (exit 2, one line
// naming the flag), not silently ignored: --verify and --by-key were accepted and did
// nothing. The flags come from warm's own definition, so a flag added to warm later is
// covered too.
func TestReplayRefusesWarmFlagsItDoesNotUse(t *testing.T) {
	allowed := replayAllowed()
	refused := 0
	newWarmCmd().Flags().VisitAll(func(fl *pflag.Flag) {
		if allowed[fl.Name] {
			return
		}
		refused++
		value := fl.DefValue
		switch {
		case fl.NoOptDefVal != "":
			value = fl.NoOptDefVal
		case fl.Value.Type() == "bool":
			value = "true"
		case strings.HasSuffix(fl.Value.Type(), "Array") || value == "":
			value = "x"
		}
		t.Run(fl.Name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(replayArgs(t, "--"+fl.Name+"="+value), &stdout, &stderr)
			line := strings.TrimSpace(stderr.String())
			want := "--" + fl.Name + " does not go with --replay"
			if code != exitcode.Usage || !strings.Contains(line, want) || strings.Contains(line, "\n") {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, line, want)
			}
		})
	})
	for _, name := range []string{"verify", "by-key", "from", "method", "wait-for-server", "s3-endpoint", "budget", "parallel"} {
		if allowed[name] {
			t.Errorf("--%s is taken with --replay", name)
		}
	}
	if refused < 15 {
		t.Errorf("only %d flags refused", refused)
	}

	// The flags a replay does use get past the check to the connection.
	for _, args := range [][]string{
		{"--dry-run", "--verbose", "--json", "-q", "--lock-wait-timeout", "3s", "--progress-interval", "1s"},
		{"--nice", "--max-rate", "10MB/s", "--concurrency", "2", "--replay-timeout", "1s", "-D", "shop", "-u", "app", "--connect-timeout", "1"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(replayArgs(t, args...), &stdout, &stderr)
		if strings.Contains(stderr.String(), "does not go with") || code == 0 {
			t.Errorf("%v: exit %d, %s", args, code, stderr.String())
		}
	}
}

// -D with --replay names one schema; the commas that separate names are those outside
// backticks, as everywhere in innowarm: -D '`a,b`' is the schema a,b.
func TestReplayDatabaseCommasInBackticks(t *testing.T) {
	for _, c := range []struct {
		db      string
		refused bool
	}{
		{"`a,b`", false},
		{" `a,b` ", false},
		{"shop", false},
		{"a,b", true},
		{"`a,b`,c", true},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(replayArgs(t, "-D", c.db), &stdout, &stderr)
		refused := strings.Contains(stderr.String(), "-D names one schema")
		if refused != c.refused || refused && code != exitcode.Usage {
			t.Errorf("-D %q: exit %d, %s", c.db, code, stderr.String())
		}
	}
	// The connection's database, and the default schema of the statements.
	for _, c := range []struct{ db, conn, schema string }{
		{"`a,b`", "a,b", "a,b"},
		{"shop", "shop", "shop"},
		{"`sh``op`", "sh`op", "sh`op"},
		{"a,b", "a,b", ""},
	} {
		rf := &replayFlags{}
		opts := rf.connOptions(connection.Options{Database: c.db})
		if opts.Database != c.conn || rf.defaultSchema(opts.Database) != c.schema {
			t.Errorf("-D %q: connects to %q, default schema %q; want %q, %q", c.db, opts.Database, rf.defaultSchema(opts.Database), c.conn, c.schema)
		}
		// Without connOptions (the connection keeps -D as given).
		if got := (&replayFlags{}).defaultSchema(c.db); got != c.schema {
			t.Errorf("-D %q as given: default schema %q, want %q", c.db, got, c.schema)
		}
	}
}

// warm's --progress-interval paces a replay's progress lines too (a replay logged every 10 s
// whatever it was given), and --lock-wait-timeout and --dry-run reach it.
func TestReplayHonoursWarmFlags(t *testing.T) {
	cmd := newWarmCmd()
	if err := cmd.Flags().Parse([]string{"--progress-interval", "3s", "--lock-wait-timeout", "4s", "--dry-run"}); err != nil {
		t.Fatal(err)
	}
	o := (&replayFlags{cmd: cmd}).options("shop", pacing.Config{})
	if o.ProgressEvery != 3*time.Second || o.LockWaitTimeout != 4*time.Second || !o.DryRun || o.DefaultSchema != "shop" {
		t.Errorf("replay options: progress every %s, lock wait %s, dry run %v, schema %q", o.ProgressEvery, o.LockWaitTimeout, o.DryRun, o.DefaultSchema)
	}
}

// --replay-schema takes a name in backticks as innowarm prints it: --replay-schema '`shop`'
// ran every statement in a schema named `shop`, backticks and all (Unknown database).
func TestReplaySchemaInBackticks(t *testing.T) {
	for raw, want := range map[string]string{
		"shop":     "shop",
		"`shop`":   "shop",
		" `a,b` ":  "a,b",
		"`sh``op`": "sh`op",
		"a,b":      "a,b",
		"`a`,`b`":  "`a`,`b`",
		"odd name": "odd name",
		"`":        "`",
	} {
		if got := quotedSchema(raw); got != want {
			t.Errorf("--replay-schema %q: schema %q, want %q", raw, got, want)
		}
	}
}
