package agent_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/agent"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// haproxy is an haproxy started by a test on loopback: one listener in mode tcp in front of
// two servers, "a" and "b", each with an agent check and no other check (so that what takes
// a server out is the agent's answer).
type haproxy struct {
	cmd    *exec.Cmd
	stats  string // stats socket
	listen string // the frontend
	out    *sandboxtest.SyncBuffer
}

const agentInter = time.Second

func startHAProxy(t *testing.T, serverA, serverB int, agentA, agentB string) *haproxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/haproxy"); serr != nil {
			t.Fatal("haproxy is not installed: scripts/ensure-deps.sh agent installs Debian's package (make test does, through make deps)")
		}
		bin = "/usr/sbin/haproxy"
	}
	dir := sandboxtest.Dir(t)
	h := &haproxy{stats: filepath.Join(dir, "haproxy.sock"), listen: freeAddr(t), out: &sandboxtest.SyncBuffer{}}
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := fmt.Sprintf(`global
    stats socket %s mode 600 level admin
defaults
    mode tcp
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 2s
listen mysql
    bind %s
    balance roundrobin
    server a 127.0.0.1:%d weight 100 agent-check agent-addr 127.0.0.1 agent-port %s agent-inter %s
    server b 127.0.0.1:%d weight 100 agent-check agent-addr 127.0.0.1 agent-port %s agent-inter %s
`, h.stats, h.listen, serverA, port(agentA), agentInter, serverB, port(agentB), agentInter)
	cfgFile := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfgFile).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v: %s", err, out)
	}
	h.cmd = exec.Command(bin, "-db", "-f", cfgFile)
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy output:\n%s", h.out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := h.query("show info"); err == nil {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy's stats socket did not answer; output:\n%s", h.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// query sends one command to the stats socket.
func (h *haproxy) query(cmd string) (string, error) {
	c, err := net.DialTimeout("unix", h.stats, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(cmd + "\n")); err != nil {
		return "", err
	}
	raw, err := io.ReadAll(c)
	return string(raw), err
}

// serverStat is a server's line of `show stat`.
type serverStat struct {
	Status string // UP, DOWN (agent), no check (up, no health check), ...
	Weight int    // the effective weight
	Stot   int64  // sessions so far
	Agent  string // last agent check status
	// Chkdown counts the server's UP to DOWN transitions: one within a batch (a's agent,
	// starved on a loaded machine, failing its ping for a second) sends the batch elsewhere.
	Chkdown int64
}

func (s serverStat) down() bool { return strings.HasPrefix(s.Status, "DOWN") }

// stat reads `show stat` for the listener's servers a and b.
func (h *haproxy) stat(t *testing.T) map[string]serverStat {
	t.Helper()
	raw, err := h.query("show stat")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(raw, "# "))).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("show stat: %v: %q", err, raw)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	out := map[string]serverStat{}
	for _, r := range recs[1:] {
		if len(r) < len(recs[0])-1 || r[col["pxname"]] != "mysql" {
			continue
		}
		w, _ := strconv.Atoi(r[col["weight"]])
		n, _ := strconv.ParseInt(r[col["stot"]], 10, 64)
		down, _ := strconv.ParseInt(r[col["chkdown"]], 10, 64)
		out[r[col["svname"]]] = serverStat{Status: r[col["status"]], Weight: w, Stot: n, Agent: r[col["agent_status"]], Chkdown: down}
	}
	return out
}

// batch opens n new MySQL connections through the proxy, one after the other (each does the
// whole handshake, so the servers see clients, not aborted connects), and returns how many
// each server took, from the proxy's session counters.
func (h *haproxy) batch(t *testing.T, n int) (a, b int64) {
	t.Helper()
	host, port, _ := net.SplitHostPort(h.listen)
	p, _ := strconv.Atoi(port)
	o := connection.ForTCP(host, p, "root", "")
	o.SSLMode = connection.SSLDisabled
	o.ConnectTimeout = 10 * time.Second
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := h.stat(t)
	for i := 0; i < n; i++ {
		c, err := connector.Connect(context.Background())
		if err != nil {
			t.Fatalf("connection %d through haproxy: %v", i, err)
		}
		c.Close()
	}
	after := h.stat(t)
	return after["a"].Stot - before["a"].Stot, after["b"].Stot - before["b"].Stot
}

// allUp says the warm server's agent answered only "100% up" between two of its statuses.
func allUp(before, after agent.Status) bool {
	var last int64
	if before.AgentCheck != nil {
		for _, a := range before.AgentCheck.Recent {
			last = max(last, a.Seq)
		}
	}
	if after.AgentCheck == nil {
		return true
	}
	for _, a := range after.AgentCheck.Recent {
		if a.Seq > last && strings.TrimSpace(a.Text) != "100% up" {
			return false
		}
	}
	return true
}

