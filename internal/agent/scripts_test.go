package agent_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/agent"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

const (
	proxysqlScript = "../../dist/proxysql/innowarm-proxysql-weights"
	maxscaleScript = "../../dist/maxscale/innowarm-maxscale-maintenance"
)

// proxysqlAdmin is a stand-in for ProxySQL's admin interface: ProxySQL's own table
// definitions in an SQLite file, and a log of the admin commands it received.
type proxysqlAdmin struct {
	db, log, path string
}

func newProxySQLAdmin(t *testing.T) *proxysqlAdmin {
	t.Helper()
	for _, tool := range []string{"sqlite3", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: scripts/ensure-deps.sh agent installs it (make test does)", tool)
		}
	}
	dir := t.TempDir()
	p := &proxysqlAdmin{db: filepath.Join(dir, "proxysql.db"), log: filepath.Join(dir, "admin.log")}
	ddl, err := os.ReadFile("testdata/proxysql-admin.sql")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sqlite3", "-batch", "-bail", p.db)
	cmd.Stdin = strings.NewReader(string(ddl))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ProxySQL's tables: %v: %s", err, out)
	}
	p.path = fakeTools(t, "PROXYSQL_DB="+p.db, "PROXYSQL_LOG="+p.log)
	return p
}

// sql runs statements through the stand-in, as the mysql client would against ProxySQL.
func (p *proxysqlAdmin) sql(t *testing.T, sql string) string {
	t.Helper()
	bin, _, _ := strings.Cut(p.path, ":")
	cmd := exec.Command(filepath.Join(bin, "mysql"), "--defaults-file=/dev/null", "-N", "-B", "-e", sql)
	cmd.Env = append(os.Environ(), "PATH="+p.path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", sql, err, out)
	}
	return string(out)
}

func (p *proxysqlAdmin) commands(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(p.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(raw)), "\n")
}

// sharedPort finds a port free on two loopback addresses.
func sharedPort(t *testing.T, hosts ...string) string {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		ln, err := net.Listen("tcp", hosts[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ok := true
		for _, h := range hosts[1:] {
			l2, err := net.Listen("tcp", net.JoinHostPort(h, port))
			if err != nil {
				ok = false
				break
			}
			l2.Close()
		}
		ln.Close()
		if ok {
			return port
		}
	}
	t.Fatal("no port free on every address")
	return ""
}

// The ProxySQL scheduler job against two live agents (one ready, one warming) and one that
// does not answer: the weights it writes are valid in ProxySQL's mysql_servers and are the
// agents' own, followed by one LOAD MYSQL SERVERS TO RUNTIME; a second run changes nothing.
func TestProxySQLScheduler(t *testing.T) {
	admin := newProxySQLAdmin(t)
	port := sharedPort(t, "127.0.0.2", "127.0.0.3")

	hot := sandboxtest.Schema(t)
	wideTable(t, sandboxtest.Conn(t), hot, 5000)
	ready := startAgent(t, agent.Options{Conn: sandboxtest.Server(t).ConnOptions(), Filter: catalog.Filter{Schemas: []string{hot}}, HttpListen: "127.0.0.2:" + port})
	_, coldConn := secondServer(t, "cold", 30_000)
	warming := startAgent(t, agent.Options{Conn: coldConn, Filter: catalog.Filter{Schemas: []string{"cold"}}, HttpListen: "127.0.0.3:" + port, MinWeight: 3})
	ready.waitState(t, "ready", 60*time.Second, inState(agent.Ready))
	ws := warming.waitState(t, "warming, measured", 60*time.Second, func(s agent.Status) bool { return s.State == agent.Warming && s.Coverage.Known })

	admin.sql(t, `INSERT INTO mysql_servers (hostgroup_id, hostname, port, weight) VALUES
		(10, '127.0.0.2', 3306, 1), (10, '127.0.0.3', 3306, 1), (10, '127.0.0.4', 3306, 7), (20, '127.0.0.2', 3306, 5)`)
	run := func() {
		t.Helper()
		cmd := exec.Command("sh", proxysqlScript, "10", port, "1000", "/dev/null")
		cmd.Env = append(os.Environ(), "PATH="+admin.path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", proxysqlScript, err, out)
		}
	}
	run()
	weights := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(admin.sql(t, "SELECT hostgroup_id, hostname, weight FROM mysql_servers")), "\n") {
		f := strings.Split(l, "\t")
		weights[f[0]+" "+f[1]] = f[2]
	}
	// The warming agent's weight is its coverage in percent, at least its --min-weight 3:
	// a cold server's 3% of 1,000.
	wantWarming := strconv.Itoa((1000*ws.Weight + 50) / 100)
	if ws.Weight != 3 {
		t.Fatalf("the cold server's agent answers weight %d, want its floor 3 (%s)", ws.Weight, describe(ws))
	}
	for key, want := range map[string]string{"10 127.0.0.2": "1000", "10 127.0.0.3": wantWarming, "10 127.0.0.4": "7", "20 127.0.0.2": "5"} {
		if weights[key] != want {
			t.Errorf("weight of %s: %s, want %s (all: %v)", key, weights[key], want, weights)
		}
	}
	if got := admin.commands(t); len(got) != 1 || got[0] != "LOAD MYSQL SERVERS TO RUNTIME" {
		t.Errorf("admin commands %q, want one LOAD MYSQL SERVERS TO RUNTIME", got)
	}
	run()
	if got := admin.commands(t); len(got) != 1 {
		t.Errorf("a run with nothing to change sent %q", got)
	}
}

