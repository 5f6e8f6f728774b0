package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// FailoverFollow is what 'innowarm follow' did on the standby before the failover.
type FailoverFollow struct {
	// Rounds ended well, Failed did not (LastError says why), before the primary stopped.
	Rounds    int    `json:"rounds"`
	Failed    int    `json:"failed_rounds,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// Coverage is the share of the primary's hot set resident on the standby after the
	// last round; Loaded the pages follow loaded in all.
	Coverage float64 `json:"coverage"`
	Loaded   int64   `json:"loaded_pages"`
	// Seconds is how long follow ran, the primary serving the traffic meanwhile.
	Seconds float64 `json:"seconds"`
	// PrimaryUptime is how long the primary had been up when follow started: it has served
	// the traffic of the scenario before (a primary just restarted would still be warming
	// up, and so would the standby that follows it), unless UnsettledPrimary restarted it.
	PrimaryUptime float64 `json:"primary_uptime_s"`
	// PrimaryPoolPages is the primary's Innodb_buffer_pool_pages_data when it failed, and
	// PrimaryMisses the pages its traffic read from disk since follow started: how far its
	// own warm-up had got.
	PrimaryPoolPages int64 `json:"primary_pool_pages,omitempty"`
	PrimaryMisses    int64 `json:"primary_missed_pages,omitempty"`
	// RoundLog is each round as follow reported it: how far behind a moving primary the
	// standby stays is its rounds' capture and load times. The rounds after the first
	// Rounds+Failed ended once the primary began to stop: the round in flight then,
	// finishing its load on the standby. FailoverAt is when the traffic moved (seconds
	// since follow started).
	RoundLog   []FollowRound `json:"round_log,omitempty"`
	FailoverAt float64       `json:"failover_at_s"`
	// Follow is not told of the failover, as a sidecar is not: the load it was making goes
	// on (the pages of the primary's last capture), and its next captures fail. LoadedAfter
	// is what that round loaded, ending LoadedAfterEnd seconds after the traffic moved
	// (negative: while the primary shut down);
	// FailedAfter counts the captures that failed on the stopped primary.
	LoadedAfter    int64   `json:"loaded_after_failover_pages,omitempty"`
	LoadedAfterEnd float64 `json:"loaded_after_failover_end_s,omitempty"`
	FailedAfter    int     `json:"failed_after_failover,omitempty"`
	// Switched: that round's load stopped when the traffic reached the standby,
	// SwitchedAfter seconds into it and SwitchedAt seconds after the traffic moved, and
	// went on hottest first under --nice (a round still loading when the window ends is
	// not in RoundLog).
	Switched      bool    `json:"switched_for_traffic,omitempty"`
	SwitchedAfter float64 `json:"switched_for_traffic_after_s,omitempty"`
	SwitchedAt    float64 `json:"switched_for_traffic_at_s,omitempty"`
}

// FollowRound is one of follow's rounds before a failover.
type FollowRound struct {
	End       float64 `json:"end_s"` // seconds since follow started
	OK        bool    `json:"ok"`
	Capture   float64 `json:"capture_s"`
	Load      float64 `json:"load_s"`
	HotSet    int64   `json:"hot_set_pages"`
	Requested int64   `json:"requested_pages"`
	Loaded    int64   `json:"loaded_pages"`
	Error     string  `json:"error,omitempty"`
	// Pacing is how the round's load was paced ("" unpaced); TrafficArrived the client
	// statements per second the standby began to serve during a load planned for it idle,
	// TrafficArrivedAfter seconds into it, with LoadedBeforeTraffic more of the hot set's
	// pages resident: the rest went hottest first, paced (follow.Status).
	Pacing              string  `json:"pacing,omitempty"`
	TrafficArrived      float64 `json:"traffic_arrived_statements_per_s,omitempty"`
	TrafficArrivedAfter float64 `json:"traffic_arrived_after_s,omitempty"`
	LoadedBeforeTraffic int64   `json:"loaded_before_traffic_pages,omitempty"`
	SkippedResident     int64   `json:"skipped_resident_pages,omitempty"`
}

// failover runs the promoted standby's scenario once: the standby, restarted cold, is kept
// by follow while the primary serves the traffic hot (--hot-duration, and on until one
// round has ended well; or, with UnsettledPrimary, the primary restarted cold and serving
// that long); then the primary stops, as a failed primary does, and the traffic
// moves to the standby, measured from that moment. The primary is started again (cold)
// for the next scenario.
func (r *recRun) failover(ctx context.Context) (*RecoveryRun, error) {
	sb, err := r.makeStandby(ctx)
	if err != nil {
		return nil, fmt.Errorf("standby: %w", err)
	}
	if _, err := sb.ColdRestart(ctx); err != nil {
		return nil, fmt.Errorf("cold restart of the standby: %w", err)
	}
	if err := r.ownVolume(ctx, sb); err != nil {
		return nil, err
	}
	primaryTraffic := r.o.HotDuration
	if r.o.UnsettledPrimary > 0 {
		// A primary that fails while it warms up: follow copies a hot set still forming.
		primaryTraffic = r.o.UnsettledPrimary
		r.conn.Close()
		if _, err := r.t.Sandbox.ColdRestart(ctx); err != nil {
			return nil, fmt.Errorf("cold restart of the primary: %w", err)
		}
		if r.conn, err = r.t.Connect(ctx); err != nil {
			return nil, fmt.Errorf("reconnect to the primary: %w", err)
		}
	}
	uptime, err := statusInt(ctx, r.conn, "Uptime")
	if err != nil {
		return nil, fmt.Errorf("the primary's uptime: %w", err)
	}
	missesAtStart, err := statusInt(ctx, r.conn, "Innodb_buffer_pool_reads")
	if err != nil {
		return nil, fmt.Errorf("the primary's missed pages: %w", err)
	}
	run := &RecoveryRun{Follow: &FailoverFollow{PrimaryUptime: float64(uptime)}}
	fo := run.Follow
	var mu sync.Mutex
	failedOver := false
	okRound := make(chan struct{}, 1)
	fctx, stopFollow := context.WithCancel(ctx)
	var following sync.WaitGroup
	following.Add(1)
	t0 := time.Now()
	go func() {
		defer following.Done()
		_ = follow.Run(fctx, follow.Options{
			Source: r.t.Opts, Target: sb.ConnOptions(), Interval: time.Second,
			Filter: catalog.Filter{Schemas: []string{r.o.Schema}}, Method: r.o.WarmMethod,
			ToolVersion: "innowarm experiment recovery", Log: logx.New(io.Discard, true),
			LoadProgress: progress.Config{Out: io.Discard, Quiet: true},
			OnSwitch: func(st follow.Status) {
				// The round may still be loading when follow stops, and go unreported.
				mu.Lock()
				defer mu.Unlock()
				if failedOver {
					fo.Switched, fo.SwitchedAfter, fo.SwitchedAt = true, st.TrafficArrivedAfter, time.Since(t0).Seconds()-fo.FailoverAt
				}
			},
		}, nil, func(st follow.Status) {
			mu.Lock()
			defer mu.Unlock()
			if failedOver && !st.OK {
				fo.FailedAfter++
				return
			}
			fo.RoundLog = append(fo.RoundLog, FollowRound{End: time.Since(t0).Seconds(), OK: st.OK, Capture: st.CaptureSeconds, Load: st.LoadSeconds,
				HotSet: st.HotSetPages, Requested: st.Requested, Loaded: st.Loaded, Error: st.Error,
				Pacing: st.Pacing, TrafficArrived: st.TrafficArrived, TrafficArrivedAfter: st.TrafficArrivedAfter, LoadedBeforeTraffic: st.LoadedBeforeTraffic, SkippedResident: st.SkippedResident})
			if failedOver {
				return // counted when follow has stopped
			}
			if !st.OK {
				fo.Failed++
				fo.LastError = st.Error
				return
			}
			fo.Rounds++
			fo.Coverage = st.Coverage
			fo.Loaded += st.Loaded
			select {
			case okRound <- struct{}{}:
			default:
			}
		})
	}()
	defer func() { stopFollow(); following.Wait() }()
	if _, _, err := r.trafficOn(ctx, r.t.Opts, primaryTraffic); err != nil {
		return nil, fmt.Errorf("traffic on the primary: %w", err)
	}
	mu.Lock()
	rounds := fo.Rounds
	mu.Unlock()
	if rounds == 0 {
		select {
		case <-okRound:
		case <-time.After(r.o.Duration):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	mu.Lock()
	fo.Seconds = time.Since(t0).Seconds()
	r.log.Infof("follow kept the standby for %.1f s (the primary up for %.0f s when it started): %d rounds (%d failed), %s pages loaded, %.1f%% of the primary's hot set as its last capture saw it resident",
		fo.Seconds, fo.PrimaryUptime, fo.Rounds, fo.Failed, commas(fo.Loaded), 100*fo.Coverage)
	mu.Unlock()

	if fo.PrimaryPoolPages, err = statusInt(ctx, r.conn, "Innodb_buffer_pool_pages_data"); err != nil {
		return nil, fmt.Errorf("the primary's pool: %w", err)
	}
	misses, err := statusInt(ctx, r.conn, "Innodb_buffer_pool_reads")
	if err != nil {
		return nil, fmt.Errorf("the primary's missed pages: %w", err)
	}
	fo.PrimaryMisses = misses - missesAtStart

	// The failover: the primary goes away, the traffic goes to the standby. Follow runs on,
	// unaware, until the window ends.
	mu.Lock()
	failedOver = true
	mu.Unlock()
	r.conn.Close()
	primary := r.t.Sandbox
	if _, err := primary.Stop(ctx); err != nil {
		return nil, fmt.Errorf("stop the primary: %w", err)
	}
	mu.Lock()
	fo.FailoverAt = time.Since(t0).Seconds()
	mu.Unlock()
	run.Restart = &Restart{Cold: "the primary stopped; the traffic moved to the standby, already running, kept by follow"}
	answered := time.Now()
	done := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		run.Pool, run.LoadStatus = r.samplePool(ctx, sb.ConnOptions(), sb.Status(ctx).Pid, answered, done)
	}()
	if r.o.PoolPagesEvery > 0 {
		sampled.Add(1)
		go func() {
			defer sampled.Done()
			run.Turnover = r.sampleTurnover(ctx, sb.ConnOptions(), answered, done)
		}()
	}
	rep, writes, trafficErr := r.trafficOn(ctx, sb.ConnOptions(), r.o.Duration+r.o.HotDuration)
	run.Writes = writes
	close(done)
	sampled.Wait()
	// Before the primary is back: follow would copy its cold pool onto the standby.
	stopFollow()
	following.Wait()
	for _, rd := range fo.RoundLog[fo.Rounds+fo.Failed:] {
		fo.LoadedAfter += rd.Loaded
		fo.LoadedAfterEnd = rd.End - fo.FailoverAt
	}
	switch {
	case fo.LoadedAfter > 0:
		r.log.Infof("follow's round in flight when the primary failed loaded %s more pages on the standby, %s%s", commas(fo.LoadedAfter), afterFailoverText(fo.LoadedAfterEnd), fo.switchedText())
	case fo.Switched:
		r.log.Infof("follow's round in flight when the primary failed was still loading when the window ended%s", fo.switchedText())
	}
	if _, err := primary.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the primary again: %w", err)
	}
	if r.conn, err = r.t.Connect(ctx); err != nil {
		return nil, fmt.Errorf("reconnect to the primary: %w", err)
	}
	if trafficErr != nil {
		return nil, fmt.Errorf("traffic on the standby: %w", trafficErr)
	}
	r.measureRun(run, rep, answered)
	sconn, err := sb.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the standby: %w", err)
	}
	defer sconn.Close()
	if run.HotLevel.PoolPages, err = statusInt(ctx, sconn, "Innodb_buffer_pool_pages_data"); err != nil {
		return nil, err
	}
	return run, nil
}

// makeStandby creates the standby once: a second sandbox of the primary's server and
// settings, holding a physical copy of the primary's data (both servers stopped for the
// copy), under the experiment's directory.
func (r *recRun) makeStandby(ctx context.Context) (*sandbox.Sandbox, error) {
	if r.standby != nil {
		return r.standby, nil
	}
	p := r.t.Sandbox
	cfg := sandbox.Config{Dir: filepath.Join(r.o.Dir, "standby"), PoolSize: p.PoolSize, BufferedIO: p.BufferedIO,
		ServerArgs: p.ServerArgs, DieWithParent: true}
	if p.Distribution != "" {
		cfg.Flavor = p.Distribution
	} else {
		cfg.ServerBinary = p.ServerBinary
	}
	r.log.Infof("standby: a second sandbox in %s, a physical copy of the primary's data", cfg.Dir)
	sb, _, err := sandbox.Up(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.standby = sb
	if r.standbyVol, err = standbyVolume(); err != nil {
		return nil, fmt.Errorf("standby: %w", err)
	}
	if r.standbyVol != nil {
		r.res.Params.StandbyVolume = r.standbyVol.describe()
		r.log.Infof("standby: reads under a cap of its own, as the primary's (%s)", r.res.Params.StandbyVolume)
	}
	r.conn.Close()
	if _, err := sb.Stop(ctx); err != nil {
		return nil, err
	}
	if _, err := p.Stop(ctx); err != nil {
		return nil, fmt.Errorf("stop the primary for the copy: %w", err)
	}
	copyErr := copyDataDir(p.Datadir, sb.Datadir)
	if _, err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the primary after the copy: %w", err)
	}
	if r.conn, err = r.t.Connect(ctx); err != nil {
		return nil, err
	}
	if copyErr != nil {
		return nil, fmt.Errorf("copy the primary's data: %w", copyErr)
	}
	if _, err := sb.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the standby on the copy: %w", err)
	}
	return sb, r.ownVolume(ctx, sb)
}

// ownVolume moves the standby's server, just started, into its volume of its own, when
// there is one: a primary and its standby do not share a disk, so under a read cap
// follow's loads must not spend the primary's reads, nor the primary's traffic the
// standby's.
func (r *recRun) ownVolume(ctx context.Context, sb *sandbox.Sandbox) error {
	if r.standbyVol == nil {
		return nil
	}
	return r.standbyVol.hold(sb.Status(ctx).Pid)
}

// dropStandby removes the standby, if one was made; after an interrupt too (ctx's end
// does not stop it).
func (r *recRun) dropStandby(ctx context.Context) {
	if r.standby == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if _, err := r.standby.Purge(ctx); err != nil {
		r.standby.Kill()
		r.log.Warnf("could not remove the standby in %s: %v", r.standby.Dir, err)
	}
	if err := r.standbyVol.remove(); err != nil {
		r.log.Warnf("could not remove the standby's volume: %v", err)
	}
}

// copyDataDir replaces dst's contents with a copy of src's (a stopped server's data
// directory). MySQL's auto.cnf is left out, so that the copy gets a server_uuid of its own.
func copyDataDir(src, dst string) error {
	entries, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o750)
		case rel == "auto.cnf":
			return nil
		case !d.Type().IsRegular():
			return nil // sockets, pipes: nothing a server reads back
		}
		return copyFile(path, to)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	_, cerr := io.Copy(out, in)
	return errors.Join(cerr, out.Close())
}

// afterFailoverText places the end of follow's round in flight against the moment the
// traffic moved: a round can end while the primary shuts down, before it.
// switchedText says, after the round in flight's pages, that its load stopped for the
// traffic ("" when it did not).
func (f *FailoverFollow) switchedText() string {
	if !f.Switched {
		return ""
	}
	return fmt.Sprintf(" (the traffic stopped its load %.1f s in, %.1f s after the traffic moved; the rest went hottest first under --nice)", f.SwitchedAfter, f.SwitchedAt)
}

func afterFailoverText(end float64) string {
	if end < 0 {
		return fmt.Sprintf("ending while the primary shut down, %.1f s before the traffic moved", -end)
	}
	return fmt.Sprintf("ending %.1f s after the traffic moved", end)
}