// sample is one batch while b warms.
type sample struct {
	weightB    int     // b's weight in the proxy during the batch (percent of 100)
	coverage   float64 // the coverage of the agent's answer that set it
	a, b       int64   // connections each server took
	liveBefore float64 // b's coverage per its agent just before and after the batch
	liveAfter  float64
}

// A real HAProxy in front of two servers, each with an agent: while b warms (a warm at its
// start, rate-capped so that it spans many checks), b's share of new connections follows its
// coverage and a takes the rest; once b is ready they share equally; a killed b is out of
// rotation at the agent's next answer.
func TestHAProxyFollowsCoverage(t *testing.T) {
	// a: the shared server, its table resident (it was just written).
	hot := sandboxtest.Schema(t)
	wideTable(t, sandboxtest.Conn(t), hot, 20_000)
	sbA := sandboxtest.Server(t)
	agentA := startAgent(t, agent.Options{Conn: sbA.ConnOptions(), Filter: catalog.Filter{Schemas: []string{hot}}, AgentCheckListen: "127.0.0.1:0"})
	agentA.waitState(t, "a ready", 60*time.Second, inState(agent.Ready))

	// b: a server of its own, cold, stopped until the proxy runs.
	sbB, connB := secondServer(t, "cold", 150_000)
	if _, err := sbB.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	const rate = 2 << 20 // 2 MiB/s: the table's ~40 MiB take at least 20 s, whatever the machine's load
	agentB := startAgent(t, agent.Options{Conn: connB, Filter: catalog.Filter{Schemas: []string{"cold"}}, Warm: scanWarm(rate),
		AgentCheckListen: "127.0.0.1:0", MinWeight: 1, Interval: 250 * time.Millisecond})
	agentB.waitState(t, "b starting", 30*time.Second, inState(agent.Starting))

	h := startHAProxy(t, sbA.Port, sbB.Port, agentA.check, agentB.check)
	waitProxy(t, h, "b out and a at full weight", func(s map[string]serverStat) bool {
		return s["b"].down() && s["a"].Weight == 100 && !s["a"].down()
	})
	if a, b := h.batch(t, 20); a != 20 || b != 0 {
		t.Fatalf("with b down: a took %d, b %d of 20", a, b)
	}

	// b starts cold; its agent warms it.
	if _, err := sbB.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sbB.Port != mustPort(t, h, "b") {
		t.Fatalf("b came back on another port (%d)", sbB.Port)
	}
	var samples []sample
	const n = 100
	firstWeight := -1 // b's weight in the proxy when it first came up, batch or not
	for {
		st := h.stat(t)
		if st["b"].down() {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if firstWeight < 0 {
			firstWeight = st["b"].Weight
		}
		before := agentB.status(t)
		beforeA := agentA.status(t)
		wb := st["b"].Weight
		a, b := h.batch(t, n)
		after := agentB.status(t)
		end := h.stat(t)
		if end["b"].Weight != wb {
			continue // a check landed during the batch: its share mixes two weights
		}
		if end["a"].Weight != st["a"].Weight || end["a"].Chkdown != st["a"].Chkdown || end["b"].Chkdown != st["b"].Chkdown || st["a"].down() || end["a"].down() || !allUp(beforeA, agentA.status(t)) {
			t.Logf("a batch with a server going down or a's weight moving (a %+v → %+v, b %+v → %+v): not a sample of the coverage", st["a"], end["a"], st["b"], end["b"])
			continue
		}
		cov, ok := answered(after, wb)
		if !ok {
			t.Fatalf("b's weight %d in the proxy matches none of the agent's last answers: %+v", wb, after.AgentCheck.Recent)
		}
		samples = append(samples, sample{weightB: wb, coverage: cov, a: a, b: b, liveBefore: before.Coverage.Coverage, liveAfter: after.Coverage.Coverage})
		if wb == 100 && after.State == agent.Ready {
			break
		}
		if len(samples) > 2000 {
			t.Fatal("b never reached full weight")
		}
	}
	// The record for the closing note.
	distinct := map[int]bool{}
	for i, s := range samples {
		rel, share := float64(s.b)/float64(max(s.a, 1)), float64(s.b)/float64(s.a+s.b)
		t.Logf("sample %3d: b weight %3d%% (answered coverage %5.1f%%, live %5.1f%% → %5.1f%%): a %3d, b %3d connections; b per a %.3f, b's share %.3f (expected %.3f)",
			i, s.weightB, 100*s.coverage, 100*s.liveBefore, 100*s.liveAfter, s.a, s.b, rel, share, s.coverage/(1+s.coverage))
		distinct[s.weightB] = true
		if s.a+s.b != n {
			t.Errorf("sample %d: %d + %d connections of %d", i, s.a, s.b, n)
		}
		// The share follows the coverage: per connection a warm server takes, b takes its
		// coverage's worth (within 10 points).
		want := s.coverage
		if s.weightB == 100 {
			want = 1
		}
		if math.Abs(rel-want) > 0.10 {
			t.Errorf("sample %d: b took %.3f connections per connection a took, coverage %.3f: more than 10 points apart", i, rel, want)
		}
	}
	var worstAnswered, worstLive float64
	for _, s := range samples {
		rel := float64(s.b) / float64(max(s.a, 1))
		want := s.coverage
		if s.weightB == 100 {
			want = 1
		}
		worstAnswered = max(worstAnswered, math.Abs(rel-want))
		worstLive = max(worstLive, math.Abs(rel-s.liveBefore), math.Abs(rel-s.liveAfter))
	}
	t.Logf("%d batches of %d connections over %d weights from %d%% to ready: b's connections per a's connection within %.1f points of the coverage the proxy applied, within %.1f points of b's live coverage around the batch",
		len(samples), n, len(distinct), samples[0].weightB, 100*worstAnswered, 100*worstLive)
	// Followed from the start: the proxy let b in at a weight of about one check's worth of
	// warm progress (at most twice the largest step between two weights it applied: the
	// agent's own measure lags a check), not at a level the warm reached later. The first clean batch may come a few checks later on a loaded
	// machine (a check landing in a batch discards it), so it is not the measure.
	maxStep, prev := 0, firstWeight
	for _, s := range samples {
		if s.weightB != 100 {
			maxStep = max(maxStep, s.weightB-prev)
		}
		prev = s.weightB
	}
	if firstWeight > max(5, 2*maxStep) {
		t.Errorf("b came up in the proxy at weight %d%%, more than two checks' steps (the largest was %d points): the warm was not followed from 0%%", firstWeight, maxStep)
	}
	t.Logf("b came up in the proxy at weight %d%%; the first clean batch saw %d%%; the largest step between weights %d points", firstWeight, samples[0].weightB, maxStep)
	if len(distinct) < 6 {
		t.Errorf("only %d distinct weights between 0%% and ready: the warm was not followed check by check", len(distinct))
	}

	// b dies: out of rotation at the agent's next answer.
	last := agentB.status(t).AgentCheck.Answers
	t0 := time.Now()
	sbB.Kill()
	waitProxy(t, h, "b out after its kill", func(s map[string]serverStat) bool { return s["b"].down() })
	out := time.Since(t0)
	st := agentB.status(t)
	var firstDown int64
	for _, ans := range st.AgentCheck.Recent {
		if ans.Seq > last && strings.HasPrefix(ans.Text, "down") {
			firstDown = ans.Seq
			break
		}
	}
	if firstDown == 0 || firstDown-last > 2 {
		t.Errorf("b's agent said down at answer %d, the kill came after answer %d: want within two checks; answers %+v", firstDown, last, st.AgentCheck.Recent)
	}
	t.Logf("kill → b DOWN in the proxy: %s (%.2f agent intervals); the agent's %d. answer after the kill said down", out.Round(time.Millisecond), out.Seconds()/agentInter.Seconds(), firstDown-last)
	if a, b := h.batch(t, 20); a != 20 || b != 0 {
		t.Errorf("with b killed: a took %d, b %d of 20", a, b)
	}
}

// answered is the coverage of the agent's most recent answer that set weight w.
func answered(st agent.Status, w int) (float64, bool) {
	rec := st.AgentCheck.Recent
	for i := len(rec) - 1; i >= 0; i-- {
		if rec[i].Weight == w && strings.HasSuffix(rec[i].Text, "% up") {
			if w == 100 {
				return 1, true
			}
			return rec[i].Coverage, true
		}
	}
	return 0, false
}

func waitProxy(t *testing.T, h *haproxy, what string, cond func(map[string]serverStat) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := h.stat(t)
		if cond(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute: %+v", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustPort is the port the proxy has for a server (from show servers state).
func mustPort(t *testing.T, h *haproxy, server string) int {
	t.Helper()
	raw, err := h.query("show servers state mysql")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(raw), "\n")
	var header []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == "#" {
			header = f[1:]
			continue
		}
		if header == nil || len(f) != len(header) {
			continue
		}
		row := map[string]string{}
		for i, name := range header {
			row[name] = f[i]
		}
		if row["srv_name"] == server {
			p, _ := strconv.Atoi(row["srv_port"])
			return p
		}
	}
	t.Fatalf("no server %s in: %s", server, raw)
	return 0
}
