// Package agent is innowarm's long-running process beside one server (a systemd service, a
// Kubernetes sidecar). It warms the pool each time the server starts, keeps the share of a
// target that is resident (coverage) up to date at the cost of one status read between
// counts, optionally keeps a manifest fresh (snapshot --every), and tells the fleet how warm
// the server is: HTTP /ready, /status and /metrics, and HAProxy's agent-check protocol.
//
// States: starting (the server has not answered yet) → warming (it answers; coverage below
// the threshold) → ready (coverage reached the threshold in this server run; it stays ready
// until the server restarts); a server that stops answering is down, and a new server run
// warms again.
package agent

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/warm"
)

// Options configure an agent. Field names follow the command line's flags (a FieldError
// about AgentCheckAllow is about --agent-check-allow).
type Options struct {
	Conn connection.Options
	// The target whose coverage decides readiness: a manifest's pages (Manifest, a
	// location) or the indexes of a selection of tables (Filter).
	Manifest string
	Filter   catalog.Filter
	// Store reads and writes manifest locations (files, s3://); nil: files, and object
	// storage configured by the environment alone.
	Store *location.Store
	// ReadyCoverage is the coverage (0 to 1) at which the server is ready.
	ReadyCoverage float64
	// ReadyTimeout declares the server ready anyway once a server run has been warming
	// this long (0: never): a warm that cannot reach the threshold must not keep a server
	// out of rotation for ever, when that is what the operator prefers.
	ReadyTimeout time.Duration
	// Interval between two measures of the server.
	Interval time.Duration

	// Warm, when set, runs at the start of every server run that is not ready at its first
	// measure: the manifest's pages or the selection, with the request's method, budget and
	// pacing (its Manifest and Filter are filled in by the agent).
	Warm *warm.Request

	// SnapshotTo, with SnapshotEvery, keeps a manifest fresh once the server is ready
	// (snapshot --every; a capture of a pool that is still warming would replace a good
	// hot set with a partial one). Snapshot carries the capture's other options.
	SnapshotTo    string
	SnapshotEvery time.Duration
	Snapshot      snapshot.Options
	OnSnapshot    func(*snapshot.Result)

	// HTTP: /ready, /status, /metrics.
	HttpListen     string // "" disables
	TlsCert        string
	TlsKey         string
	AuthTokenFile  string // a bearer token, one line
	AuthBasicFile  string // user:password, one line
	InsecureListen bool   // allow plain HTTP without authentication on a non-loopback address
	// WarmingStatus is /ready's status code while warming: 503 (default) or 429 (Consul
	// reads 429 as "warning"). Starting and down always answer 503.
	WarmingStatus int

	// HAProxy agent-check.
	AgentCheckListen string         // "" disables
	AgentCheckAllow  []netip.Prefix // clients allowed; needed for a non-loopback address
	MinWeight        int            // the weight (percent) while warming never goes below this
	// AgentCheckWhenGone is what a server that does not answer is reported as: "down" (the
	// operational state; healthy answers say "up") or "drain" (the administrative state;
	// healthy answers then say "ready", which also lifts a drain or maintenance set by hand
	// on the stats socket).
	AgentCheckWhenGone string

	Metrics        prometheus.Registerer
	MetricsHandler http.Handler
	Version        string
	Log            *logx.Logger
}

// Values of AgentCheckWhenGone.
const (
	WhenGoneDown  = "down"
	WhenGoneDrain = "drain"
)

// DefaultHTTPListen is loopback only: any other address is asked for explicitly.
const DefaultHTTPListen = "127.0.0.1:9107"

func bad(field, format string, args ...any) error { return exitcode.BadValue(field, format, args...) }

