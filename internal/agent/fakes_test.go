package agent_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The recipes' scripts call tools this machine has no server for: ProxySQL's admin interface
// (through the mysql client) and MaxScale's maxctrl. The test binary stands in for them:
// started with fakeEnv set, it is that tool, checking each command against the tool's
// documented interface and keeping state in files, instead of running the tests.
const fakeEnv = "INNOWARM_AGENT_TEST_FAKE"

func runFake(tool string, args []string) int {
	switch tool {
	case "mysql":
		return fakeProxySQLAdmin(args)
	case "maxctrl":
		return fakeMaxctrl(args)
	}
	fmt.Fprintf(os.Stderr, "no fake %q\n", tool)
	return 2
}

// fakeTools puts mysql and maxctrl stand-ins first on a PATH for the scripts, and returns it.
func fakeTools(t *testing.T, env ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exports := ""
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		exports += fmt.Sprintf("export %s='%s'\n", k, v)
	}
	for _, tool := range []string{"mysql", "maxctrl"} {
		script := fmt.Sprintf("#!/bin/sh\n%sexport %s=%s\nexec '%s' \"$@\"\n", exports, fakeEnv, tool, self)
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir + ":" + os.Getenv("PATH")
}

// ProxySQL's admin commands (LOAD/SAVE module TO/FROM layer), as its admin interface
// documents them: they act on ProxySQL's runtime, the stand-in logs them.
var adminCommand = regexp.MustCompile(`(?i)^(LOAD|SAVE)\s+(MYSQL SERVERS|MYSQL USERS|MYSQL QUERY RULES|MYSQL VARIABLES|ADMIN VARIABLES|SCHEDULER|PROXYSQL SERVERS)\s+(TO|FROM)\s+(RUNTIME|DISK|MEMORY)$`)

func validAdminCommand(m []string) bool {
	verb, dir, layer := strings.ToUpper(m[1]), strings.ToUpper(m[3]), strings.ToUpper(m[4])
	switch verb + " " + dir + " " + layer {
	case "LOAD TO RUNTIME", "LOAD FROM MEMORY", "LOAD FROM DISK", "LOAD TO MEMORY",
		"SAVE TO DISK", "SAVE FROM RUNTIME", "SAVE TO MEMORY", "SAVE FROM MEMORY":
		return true
	}
	return false
}

// fakeProxySQLAdmin is `mysql --defaults-file=F -N -B -e SQL` against ProxySQL's admin
// interface: statements run with sqlite3 on $PROXYSQL_DB (ProxySQL's tables), admin
// commands go to $PROXYSQL_LOG.
func fakeProxySQLAdmin(args []string) int {
	var sql string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-e" && i+1 < len(args):
			sql = args[i+1]
			i++
		case a == "-N" || a == "-B" || strings.HasPrefix(a, "--defaults-file="):
		default:
			fmt.Fprintf(os.Stderr, "mysql stand-in: unexpected argument %q\n", a)
			return 2
		}
	}
	db, logFile := os.Getenv("PROXYSQL_DB"), os.Getenv("PROXYSQL_LOG")
	for _, stmt := range splitSQL(sql) {
		if m := adminCommand.FindStringSubmatch(stmt); m != nil {
			if !validAdminCommand(m) {
				fmt.Fprintf(os.Stderr, "ERROR 1045 (28000): ProxySQL Admin Error: %s is not an admin command\n", stmt)
				return 1
			}
			f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Fprintln(f, strings.ToUpper(strings.Join(strings.Fields(stmt), " ")))
			f.Close()
			continue
		}
		cmd := exec.Command("sqlite3", "-batch", "-bail", "-noheader", "-separator", "\t", db, stmt+";")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "mysql stand-in: %q: %v\n", stmt, err)
			return 1
		}
	}
	return 0
}

// splitSQL cuts statements at semicolons outside quotes.
func splitSQL(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"' || r == '`':
			quote = r
		case r == ';':
			if st := strings.TrimSpace(cur.String()); st != "" {
				out = append(out, st)
			}
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	if st := strings.TrimSpace(cur.String()); st != "" {
		out = append(out, st)
	}
	return out
}

// MaxScale's server states that `maxctrl set/clear server <server> <state>` takes
// (MaxCtrl's reference: master, slave, maintenance, running, synced, drain).
var maxscaleStates = map[string]string{"master": "Master", "slave": "Slave", "maintenance": "Maintenance", "running": "Running", "synced": "Synced", "drain": "Draining"}

// fakeMaxctrl is maxctrl against a MaxScale whose servers are files of $MAXSCALE_STATE_DIR
// (one line: the states, "Running" to begin with); each command goes to $MAXSCALE_LOG.
func fakeMaxctrl(args []string) int {
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-u" || a == "-p" || a == "-h" || a == "--hosts" || a == "--user" || a == "--password":
			i++
		case strings.HasPrefix(a, "-") && a != "--force":
			if !strings.Contains(a, "=") {
				fmt.Fprintf(os.Stderr, "maxctrl stand-in: unknown option %s\n", a)
				return 1
			}
		default:
			words = append(words, a)
		}
	}
	logLine := strings.Join(args, " ")
	if f, err := os.OpenFile(os.Getenv("MAXSCALE_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, logLine)
		f.Close()
	}
	dir := os.Getenv("MAXSCALE_STATE_DIR")
	load := func(server string) (map[string]bool, bool) {
		raw, err := os.ReadFile(filepath.Join(dir, server))
		if err != nil {
			return nil, false
		}
		st := map[string]bool{}
		for _, s := range strings.Split(strings.TrimSpace(string(raw)), ", ") {
			if s != "" {
				st[s] = true
			}
		}
		return st, true
	}
	show := func(st map[string]bool) string {
		var out []string
		for s := range st {
			out = append(out, s)
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
	switch {
	case len(words) == 4 && (words[0] == "set" || words[0] == "clear") && words[1] == "server":
		st, ok := load(words[2])
		if !ok {
			fmt.Fprintf(os.Stderr, "Error: Server '%s' not found\n", words[2])
			return 1
		}
		state, ok := maxscaleStates[words[3]]
		if !ok {
			fmt.Fprintf(os.Stderr, "Error: Invalid or unsupported state: %s\n", words[3])
			return 1
		}
		if words[0] == "set" {
			st[state] = true
		} else {
			delete(st, state)
		}
		if err := os.WriteFile(filepath.Join(dir, words[2]), []byte(show(st)+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("OK")
		return 0
	case len(words) == 4 && words[0] == "api" && words[1] == "get" && strings.HasPrefix(words[2], "servers/") && words[3] == "data.attributes.state":
		st, ok := load(strings.TrimPrefix(words[2], "servers/"))
		if !ok {
			fmt.Fprintf(os.Stderr, "Error: Server not found\n")
			return 1
		}
		fmt.Printf("%q\n", show(st))
		return 0
	}
	fmt.Fprintf(os.Stderr, "maxctrl stand-in: unknown command: %s\n", logLine)
	return 1
}
