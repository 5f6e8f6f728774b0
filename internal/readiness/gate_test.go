package readiness_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/readiness"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// The readiness gate of a user with SELECT on the schema and PROCESS (what the README asks
// for), right after a cold restart, must not say ready: without the statistics it counted
// each index as small as it could be (one page), so one resident page of each clustered
// index made a cold server "50% ready". On the database host the files give the sizes;
// elsewhere, with only information_schema.TABLES to go by, the gate refuses and names the
// grant. Once warm, the gate says ready, on the host and elsewhere for a user who may read
// the statistics.
func TestGateOfLeastPrivilegeUserOnColdServer(t *testing.T) {
	ctx := context.Background()
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	orders, items := sqltext.Table(db, "orders"), sqltext.Table(db, "items")
	sandboxtest.Exec(t,
		// A clustered index whose statistics count its off-page pages with its leaves.
		"CREATE TABLE "+orders+" (id INT PRIMARY KEY, cust INT NOT NULL, note TEXT, KEY cust (cust)) ROW_FORMAT=DYNAMIC",
		"INSERT INTO "+orders+" SELECT seq, seq * 7919 MOD 3001, IF(seq MOD 6 = 0, REPEAT(CHAR(65 + seq MOD 26), 20000 + seq * 37 MOD 20000), 'short') FROM "+srv.Series(db, 1, 3000)+" ORDER BY seq",
		"CREATE TABLE "+items+" (id INT PRIMARY KEY, order_id INT, sku CHAR(40), KEY order_id (order_id))",
		"INSERT INTO "+items+" SELECT seq, seq MOD 3000, CONCAT('sku-', seq * 31 MOD 99991) FROM "+srv.Series(db, 1, 60000)+" ORDER BY seq",
		"ANALYZE TABLE "+orders+", "+items,
		"FLUSH TABLES "+orders+", "+items+" FOR EXPORT", "UNLOCK TABLES",
		"DROP USER IF EXISTS gate_ro",
		"CREATE USER gate_ro IDENTIFIED BY 'gate-pw'",
		"GRANT SELECT ON "+sqltext.Ident(db)+".* TO gate_ro",
		"GRANT PROCESS ON *.* TO gate_ro",
	)
	t.Cleanup(func() { _, _ = sandboxtest.Conn(t).DB.Exec("DROP USER IF EXISTS gate_ro") })
	cold(t)

	// What the tables really have: counted as root on the host, from the files.
	cat, err := catalog.Load(ctx, sandboxtest.Conn(t), catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	_, truth, _, err := readiness.Selection{Conn: sandboxtest.Conn(t), Catalog: cat}.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if truth < 300 {
		t.Fatalf("the test tables have %d index pages: too few to tell", truth)
	}

	ro := []string{"-u", "gate_ro", "-D", db}
	probe := func(where gateSide, user []string, want string, timeout time.Duration) (readiness.Result, sandboxtest.Result) {
		t.Helper()
		args := append([]string{"inspect", "--wait-coverage", want, "--timeout", timeout.String(), "--interval", "500ms", "--json"}, user...)
		r := where.run(t, args...)
		var res readiness.Result
		if r.Code == 0 || r.Code == 3 {
			sandboxtest.JSON(t, []byte(r.Stdout), &res)
		}
		lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
		t.Logf("%s %v: exit %d, %s %s", where, user, r.Code, res.Detail, lines[len(lines)-1])
		return res, r
	}
	total := func(res readiness.Result) int64 {
		var covered, total int64
		if _, err := fmt.Sscanf(res.Detail, "%d of %d", &covered, &total); err != nil {
			t.Fatalf("detail %q: %v", res.Detail, err)
		}
		return total
	}

	// Cold, on the host: counted against the sizes in the files, far from ready.
	res, r := probe(onHost, ro, "40%", 2*time.Second)
	if r.Code != 3 || res.Reached {
		t.Fatalf("gate_ro on the host, cold: exit %d, %+v; want exit 3 (not ready)", r.Code, res)
	}
	if got := total(res); got != truth {
		t.Errorf("gate_ro on the host counts against %d pages; the files say %d", got, truth)
	}
	// Elsewhere, with only information_schema.TABLES: one line naming the grant, exit 2.
	if onHost.canLeave(t) {
		_, r = probe(elsewhere, ro, "40%", 2*time.Second)
		if r.Code != 2 || !strings.Contains(r.Stderr, "GRANT SELECT ON mysql.innodb_index_stats") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("gate_ro elsewhere: exit %d, %q; want exit 2 and one line naming the grant", r.Code, r.Stderr)
		}
		// Root elsewhere has the statistics: their upper bounds, never less than the truth.
		res, r = probe(elsewhere, []string{"-u", "root", "-D", db}, "40%", 2*time.Second)
		if r.Code != 3 || total(res) < truth {
			t.Errorf("root elsewhere, cold: exit %d, %+v; want exit 3 and at least %d pages counted", r.Code, res, truth)
		}
	}

	// Warm, LOB pages too: ready on the host, and for root elsewhere (whose bound of the
	// clustered index counts its LOB pages, resident now).
	if r := sandboxtest.CLI(t, sandboxtest.Run{}, append([]string{"warm", "-D", db, "--method", "scan", "--lob", "-q"}, sandboxtest.Sock(t)...)...); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	if res, r := probe(onHost, ro, "95%", 30*time.Second); r.Code != 0 || !res.Reached {
		t.Errorf("gate_ro on the host, warm: exit %d, %+v", r.Code, res)
	}
	if onHost.canLeave(t) {
		if res, r := probe(elsewhere, []string{"-u", "root", "-D", db}, "95%", 30*time.Second); r.Code != 0 || !res.Reached {
			t.Errorf("root elsewhere, warm: exit %d, %+v", r.Code, res)
		}
	}
}

// gateSide says where innowarm runs: on the database host (the test's own user, through
// the socket: the datadir is readable), or as if elsewhere (sandboxtest.CLIElsewhere).
type gateSide bool

const (
	onHost    gateSide = false
	elsewhere gateSide = true
)

func (g gateSide) String() string {
	if g == elsewhere {
		return "elsewhere"
	}
	return "on the host"
}

// canLeave says whether the test can run innowarm as if elsewhere (it needs root).
func (gateSide) canLeave(t *testing.T) bool {
	if !sandboxtest.CanRunElsewhere() {
		t.Logf("not root: innowarm cannot be run as another OS user here, the checks away from the host are left out")
		return false
	}
	return true
}

func (g gateSide) run(t *testing.T, args ...string) sandboxtest.Result {
	t.Helper()
	run := sandboxtest.Run{}
	for i, a := range args {
		if a == "-u" && i+1 < len(args) && args[i+1] == "gate_ro" {
			run.Env = []string{"MYSQL_PWD=gate-pw"}
		}
	}
	if g == elsewhere {
		return sandboxtest.CLIElsewhere(t, run, args...)
	}
	args = append(args, "--no-defaults", "-S", sandboxtest.Server(t).Socket)
	if run.Env == nil {
		args = append(args, "-u", "root")
	}
	return sandboxtest.CLI(t, run, args...)
}