// Validate checks the options' values and the rules of exposure: a listener on anything but
// loopback needs TLS and authentication (HTTP) or a list of allowed clients (agent-check).
func (o *Options) Validate() error {
	switch {
	case o.Manifest != "" && !o.Filter.Empty():
		return exitcode.UsageError(errors.New("--manifest is the target: leave out -D, --tables and --all-databases"))
	case o.Manifest == "" && o.Filter.Empty():
		return exitcode.UsageError(errors.New("the agent needs a target: --manifest LOCATION, or -D schema[,schema], --tables or --all-databases"))
	}
	if o.ReadyCoverage <= 0 || o.ReadyCoverage > 1 {
		return bad("ReadyCoverage", "%g: between 0%% (exclusive) and 100%%", o.ReadyCoverage)
	}
	if o.Interval < 100*time.Millisecond {
		return bad("Interval", "%s: at least 100ms", o.Interval)
	}
	if o.ReadyTimeout < 0 {
		return bad("ReadyTimeout", "%s: 0 (never) or more", o.ReadyTimeout)
	}
	if o.Warm != nil {
		r := *o.Warm
		if o.Manifest != "" {
			r.Manifest, r.Filter = &manifest.Manifest{}, catalog.Filter{}
		} else {
			r.Filter = o.Filter
		}
		if err := r.Validate(); err != nil {
			return err
		}
		if r.DryRun {
			return bad("Warm", "cannot be a dry run")
		}
	}
	if (o.SnapshotTo == "") != (o.SnapshotEvery == 0) {
		return bad("SnapshotEvery", "and --snapshot-to go together")
	}
	if o.SnapshotEvery < 0 || (o.SnapshotEvery > 0 && o.SnapshotEvery < time.Second) {
		return bad("SnapshotEvery", "%s: at least 1s", o.SnapshotEvery)
	}
	if o.SnapshotTo == manifest.StdioName {
		return bad("SnapshotTo", "needs a file, not stdout")
	}
	if o.SnapshotTo != "" && !location.IsRemote(o.SnapshotTo) {
		dir := filepath.Dir(o.SnapshotTo)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return bad("SnapshotTo", "%s: directory %s does not exist", o.SnapshotTo, dir)
		}
		if unix.Access(dir, unix.W_OK) != nil {
			return bad("SnapshotTo", "%s: directory %s is not writable", o.SnapshotTo, dir)
		}
	}
	if o.WarmingStatus == 0 {
		o.WarmingStatus = http.StatusServiceUnavailable
	}
	if o.WarmingStatus != http.StatusServiceUnavailable && o.WarmingStatus != http.StatusTooManyRequests {
		return bad("WarmingStatus", "%d: 503 or 429", o.WarmingStatus)
	}
	if o.MinWeight < 0 || o.MinWeight > 100 {
		return bad("MinWeight", "%d: a percent, 0 to 100", o.MinWeight)
	}
	switch o.AgentCheckWhenGone {
	case "":
		o.AgentCheckWhenGone = WhenGoneDown
	case WhenGoneDown, WhenGoneDrain:
	default:
		return bad("AgentCheckWhenGone", "%q: down or drain", o.AgentCheckWhenGone)
	}
	if o.HttpListen == "" && o.AgentCheckListen == "" {
		return bad("HttpListen", "is empty and so is --agent-check-listen: the agent would tell nobody")
	}
	if (o.TlsCert == "") != (o.TlsKey == "") {
		return bad("TlsCert", "and --tls-key go together")
	}
	if o.HttpListen != "" {
		loop, err := loopbackOnly(o.HttpListen)
		if err != nil {
			return bad("HttpListen", "%v", err)
		}
		if !loop && !o.InsecureListen && (o.TlsCert == "" || (o.AuthTokenFile == "" && o.AuthBasicFile == "")) {
			return bad("HttpListen", "%s is not a loopback address: serving it needs --tls-cert/--tls-key and --auth-token-file or --auth-basic-file (or --insecure-listen, where the network itself is guarded)", o.HttpListen)
		}
	} else if o.TlsCert != "" || o.AuthTokenFile != "" || o.AuthBasicFile != "" || o.InsecureListen {
		return bad("HttpListen", "is empty: TLS and authentication flags are for the HTTP listener")
	}
	for _, f := range []struct{ field, path string }{{"TlsCert", o.TlsCert}, {"TlsKey", o.TlsKey}, {"AuthTokenFile", o.AuthTokenFile}, {"AuthBasicFile", o.AuthBasicFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return bad(f.field, "%v", err)
		}
	}
	if o.AgentCheckListen != "" {
		loop, err := loopbackOnly(o.AgentCheckListen)
		if err != nil {
			return bad("AgentCheckListen", "%v", err)
		}
		if !loop && len(o.AgentCheckAllow) == 0 {
			return bad("AgentCheckListen", "%s is not a loopback address: say which proxies may ask with --agent-check-allow (addresses or CIDRs)", o.AgentCheckListen)
		}
	} else if len(o.AgentCheckAllow) > 0 {
		return bad("AgentCheckAllow", "needs --agent-check-listen")
	}
	return nil
}

// loopbackOnly says whether a listen address ("host:port") binds loopback only: 127.0.0.0/8,
// ::1 or localhost. An empty host (":9107") is every interface.
func loopbackOnly(addr string) (bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%q: want host:port, e.g. %s", addr, DefaultHTTPListen)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return false, fmt.Errorf("%q: the port must be a number from 0 to 65535", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		// A name other than localhost resolves to whatever DNS says: not loopback by surprise.
		return false, nil //nolint:nilerr // a host name is a valid, non-loopback address
	}
	return ip.IsLoopback(), nil
}

// ParseAllow reads a comma-separated list of addresses and CIDRs (10.0.0.5, 10.0.0.0/24,
// fd00::/8).
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR", f)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR", f)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