// MaxScale maintenance follows the agent: in while warming, out once ready; an operator's
// maintenance is left alone; no answer changes nothing.
func TestMaxScaleMaintenance(t *testing.T) {
	states := t.TempDir()
	log := filepath.Join(t.TempDir(), "maxctrl.log")
	marks := t.TempDir()
	path := fakeTools(t, "MAXSCALE_STATE_DIR="+states, "MAXSCALE_LOG="+log)
	for _, s := range []string{"db1", "db2"} {
		if err := os.WriteFile(filepath.Join(states, s), []byte("Running\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// db2 is in maintenance by hand.
	if err := os.WriteFile(filepath.Join(states, "db2"), []byte("Maintenance, Running\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, conn := secondServer(t, "mx", 30_000)
	ag := startAgent(t, agent.Options{Conn: conn, Filter: catalog.Filter{Schemas: []string{"mx"}}})
	ag.waitState(t, "warming", 60*time.Second, func(s agent.Status) bool { return s.State == agent.Warming && s.Coverage.Known })
	run := func(server, url string) (string, int) {
		t.Helper()
		cmd := exec.Command("sh", maxscaleScript, server, url)
		cmd.Env = append(os.Environ(), "PATH="+path, "INNOWARM_MAXSCALE_STATE="+marks)
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		return string(out), code
	}
	state := func(server string) string {
		raw, err := os.ReadFile(filepath.Join(states, server))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(raw))
	}
	url := ag.base + "/ready"
	for _, s := range []string{"db1", "db2"} {
		for i := 0; i < 2; i++ {
			if out, code := run(s, url); code != 0 {
				t.Fatalf("%s while warming: exit %d: %s", s, code, out)
			}
		}
	}
	if state("db1") != "Maintenance, Running" || state("db2") != "Maintenance, Running" {
		t.Fatalf("while warming: db1 %q, db2 %q", state("db1"), state("db2"))
	}
	raw, _ := os.ReadFile(log)
	if n := strings.Count(string(raw), "set server db1 maintenance"); n != 1 {
		t.Errorf("db1 set into maintenance %d times, want once:\n%s", n, raw)
	}
	if strings.Contains(string(raw), "set server db2") {
		t.Errorf("db2, already in maintenance, was set again:\n%s", raw)
	}
	// No answer: nothing changes, and the script says why.
	dead := "http://" + freeAddr(t) + "/ready"
	if out, code := run("db1", dead); code == 0 || !strings.Contains(out, "left as it is") {
		t.Errorf("no agent: exit %d: %s", code, out)
	}

	// Something warms the table: ready.
	db, err := connection.Open(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.DB.Exec("SELECT COUNT(*) FROM " + sqltext.Table("mx", "wide")); err != nil {
		t.Fatal(err)
	}
	ag.waitState(t, "ready", 60*time.Second, inState(agent.Ready))
	for _, s := range []string{"db1", "db2"} {
		if out, code := run(s, url); code != 0 {
			t.Fatalf("%s once ready: exit %d: %s", s, code, out)
		}
	}
	if state("db1") != "Running" {
		t.Errorf("db1 once ready: %q, want out of maintenance", state("db1"))
	}
	if state("db2") != "Maintenance, Running" {
		t.Errorf("db2 (the operator's maintenance) once ready: %q", state("db2"))
	}
}
