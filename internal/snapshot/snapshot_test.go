package snapshot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/sandbox"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/snapshot"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 512 << 20}) }

// shop is a small schema created the same way on both servers, table by table in the order
// given, so that the second server can get other tablespace ids.
func shopTables(srv flavor.Server) map[string][]string {
	return map[string][]string{
		"orders": {
			"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer INT, placed DATE, note VARCHAR(100), KEY by_customer (customer, placed))",
			"INSERT INTO shop.orders SELECT seq, seq MOD 5000, DATE_ADD('2024-01-01', INTERVAL seq MOD 365 DAY), " + srv.Hex32("seq") + " FROM " + srv.Series("shop", 1, 60000) + " ORDER BY seq",
		},
		"items": {
			"CREATE TABLE shop.items (order_id INT, line INT, sku VARCHAR(20), qty INT, PRIMARY KEY (order_id, line), KEY by_sku (sku))",
			"INSERT INTO shop.items SELECT seq DIV 3, seq MOD 3, CONCAT('sku-', seq MOD 997), seq MOD 7 FROM " + srv.Series("shop", 1, 90000) + " ORDER BY seq",
		},
		"docs": {
			"CREATE TABLE shop.docs (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY ft_body (body))",
			"INSERT INTO shop.docs SELECT seq, CONCAT('word', seq, ' common ', seq MOD 50) FROM " + srv.Series("shop", 1, 3000) + " ORDER BY seq",
		},
	}
}

