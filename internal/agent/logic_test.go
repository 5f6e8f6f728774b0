package agent

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/exitcode"
)

func validOptions() Options {
	return Options{Filter: catalog.Filter{Schemas: []string{"shop"}}, ReadyCoverage: 0.95, Interval: time.Second, HttpListen: DefaultHTTPListen}
}

// Never an open port by surprise: anything but loopback needs TLS and authentication
// (HTTP) or an allow list (agent check), and says which flag is missing.
func TestExposureRules(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(cert, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		edit  func(*Options)
		field string // "" = valid
	}{
		{"loopback default", func(*Options) {}, ""},
		{"localhost", func(o *Options) { o.HttpListen = "localhost:9107" }, ""},
		{"ipv6 loopback", func(o *Options) { o.HttpListen = "[::1]:9107" }, ""},
		{"all interfaces, plain", func(o *Options) { o.HttpListen = ":9107" }, "HttpListen"},
		{"pod address, plain", func(o *Options) { o.HttpListen = "10.1.2.3:9107" }, "HttpListen"},
		{"host name, plain", func(o *Options) { o.HttpListen = "db1.example:9107" }, "HttpListen"},
		{"TLS without auth", func(o *Options) { o.HttpListen, o.TlsCert, o.TlsKey = ":9107", cert, cert }, "HttpListen"},
		{"auth without TLS", func(o *Options) { o.HttpListen, o.AuthTokenFile = ":9107", secret }, "HttpListen"},
		{"TLS and token", func(o *Options) { o.HttpListen, o.TlsCert, o.TlsKey, o.AuthTokenFile = ":9107", cert, cert, secret }, ""},
		{"insecure, said so", func(o *Options) { o.HttpListen, o.InsecureListen = ":9107", true }, ""},
		{"cert without key", func(o *Options) { o.TlsCert = cert }, "TlsCert"},
		{"missing token file", func(o *Options) { o.AuthTokenFile = filepath.Join(dir, "nope") }, "AuthTokenFile"},
		{"no port", func(o *Options) { o.HttpListen = "127.0.0.1" }, "HttpListen"},
		{"agent check on loopback", func(o *Options) { o.AgentCheckListen = "127.0.0.1:9108" }, ""},
		{"agent check outside, no allow list", func(o *Options) { o.AgentCheckListen = "0.0.0.0:9108" }, "AgentCheckListen"},
		{"agent check outside, allow list", func(o *Options) {
			o.AgentCheckListen = "0.0.0.0:9108"
			o.AgentCheckAllow, _ = ParseAllow("10.0.0.10,10.0.1.0/24")
		}, ""},
		{"allow list without listener", func(o *Options) { o.AgentCheckAllow, _ = ParseAllow("10.0.0.10") }, "AgentCheckAllow"},
		{"nothing served", func(o *Options) { o.HttpListen = "" }, "HttpListen"},
		{"only the agent check", func(o *Options) { o.HttpListen, o.AgentCheckListen = "", "127.0.0.1:9108" }, ""},
		{"warming status 500", func(o *Options) { o.WarmingStatus = 500 }, "WarmingStatus"},
		{"warming status 429", func(o *Options) { o.WarmingStatus = 429 }, ""},
		{"drain mode", func(o *Options) { o.AgentCheckWhenGone = "drain" }, ""},
		{"maint mode", func(o *Options) { o.AgentCheckWhenGone = "maint" }, "AgentCheckWhenGone"},
		{"threshold 0", func(o *Options) { o.ReadyCoverage = 0 }, "ReadyCoverage"},
		{"interval 10ms", func(o *Options) { o.Interval = 10 * time.Millisecond }, "Interval"},
		{"snapshot file without interval", func(o *Options) { o.SnapshotTo = "/tmp/x" }, "SnapshotEvery"},
		{"min weight 101", func(o *Options) { o.MinWeight = 101 }, "MinWeight"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := validOptions()
			c.edit(&o)
			err := o.Validate()
			var fe *exitcode.FieldError
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.field != "" && err == nil:
				t.Fatalf("accepted; want an error about %s", c.field)
			case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field || exitcode.Of(err) != exitcode.Usage):
				t.Fatalf("error %v (field %+v, exit %d); want a usage error about %s", err, fe, exitcode.Of(err), c.field)
			}
		})
	}
	o := validOptions()
	o.Filter = catalog.Filter{}
	if err := o.Validate(); err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--manifest") {
		t.Errorf("no target: %v", err)
	}
}

