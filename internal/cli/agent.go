package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/agent"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/metrics"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/readiness"
	"github.com/innowarm/innowarm/internal/snapshot"
	"github.com/innowarm/innowarm/internal/warm"
)

func init() { register(newAgentCmd) }

func newAgentCmd() *cobra.Command {
	var (
		sel           selectionFlags
		o             agent.Options
		readyCoverage string
		doWarm        bool
		method        string
		budget        string
		parallel      int
		lob           bool
		allow         string
		pageList      string
		keep          int
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run beside one server: warm it at each start, and tell proxies, probes and Prometheus how warm it is",
		Long: `agent is a long-running process beside one server (a systemd service, a Kubernetes sidecar).
It measures the share of a target resident in the buffer pool (coverage): the pages of a
manifest (--manifest), or every index of a selection of tables (-D, --tables,
--all-databases). With --warm it warms that target each time the server starts (the
manifest's pages as warm --from does, the selection as warm -D does, with the same method,
budget and pacing flags). With --snapshot-to and --snapshot-every it keeps the manifest
fresh (snapshot --every) once the server is ready, so that the next start warms the latest
hot set.

States: starting (the server has not answered yet), warming (it answers; coverage below
--ready-coverage), ready (coverage reached it in this server run: it stays ready until the
server restarts, however the workload moves pages later), down (it stopped answering). A
warm that fails is reported in /status; the agent keeps measuring and serving.

A measure every --interval costs one SHOW GLOBAL STATUS while the page counters settle the
question (ready, or the pool not moving); only while pages enter (a warm) does it count the
target's resident pages, at most about a tenth of the time (internal/readiness explains the
bounds).

It serves, on --http-listen (default 127.0.0.1:9107, loopback only):
  /ready    200 when ready; 503 while warming (or 429 with --warming-status 429, which
            Consul reads as "warning"); 503 while starting or down. JSON body: state,
            coverage, threshold, weight, warm progress.
  /status   everything as JSON.
  /metrics  Prometheus metrics (innowarm_agent_*).
and with --agent-check-listen, HAProxy's agent-check protocol: "NN% up" with the weight
proportional to the coverage while warming (never below --min-weight), "100% up" once
ready, "down #reason" when the server does not answer (--agent-check-when-gone drain:
"drain", and healthy answers say "ready").

Exposure: an address other than loopback needs --tls-cert/--tls-key and --auth-token-file
or --auth-basic-file for HTTP (or --insecure-listen, where the network itself is guarded),
and --agent-check-allow for the agent check, which has no authentication of its own.

SIGTERM or Ctrl-C stops the agent cleanly (a warm in progress is stopped and what it
changed restored): exit 0, as a service manager expects. Exit 2 for a configuration error,
including credentials the server refuses before the agent ever got in; exit 1 when a port
cannot be opened. docs/fleet.md has recipes for HAProxy, ProxySQL, Orchestrator, MaxScale,
Kubernetes and Consul.`,
		Example: `  innowarm agent -S /run/mysqld/mysqld.sock --manifest /var/lib/innowarm/hot.manifest --warm \
      --snapshot-to /var/lib/innowarm/hot.manifest --snapshot-every 5m \
      --agent-check-listen 10.0.0.5:9108 --agent-check-allow 10.0.0.10,10.0.0.11
  innowarm agent -D shop --warm --max-rate 200MB/s --ready-coverage 90%
  innowarm agent -D shop --http-listen :9107 --tls-cert cert.pem --tls-key key.pem --auth-token-file token`,
		Args: noArgs,
	}
	cf := addConnFlags(cmd)
	sel.bind(cmd)
	pf := addPacingFlags(cmd)
	s3 := addS3Flags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.Manifest, "manifest", "", "the target: this manifest's pages (written by innowarm snapshot), a file or s3://BUCKET/PREFIX/NAME; read again at each server start")
	fl.StringVar(&readyCoverage, "ready-coverage", "95%", "ready once this share of the target is resident")
	fl.DurationVar(&o.ReadyTimeout, "ready-timeout", 0, "ready anyway once a server run has been warming this long (0: never)")
	fl.DurationVar(&o.Interval, "interval", 2*time.Second, "time between two measures")
	fl.BoolVar(&doWarm, "warm", false, "warm the target at each server start that finds it below --ready-coverage")
	fl.StringVar(&method, "method", warm.MethodAuto, "with --warm: auto, native or scan (as warm)")
	fl.StringVar(&budget, "budget", "", "with --warm: most the warm may add, a size (2G) or a percent of the pool (70%); default: the free pages")
	fl.IntVar(&parallel, "parallel", 0, "with --warm: parallel sessions of a scan (0: as warm)")
	fl.BoolVar(&lob, "lob", false, "with --warm of a selection: also read off-page BLOB/TEXT pages")
	fl.StringVar(&o.SnapshotTo, "snapshot-to", "", "keep a manifest of the hot set in this file (or s3://BUCKET/PREFIX/NAME) once the server is ready")
	fl.DurationVar(&o.SnapshotEvery, "snapshot-every", 0, "with --snapshot-to: capture every interval (e.g. 5m), as snapshot --every")
	fl.IntVar(&keep, "snapshot-keep", 0, "with --snapshot-to: previous manifests to keep as FILE.1 ... FILE.N")
	fl.StringVar(&pageList, "page-list", snapshot.PageListAuto, "with --snapshot-to: how the page list is read: auto, dump or lru-table (as snapshot)")
	fl.StringVar(&o.HttpListen, "http-listen", agent.DefaultHTTPListen, "serve /ready, /status and /metrics on this address ('' to turn off)")
	fl.StringVar(&o.TlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; reloaded when the file changes)")
	fl.StringVar(&o.TlsKey, "tls-key", "", "the certificate's private key (PEM)")
	fl.StringVar(&o.AuthTokenFile, "auth-token-file", "", "require 'Authorization: Bearer TOKEN', the token being this file's one line")
	fl.StringVar(&o.AuthBasicFile, "auth-basic-file", "", "require HTTP basic authentication with the user:password on this file's one line")
	fl.BoolVar(&o.InsecureListen, "insecure-listen", false, "allow plain HTTP without authentication on a non-loopback --http-listen (a pod network guarded by a NetworkPolicy)")
	fl.IntVar(&o.WarmingStatus, "warming-status", 503, "/ready's status code while warming: 503, or 429 (Consul's warning)")
	fl.StringVar(&o.AgentCheckListen, "agent-check-listen", "", "answer HAProxy agent checks on this address, e.g. 10.0.0.5:9108 (off by default)")
	fl.StringVar(&allow, "agent-check-allow", "", "addresses or CIDRs (comma-separated) allowed to ask the agent check; needed for a non-loopback --agent-check-listen")
	fl.IntVar(&o.MinWeight, "min-weight", 1, "the agent check's weight while warming never goes below this percent (a fleet restarted at once still takes traffic)")
	fl.StringVar(&o.AgentCheckWhenGone, "agent-check-when-gone", agent.WhenGoneDown, "what the agent check says of a server that does not answer: down (healthy answers say up) or drain (healthy answers say ready, which also lifts a drain or maintenance set by hand)")
	cmd.RunE = run(func(cmd *cobra.Command, _ []string) error {
		opts, err := cf.resolve(cmd)
		if err != nil {
			return err
		}
		if o.Filter, err = sel.filter(&opts); err != nil {
			return err
		}
		if o.ReadyCoverage, err = readiness.ParsePercent(readyCoverage); err != nil {
			return usagef("--ready-coverage: %v", err)
		}
		if o.AgentCheckAllow, err = agent.ParseAllow(allow); err != nil {
			return usagef("--agent-check-allow: %v", err)
		}
		if doWarm {
			pace, err := pf.config(parallel)
			if err != nil {
				return err
			}
			b, err := warm.ParseBudget(budget)
			if err != nil {
				return usagef("--budget: %v", err)
			}
			o.Warm = &warm.Request{Method: method,
				Plan: warm.Options{Budget: b, Order: "small-first", Parallel: parallel, LOB: lob, SplitPages: warm.DefaultSplitPages, LockWaitTimeout: 10 * time.Second},
				Run:  warm.RunOptions{StatementTimeout: time.Hour, LockWaitTimeout: 10 * time.Second, Pacing: pace, Progress: progress.Config{}},
			}
		} else if cmd.Flags().Changed("method") || budget != "" || parallel != 0 || lob || pf.given() {
			return usagef("--method, --budget, --parallel, --lob and the pacing flags shape the warm: add --warm")
		}
		o.Snapshot = snapshot.Options{Keep: keep, PageList: pageList, ToolVersion: version}
		if err := o.Snapshot.Validate(); err != nil {
			return usagef("--snapshot-keep/--page-list: %v", err)
		}
		if opts.PasswordPrompt {
			// Asked once: the agent reconnects on its own for as long as it runs.
			if opts.Password, err = connection.PromptPassword(cmd.Context()); err != nil {
				return err
			}
			opts.PasswordPrompt = false
		}
		o.Conn, o.Version, o.Log, o.Store = opts, version, logx.Default(), s3.store()
		exp, err := metrics.New("", "")
		if err != nil {
			return err
		}
		o.Metrics, o.MetricsHandler = exp.Registry, exp.Handler()
		if o.SnapshotTo != "" {
			sm := newSnapshotMetrics(exp.Registry)
			o.OnSnapshot = sm.observe
			o.Snapshot.OnFailure = sm.failed
		}
		a, err := agent.New(o)
		if err != nil {
			return err
		}
		if err := a.Run(cmd.Context()); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		return nil
	})
	return cmd
}