func createShop(t *testing.T, db *connection.Conn, order []string) {
	t.Helper()
	exec := func(q string) {
		if _, err := db.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("DROP DATABASE IF EXISTS shop")
	exec("CREATE DATABASE shop")
	for _, name := range order {
		for _, q := range shopTables(db.Server)[name] {
			exec(q)
		}
	}
	exec("ANALYZE TABLE shop.orders, shop.items, shop.docs")
}

// touchOrders and touchRest read part of the shop, as an application would: one index of
// orders; the items of some orders and a FULLTEXT search.
func touchOrders(t *testing.T, db *connection.Conn) {
	t.Helper()
	run(t, db, "SELECT COUNT(*) FROM shop.orders FORCE INDEX (by_customer) WHERE customer BETWEEN 100 AND 900")
}

func touchRest(t *testing.T, db *connection.Conn) {
	t.Helper()
	run(t, db, "SELECT SUM(qty) FROM shop.items WHERE order_id BETWEEN 1000 AND 9000",
		"SELECT COUNT(*) FROM shop.docs WHERE MATCH(body) AGAINST ('common')")
}

func run(t *testing.T, db *connection.Conn, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := db.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func cold(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	if _, err := sb.ColdRestart(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type coverage struct {
	Entries  int64            `json:"entries"`
	Resolved int64            `json:"resolved"`
	Dropped  map[string]int64 `json:"dropped"`
	Resident int64            `json:"resident"`
	Coverage float64          `json:"coverage"`
	Rows     []struct {
		Table, Index string
		Manifest     int64   `json:"manifest_pages"`
		Coverage     float64 `json:"coverage"`
	} `json:"rows"`
}

func inspectManifest(t *testing.T, socket, path string) coverage {
	t.Helper()
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "inspect", "--no-defaults", "-S", socket, "-u", "root", "--manifest", path, "--json")
	if r.Code != 0 {
		t.Fatalf("inspect --manifest: %s", r.Stderr)
	}
	var c coverage
	sandboxtest.JSON(t, []byte(r.Stdout), &c)
	return c
}

// Round trip on one server, then on a second server where the tables were created in another
// order (other tablespace ids), natively and by scans: the right pages come back.
func TestSnapshotWarmFromRoundTripAndOtherServer(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	createShop(t, conn, []string{"orders", "items", "docs"})
	// InnoDB splits the LRU list into a young and an old part only once it holds 512 pages:
	// until then every page read goes to the list's head, afterwards to the head of the old
	// part. So, after a cold restart: the orders' pages are read into the short list (young),
	// a table outside the snapshot makes the list long, and the rest of the shop is read
	// into the old part.
	run(t, conn, "CREATE DATABASE IF NOT EXISTS filler",
		"CREATE TABLE IF NOT EXISTS filler.pad (id INT PRIMARY KEY, pad CHAR(200) NOT NULL)",
		"INSERT IGNORE INTO filler.pad SELECT seq, REPEAT('x', 200) FROM "+sandboxtest.Flavor(t).Series("filler", 1, 60000)+" ORDER BY seq")
	cold(t, sb)
	conn = sandboxtest.Reconnect(t)
	touchOrders(t, conn)
	run(t, conn, "SELECT COUNT(*) FROM filler.pad FORCE INDEX (PRIMARY)")
	touchRest(t, conn)

	dir := sandboxtest.Dir(t)
	path := filepath.Join(dir, "shop.manifest.gz")
	res, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: path, Filter: catalog.Filter{Schemas: []string{"shop"}}, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries < 60 || res.Bytes == 0 {
		t.Fatalf("capture: %+v", res)
	}
	t.Logf("snapshot: %d pages in %.3f s (page list %.3f s), %d bytes", res.Entries, res.Seconds, res.ReadSeconds, res.Bytes)
	// The manifest must say which pages are old (on MariaDB from their position, since
	// INNODB_BUFFER_PAGE_LRU.IS_OLD is NULL there).
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var young, old int64
	byTable := map[string]manifest.PageCount{}
	for i, c := range m.Counts {
		young, old = young+c.Young, old+c.Old
		tc := byTable[m.Objects[i].Table]
		tc.Young, tc.Old = tc.Young+c.Young, tc.Old+c.Old
		byTable[m.Objects[i].Table] = tc
	}
	t.Logf("manifest: %d young, %d old; by table %+v", young, old, byTable)
	if byTable["orders"].Young == 0 || byTable["items"].Old == 0 {
		t.Errorf("manifest of %d pages: orders %+v, items %+v; want the orders' pages young, the items' old", res.Entries, byTable["orders"], byTable["items"])
	}
	// Hottest first: young before old, nearest the list's head first. The orders' pages,
	// read while the list was short, sit nearer the head than the items' pages, read into
	// the old part, whose young ones are those the moving split point passed over. (The
	// FULLTEXT table's pages are left out: InnoDB's background FULLTEXT thread reads some at
	// startup, at its own time.)
	manifest.SortByHotness(m.Entries)
	// Compare the tables' mean ranks, not their first pages: one of the items' pages the
	// split point passed over can sit among the orders' pages without the order being wrong.
	rankSum, count := map[string]float64{}, map[string]float64{}
	for i, e := range m.Entries {
		tb := m.Objects[e.Object].Table
		rankSum[tb] += float64(i)
		count[tb]++
	}
	meanRank := func(tb string) float64 { return rankSum[tb] / max(count[tb], 1) }
	if m.Entries[0].Old || count["orders"] == 0 || count["items"] == 0 || meanRank("orders") >= meanRank("items") {
		t.Errorf("hotness order: first entry old=%v; mean rank of the orders' pages %.1f, of the items' %.1f; want a young entry first and orders before items",
			m.Entries[0].Old, meanRank("orders"), meanRank("items"))
	}

	// The server's own dump file must come back byte for byte.
	dump := filepath.Join(sb.Datadir, "ib_buffer_pool")
	original := []byte("5,0\n5,1\n")
	cold(t, sb)
	if err := os.WriteFile(dump, original, 0o644); err != nil {
		t.Fatal(err)
	}
	if c := inspectManifest(t, sb.Socket, path); c.Coverage > 0.2 {
		t.Fatalf("after a cold restart the manifest should be mostly cold: %.3f", c.Coverage)
	}
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "warm", "--no-defaults", "-S", sb.Socket, "-u", "root", "--from", path, "--json")
	if r.Code != 0 {
		t.Fatalf("warm --from: %s", r.Stderr)
	}
	var out struct {
		Result struct {
			Method   string `json:"method"`
			Manifest struct {
				CoverageAfter float64 `json:"coverage_after"`
			} `json:"manifest"`
			Native struct {
				Requested int64  `json:"pages_requested"`
				Restored  string `json:"dump_file_restored"`
			} `json:"native"`
		} `json:"result"`
	}
	sandboxtest.JSON(t, []byte(r.Stdout), &out)
	if out.Result.Method != "native" || out.Result.Manifest.CoverageAfter < 0.99 || out.Result.Native.Requested == 0 {
		t.Errorf("warm --from on the same server: %s", r.Stdout)
	}
	t.Logf("%s: warm --from after a cold restart: %.1f%% of the snapshot's pages resident", sandboxtest.Flavor(t), 100*out.Result.Manifest.CoverageAfter)
	if got, _ := os.ReadFile(dump); !bytes.Equal(got, original) {
		t.Errorf("the server's dump file was not restored: %q (%s)", got, out.Result.Native.Restored)
	}
	if c := inspectManifest(t, sb.Socket, path); c.Coverage < 0.99 || c.Resolved != c.Entries {
		t.Errorf("inspect --manifest after warm: %+v", c)
	}

	// A second server: a table more at the front and the rest in reverse order, so every
	// tablespace id differs.
	sb2 := sandboxtest.SecondServer(t, 256<<20)
	conn2, err := sb2.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	if _, err := conn2.DB.Exec("CREATE DATABASE other"); err != nil {
		t.Fatal(err)
	}
	conn2.DB.Exec("CREATE TABLE other.pad (id INT PRIMARY KEY)")
	createShop(t, conn2, []string{"docs", "items", "orders"})
	var id1, id2 uint32
	conn.DB.QueryRow("SELECT SPACE FROM " + conn.Server.TablesTable() + " WHERE NAME = 'shop/orders'").Scan(&id1)
	conn2.DB.QueryRow("SELECT SPACE FROM " + conn2.Server.TablesTable() + " WHERE NAME = 'shop/orders'").Scan(&id2)
	if id1 == id2 || id2 == 0 {
		t.Fatalf("the test needs other space ids on the second server: %d and %d", id1, id2)
	}
	for _, method := range []string{"native", "scan"} {
		cold(t, sb2)
		r := sandboxtest.CLI(t, sandboxtest.Run{}, "warm", "--no-defaults", "-S", sb2.Socket, "-u", "root", "--from", path, "--method", method, "-q")
		if r.Code != 0 {
			t.Fatalf("%s on the second server: %s", method, r.Stderr)
		}
		c := inspectManifest(t, sb2.Socket, path)
		// Scans cannot read FULLTEXT auxiliary tables; the native loader can.
		want := 0.95
		if method == "scan" {
			want = 0.8
		}
		// Built apart, the second server's files can differ by a page here and there (FULLTEXT
		// auxiliary tables fill at their own pace): a page past the end of a file is dropped.
		if float64(c.Resolved) < 0.97*float64(c.Entries) || c.Coverage < want {
			t.Errorf("%s on the second server: %d of %d entries resolved (dropped %v), coverage %.3f", method, c.Resolved, c.Entries, c.Dropped, c.Coverage)
		}
		for _, row := range c.Rows {
			if method == "scan" && strings.HasPrefix(row.Index, "fts:") {
				continue
			}
			if row.Manifest > 5 && row.Coverage < 0.9 {
				t.Errorf("%s: %s.%s has %.2f of its manifest pages", method, row.Table, row.Index, row.Coverage)
			}
		}
		if !strings.Contains(r.Stdout, "fts:") && method == "native" && !strings.Contains(r.Stdout, "docs") {
			t.Errorf("the FULLTEXT table's pages should be loaded too:\n%s", r.Stdout)
		}
	}
}

// Bad manifests are refused with one line before anything is loaded.
func TestBadManifestsLoadNothing(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	createShop(t, conn, []string{"orders"})
	touch2 := "SELECT COUNT(*) FROM shop.orders"
	conn.DB.Exec(touch2)
	dir := sandboxtest.Dir(t)
	good := filepath.Join(dir, "good.manifest")
	if _, err := snapshot.Capture(ctx, conn, snapshot.Options{Path: good, ToolVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)/2] ^= 0x01
	m, err := manifest.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	m.Header.PageSize = 8192
	var eight bytes.Buffer
	if _, err := manifest.Write(&eight, m); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path, want string
	}{
		"truncated":      {write("truncated", raw[:len(raw)*2/3]), "truncated"},
		"corrupt":        {write("corrupt", flipped), "manifest"},
		"wrong version":  {write("version", bytes.Replace(raw, []byte("innowarm-manifest 3"), []byte("innowarm-manifest 9"), 1)), "version"},
		"wrong pagesize": {write("pagesize", eight.Bytes()), "8 KiB"},
		"not a manifest": {write("notes.txt", []byte("hello\n")), "not an innowarm manifest"},
		"missing":        {filepath.Join(dir, "absent"), "absent"},
	}
	cold(t, sb)
	conn = sandboxtest.Reconnect(t)
	var before int64
	conn.DB.QueryRow("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_PAGES_READ'").Scan(&before)
	for name, c := range cases {
		for _, method := range []string{"native", "scan"} {
			r := sandboxtest.CLI(t, sandboxtest.Run{}, "warm", "--no-defaults", "-S", sb.Socket, "-u", "root", "--from", c.path, "--method", method)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 2 || len(lines) != 1 || !strings.Contains(strings.ToLower(r.Stderr), strings.ToLower(c.want)) {
				t.Errorf("%s (%s): exit %d, stderr %q (want one line mentioning %q)", name, method, r.Code, r.Stderr, c.want)
			}
		}
	}
	var after int64
	conn.DB.QueryRow("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_PAGES_READ'").Scan(&after)
	if after-before > 50 {
		t.Errorf("refused manifests still read %d pages", after-before)
	}
}

// Ctrl-C during a native load aborts it on the server, puts the dump file back and exits 130.
// The server's disk reads are throttled, so that the load is surely running at the signal.
func TestInterruptNativeLoad(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	bigOnce.Do(func() { createBig(t, conn) })
	dump := filepath.Join(sb.Datadir, "ib_buffer_pool")
	original := []byte("0,1\n")
	cold(t, sb)
	conn = sandboxtest.Reconnect(t)
	st := sb.Status(context.Background())
	unthrottle := sandboxtest.ThrottleReads(t, st.Pid, sb.Datadir, 8<<20)
	defer unthrottle()
	os.WriteFile(dump, original, 0o644)
	cmd := exec.Command(sandboxtest.Binary(t), "warm", "--no-defaults", "-S", sb.Socket, "-u", "root", "-D", "bigdb", "--method", "native")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	status := func() string {
		var n, v string
		conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").Scan(&n, &v)
		return v
	}
	deadline := time.Now().Add(30 * time.Second)
	// (MySQL's status before any load, "Loading of buffer pool not started", is no load.)
	for !flavor.LoadInProgress(status()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // well into the load
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(t0)
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err == nil {
		code = 0
	}
	t.Logf("exit %d %s after the signal", code, took)
	// The load runs about 5 s at the throttled 8 MB/s: a load not completed at the exit (and
	// "aborted" below) shows the warm did not wait for it, whatever the machine's speed.
	if loadEnded := strings.Contains(status(), "completed"); code != 130 || loadEnded {
		t.Errorf("exit %d after %s, load completed %v (want 130 before the load could end); stderr %s", code, took, loadEnded, stderr.String())
	}
	// The throttled disk may keep the loader busy with reads it had queued for a while.
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(status(), "aborted") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if final := status(); !strings.Contains(final, "aborted") {
		t.Errorf("load status after the interrupt: %q (want aborted)", final)
	}
	if got, _ := os.ReadFile(dump); !bytes.Equal(got, original) {
		t.Errorf("dump file not restored after the interrupt: %q", got)
	}
}

var bigOnce sync.Once

// createBig makes a ~45 MB table: at 8 MB/s its native load lasts about 5 s.
func createBig(t *testing.T, conn *connection.Conn) {
	t.Helper()
	for _, q := range []string{
		"DROP DATABASE IF EXISTS bigdb", "CREATE DATABASE bigdb",
		"CREATE TABLE bigdb.wide (id INT PRIMARY KEY, pad CHAR(250) NOT NULL)",
		"INSERT INTO bigdb.wide SELECT seq, REPEAT(CHAR(65 + seq MOD 26), 250) FROM " + conn.Server.Series("bigdb", 1, 150000) + " ORDER BY seq",
	} {
		if _, err := conn.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// --every keeps capturing, keeps N previous manifests, and a stop ends it cleanly.
func TestEveryAndKeep(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	createShop(t, conn, []string{"items", "orders"})
	cold(t, sb)
	conn = sandboxtest.Reconnect(t)
	run(t, conn, "SELECT COUNT(*) FROM shop.items")
	dir := sandboxtest.Dir(t)
	path := filepath.Join(dir, "hot.manifest")
	cmd := exec.Command(sandboxtest.Binary(t), "snapshot", "--no-defaults", "-S", sb.Socket, "-u", "root", "-o", path, "--every", "1s", "--keep", "2", "--json")
	var stdout sandboxtest.SyncBuffer
	cmd.Stdout = &stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Captures are counted as they are printed, not expected at times: a busy machine
	// spaces them out. Pages read from disk after the first capture are seen touched by
	// the next one.
	captures := func() int {
		n := 0
		for dec := json.NewDecoder(strings.NewReader(stdout.String())); ; n++ {
			var r snapshot.Result
			if dec.Decode(&r) != nil {
				return n
			}
		}
	}
	awaitCaptures := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); captures() < n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d captures at --every 1s in 2 minutes, want %d", captures(), n)
			}
		}
	}
	awaitCaptures(1)
	touchOrders(t, conn)
	awaitCaptures(3)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if err != nil {
		t.Errorf("--every stopped by SIGTERM should exit 0, got %v", err)
	}
	for _, p := range []string{path, path + ".1", path + ".2"} {
		if _, err := manifest.Verify(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Error("--keep 2 kept a third previous manifest")
	}
	// Each manifest of --every carries the history of the captures before it: the orders'
	// pages, read between captures, are scored (seen touched) and were held by fewer
	// captures than the items' pages, resident all along. (Which of the two ranks first
	// depends on whether the pool evicts: TestHistoryOfAPoolThatHasNotEvicted.)
	m, err := manifest.Load(path)
	if err != nil || m.Header.FormatVersion != manifest.VersionFor(m.Objects) || m.Header.Captures < 3 || m.Header.KeyedEntries == 0 || len(m.Entries) == 0 {
		t.Fatalf("latest manifest: %v, header %+v", err, m.Header)
	}
	var orders, items, ordersScored, ordersSeenAll, itemsSeenAll int
	for _, e := range m.Entries {
		all := int(e.Seen) == m.Header.Captures
		switch m.Objects[e.Object].Table {
		case "orders":
			orders++
			if e.Score > 0 {
				ordersScored++
			}
			if all {
				ordersSeenAll++
			}
		case "items":
			items++
			if all {
				itemsSeenAll++
			}
		}
	}
	// (An orders page or two may have been read before the first capture: its index root
	// when the table was opened.)
	if orders == 0 || items == 0 || ordersScored < orders-2 || ordersSeenAll > 2 || itemsSeenAll != items {
		t.Errorf("%d captures; orders: %d pages, %d scored, %d seen by all; items: %d pages, %d seen by all", m.Header.Captures, orders, ordersScored, ordersSeenAll, items, itemsSeenAll)
	}
	var res snapshot.Result
	dec := json.NewDecoder(strings.NewReader(stdout.String()))
	if err := dec.Decode(&res); err != nil || res.Entries == 0 {
		t.Errorf("--json summary: %+v %v", res, err)
	}
}

func TestSnapshotBadInput(t *testing.T) {
	sb := sandboxtest.Server(t)
	dir := sandboxtest.Dir(t)
	notManifest := filepath.Join(dir, "precious.txt")
	os.WriteFile(notManifest, []byte("do not overwrite"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "-o FILE"},
		{[]string{"-o", "-", "--every", "1m"}, 2, "--every needs a file"},
		{[]string{"-o", filepath.Join(dir, "x"), "--every", "10ms"}, 2, "--every"},
		{[]string{"-o", filepath.Join(dir, "x"), "--keep", "-1"}, 2, "--keep"},
		{[]string{"-o", notManifest}, 2, "not an innowarm manifest"},
		{[]string{"-o", filepath.Join(dir, "no-such-dir", "x")}, 2, "no-such-dir"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := append([]string{"snapshot", "--no-defaults", "-S", sb.Socket, "-u", "root"}, c.args...)
			r := sandboxtest.CLI(t, sandboxtest.Run{}, args...)
			if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("%v: exit %d, %q (want %d, %q)", c.args, r.Code, r.Stderr, c.code, c.want)
			}
		})
	}
	if b, _ := os.ReadFile(notManifest); string(b) != "do not overwrite" {
		t.Error("snapshot overwrote a file that is not a manifest")
	}
	r := sandboxtest.CLI(t, sandboxtest.Run{}, "snapshot", "--no-defaults", "-S", sb.Socket, "-u", "root", "-o", "-")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "innowarm-manifest 3") || !strings.Contains(r.Stderr, "snapshot:") {
		t.Errorf("-o -: exit %d, stdout %.40q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