func TestParseAllow(t *testing.T) {
	got, err := ParseAllow(" 10.0.0.10, 10.0.1.7/24 ,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.10/32", "10.0.1.0/24", "fd00::/8"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("%d: %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0", "db1", "10.0.0.0/33"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	a := &Agent{o: Options{AgentCheckAllow: got}}
	for addr, ok := range map[string]bool{"10.0.0.10:5000": true, "10.0.0.11:5000": false, "10.0.1.200:1": true, "[fd00::1]:2": true, "[::ffff:10.0.0.10]:3": true, "192.168.0.1:4": false} {
		ta, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if a.allowed(ta) != ok {
			t.Errorf("%s allowed = %v", addr, !ok)
		}
	}
}

func TestWeight(t *testing.T) {
	cases := []struct {
		state    State
		coverage float64
		known    bool
		floor    int
		want     int
	}{
		{Warming, 0, true, 1, 1},      // a cold server still takes a trickle
		{Warming, 0, true, 0, 0},      // unless asked not to
		{Warming, 0.424, true, 1, 42}, // proportional to the coverage
		{Warming, 0.426, true, 1, 43},
		{Warming, 0, false, 5, 5},
		{Ready, 0.96, true, 1, 100}, // ready: the full configured weight
		{Down, 1, true, 1, 0},
		{Starting, 0, false, 1, 0},
	}
	for _, c := range cases {
		if got := weightFor(c.state, c.coverage, c.known, c.floor); got != c.want {
			t.Errorf("weightFor(%s, %.3f, %v, %d) = %d, want %d", c.state, c.coverage, c.known, c.floor, got, c.want)
		}
	}
	if got := agentDescription("nothing accepts\nconnections on socket /run/mysqld/mysqld.sock: the server is down ünd " + strings.Repeat("x", 200)); strings.ContainsAny(got, "\n\r#ü") || len(got) > 120 {
		t.Errorf("description %q", got)
	}
}

// Between counts a measure costs one status read: the counters' bounds answer while they
// are narrow or settle readiness; while pages enter (a warm) it counts, but spends at most
// a tenth of the time doing so.
func TestTrackerCountsOnlyWhenTheBoundsDoNotAnswer(t *testing.T) {
	tr := newTracker()
	t0 := time.Unix(1_000_000, 0)
	counts := 0
	count := func(covered, total int64) func() (int64, int64, error) {
		return func() (int64, int64, error) {
			counts++
			return covered, total, nil
		}
	}
	c := bufferpool.PageCounters{Read: 1000, Created: 10, Data: 5000}
	e, err := tr.measure(t0, c, 0.95, false, count(100, 10_000))
	if err != nil || !e.Counted || e.Low != 0.01 || counts != 1 {
		t.Fatalf("first measure %+v %v (counts %d)", e, err, counts)
	}
	// Nothing entered or left: the bounds are the count; no count.
	e, _ = tr.measure(t0.Add(time.Second), c, 0.95, false, count(0, 0))
	if e.Counted || counts != 1 || e.Low != 0.01 || e.High != 0.01 {
		t.Fatalf("idle measure %+v (counts %d)", e, counts)
	}
	// 150 pages read (1.5% of the target): the upper bound moves within tolerance.
	c.Read, c.Data = 1150, 5150
	e, _ = tr.measure(t0.Add(2*time.Second), c, 0.95, false, count(0, 0))
	if e.Counted || e.Low != 0.01 || e.High != 0.025 {
		t.Fatalf("narrow bounds %+v", e)
	}
	// A warm reads 3,000 pages: the bounds are 30 points apart: count.
	c.Read, c.Data = 4150, 8150
	e, _ = tr.measure(t0.Add(3*time.Second), c, 0.95, false, count(3100, 10_000))
	if !e.Counted || counts != 2 || e.Low != 0.31 {
		t.Fatalf("wide bounds %+v (counts %d)", e, counts)
	}
	// Ready: the lower bound settles it; a pool that churns needs no count.
	tr.last = &anchor{covered: 9700, total: 10_000, counters: c, at: t0.Add(4 * time.Second)}
	c.Read = 9150 // 5,000 read, and as many left the pool
	e, _ = tr.measure(t0.Add(5*time.Second), c, 0.95, true, count(0, 0))
	if e.Counted || counts != 2 || e.Low != 0.47 || e.High != 1 {
		t.Fatalf("ready, churning %+v (counts %d)", e, counts)
	}
	// ... until the anchor is an hour old.
	_, _ = tr.measure(t0.Add(4*time.Second+time.Hour), c, 0.95, true, count(9000, 10_000))
	if counts != 3 {
		t.Fatalf("an hour-old count was not redone (counts %d)", counts)
	}
	// A count that took 2 s: the next waits 18 s, however wide the bounds.
	tr = newTracker()
	c = bufferpool.PageCounters{}
	_, _ = tr.measure(t0, c, 0.95, false, count(0, 10_000))
	tr.lastCost = 2 * time.Second
	c.Read, c.Data = 5000, 5000
	for _, after := range []time.Duration{time.Second, 10 * time.Second, 17 * time.Second} {
		if e, _ := tr.measure(t0.Add(after), c, 0.95, false, count(5000, 10_000)); e.Counted {
			t.Fatalf("counted %s after a 2 s count", after)
		}
	}
	if e, _ := tr.measure(t0.Add(18*time.Second), c, 0.95, false, count(5000, 10_000)); !e.Counted {
		t.Fatal("no count 18 s after a 2 s count")
	}
}

// HTTP authentication: a bearer token or basic credentials from files only their owner
// (and group) can read.
func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	tokenFile, basicFile := filepath.Join(dir, "token"), filepath.Join(dir, "basic")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(basicFile, []byte("prom:pa:ss\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := newAuthenticator(tokenFile, basicFile)
	if err != nil {
		t.Fatal(err)
	}
	h := auth.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	try := func(set func(*http.Request)) int {
		r := httptest.NewRequest("GET", "/status", nil)
		set(r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for name, c := range map[string]struct {
		set  func(*http.Request)
		code int
	}{
		"no credentials": {func(*http.Request) {}, 401},
		"bearer":         {func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-123") }, 200},
		"wrong bearer":   {func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-124") }, 401},
		"basic":          {func(r *http.Request) { r.SetBasicAuth("prom", "pa:ss") }, 200},
		"wrong password": {func(r *http.Request) { r.SetBasicAuth("prom", "pa:sS") }, 401},
		"wrong user":     {func(r *http.Request) { r.SetBasicAuth("grafana", "pa:ss") }, 401},
	} {
		if got := try(c.set); got != c.code {
			t.Errorf("%s: %d, want %d", name, got, c.code)
		}
	}
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newAuthenticator(tokenFile, ""); err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable token: %v", err)
	}
	if err := os.WriteFile(basicFile, []byte("nocolon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newAuthenticator("", basicFile); err == nil {
		t.Error("basic file without user:password accepted")
	}
}

// A new server run is told by its start moving, or by Uptime going back when the restart
// came within seconds of the previous start (a start then moves by less than its jitter).
func TestRestartDetection(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	r := &serverRun{start: t0, uptime: 3}
	for _, c := range []struct {
		name   string
		start  time.Time
		uptime int64
		want   bool
	}{
		{"the same run, a second later", t0.Add(time.Second), 4, false},
		{"the same run, the start jittering back", t0.Add(-time.Second), 5, false},
		{"restarted an hour later", t0.Add(time.Hour), 2, true},
		{"restarted within a second of its start", t0.Add(1500 * time.Millisecond), 1, true},
	} {
		if got := r.restarted(c.start, c.uptime); got != c.want {
			t.Errorf("%s: restarted = %v", c.name, got)
		}
	}
}

// A measure that read the server before a ping found it gone must not put the state back
// to ready: TestLifecycle saw /ready answer 200 after a kill when a measure in flight on a
// loaded machine finished after the ping. A measure that starts after the failed ping
// does put it back (a ping that timed out in a stall).
func TestMeasureInFlightDoesNotUndoDown(t *testing.T) {
	a := &Agent{}
	r := &serverRun{ready: true, readyNote: "coverage reached"}
	measureStart := time.Now()
	a.mu.Lock()
	a.setStateLocked(Down, "the server does not answer a ping")
	a.downAt = measureStart.Add(time.Millisecond)
	a.mu.Unlock()

	a.becomeReady(r, measureStart, "")
	if st := a.Status(); st.State != Down {
		t.Fatalf("a measure begun before the failed ping set the state to %s", st.State)
	}
	a.becomeReady(r, a.downAt.Add(time.Millisecond), "")
	if st := a.Status(); st.State != Ready {
		t.Fatalf("a measure begun after the failed ping left the state %s", st.State)
	}
}
