package benchsuite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// The moving-hot-set scenario (issue 13): a source server runs a skewed workload whose hot
// ids shift mid-run to another set; innowarm follow keeps a standby (same data, other
// space ids) close to the source's hot set at a 10 s interval; a failover comes at a random
// moment at least one interval after the shift, and the standby's first pass of the
// shifted workload is compared with the source's hot pass of it. InnoDB's own 100%
// dump/load of the source at the failover moment, loaded on the source after a cold
// restart, is the anchor. Follow's cost to the source is the workload's QPS with follow
// running against without, in alternating windows.
func init() {
	Register(Scenario{
		Name:  "moving",
		Issue: 13,
		About: "hot set that shifts mid-run, innowarm follow keeping a standby at 10 s: failover first pass vs the source's hot pass, follow's cost in source QPS, InnoDB 100% dump/load as anchor",
		Run:   runMovingBench,
	})
}

// pointLoop runs point selects over ids drawn from hot until d has passed and returns the
// queries per second.
func (s *server) pointLoop(ctx context.Context, hot []int64, rng *rand.Rand, d time.Duration) (float64, error) {
	sess, err := s.conn.DB.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	stmt, err := sess.PrepareContext(ctx, "SELECT c FROM sbtest.sbtest1 WHERE id = ?")
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	t0 := time.Now()
	n := 0
	var c string
	for time.Since(t0) < d {
		if err := stmt.QueryRowContext(ctx, hot[rng.IntN(len(hot))]).Scan(&c); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

func runMovingBench(ctx context.Context, env Env) (Result, error) {
	var res Result
	rows, pool, hotIDs, queries, rounds := int64(2_200_000), int64(128<<20), 6_000, 20_000, 3
	before, interval := 40*time.Second, 10*time.Second
	costWindow, costWindows := 20*time.Second, 4
	if env.Quick() {
		rows, pool, hotIDs, queries, rounds = 300_000, 32<<20, 1_500, 5_000, 1
		before, costWindow, costWindows = 20*time.Second, 10*time.Second, 2
	}
	rng := rand.New(rand.NewPCG(13, 5))
	draw := func() []int64 { return drawIDs(rng, hotIDs, rows) }
	passOf := func(hot []int64) []int64 { return passOver(rng, hot, queries) }
	pr, err := startPair(ctx, env, "moving", pool, rows, 1)
	if err != nil {
		return res, err
	}
	defer pr.close()
	a, b := pr.source, pr.standby
	follows := 0
	// startFollow starts follow from source to standby and returns what stops it, and its pid.
	startFollow := func() (func() error, int, error) {
		cmd := exec.CommandContext(ctx, env.Bin, "follow", "--no-defaults", "--source-socket", a.sb.Socket, "--source-user", "root",
			"--target-socket", b.sb.Socket, "--target-user", "root", "--interval", interval.String(), "-D", "sbtest", "--json")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		follows++
		out, err := os.Create(filepath.Join(env.OutDir, fmt.Sprintf("follow-%d.log", follows)))
		if err != nil {
			return nil, 0, err
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			out.Close()
			return nil, 0, err
		}
		return func() error {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			defer out.Close()
			return cmd.Wait()
		}, cmd.Process.Pid, nil
	}

	// Follow's cost: the same workload on the source in alternating windows, with and
	// without follow running, after a warm-up that makes the source hot.
	hot := draw()
	if err := a.cold(ctx); err != nil {
		return res, err
	}
	if err := b.cold(ctx); err != nil {
		return res, err
	}
	if _, err := a.pointLoop(ctx, hot, rng, before); err != nil {
		return res, err
	}
	if err := followCost(ctx, env, a, b, hot, rng, costWindow, costWindows, interval, startFollow, &res); err != nil {
		return res, err
	}

	dir := env.OutDir
	dump100 := filepath.Join(dir, "ib_buffer_pool.100")
	var followRatio, ownRatio, followMiss, anchorRatio, anchorMiss, coldRatio, hotSecs []float64
	for round := range rounds {
		h1, h2 := draw(), draw()
		if err := a.cold(ctx); err != nil {
			return res, err
		}
		if err := b.cold(ctx); err != nil {
			return res, err
		}
		stop, _, err := startFollow()
		if err != nil {
			return res, err
		}
		if _, err := a.pointLoop(ctx, h1, rng, before); err != nil {
			_ = stop()
			return res, err
		}
		// The shift; the failover comes one to two intervals later, at a random moment.
		after := interval + 2*time.Second + time.Duration(rng.Int64N(int64(interval)))
		if _, err := a.pointLoop(ctx, h2, rng, after); err != nil {
			_ = stop()
			return res, err
		}
		if err := stop(); err != nil {
			return res, fmt.Errorf("follow: %w", err)
		}
		if _, err := a.dump(ctx, 100, dump100); err != nil {
			return res, err
		}
		// The standby's first pass, then its cold pass for scale, then the source's hot pass
		// of the shifted workload.
		first, err := b.pointPass(ctx, passOf(h2))
		if err != nil {
			return res, err
		}
		for range 2 {
			if _, err := a.pointPass(ctx, passOf(h2)); err != nil {
				return res, err
			}
		}
		hotPass, err := a.pointPass(ctx, passOf(h2))
		if err != nil {
			return res, err
		}
		// The standby's own hot pass of the shifted workload: the servers' speeds differ.
		for range 2 {
			if _, err := b.pointPass(ctx, passOf(h2)); err != nil {
				return res, err
			}
		}
		standbyHot, err := b.pointPass(ctx, passOf(h2))
		if err != nil {
			return res, err
		}
		if err := b.cold(ctx); err != nil {
			return res, err
		}
		coldPass, err := b.pointPass(ctx, passOf(h2))
		if err != nil {
			return res, err
		}
		if err := a.cold(ctx); err != nil {
			return res, err
		}
		if _, err := a.load(ctx, dump100); err != nil {
			return res, err
		}
		anchor, err := a.pointPass(ctx, passOf(h2))
		if err != nil {
			return res, err
		}
		followRatio = append(followRatio, first.seconds/hotPass.seconds)
		ownRatio = append(ownRatio, first.seconds/standbyHot.seconds)
		followMiss = append(followMiss, float64(first.misses))
		anchorRatio = append(anchorRatio, anchor.seconds/hotPass.seconds)
		anchorMiss = append(anchorMiss, float64(anchor.misses))
		coldRatio = append(coldRatio, coldPass.seconds/hotPass.seconds)
		hotSecs = append(hotSecs, hotPass.seconds)
		env.Log.Infof("moving: round %d: failover %.0f s after the shift: standby first pass %.2f s (%d misses), source hot %.2f s (%d misses), standby hot %.2f s, standby cold %.2f s (%d misses), InnoDB load on the source %.2f s (%d misses)",
			round+1, after.Seconds(), first.seconds, first.misses, hotPass.seconds, hotPass.misses, standbyHot.seconds, coldPass.seconds, coldPass.misses, anchor.seconds, anchor.misses)
	}
	res.AddMetric("source hot pass", lowerMedian(hotSecs), "s")
	res.AddMetric("standby first pass misses after follow", lowerMedian(followMiss), "reads")
	res.AddMetric("source first pass misses after InnoDB load", lowerMedian(anchorMiss), "reads")
	res.AddRatio("standby first pass after follow / source hot pass", lowerMedian(followRatio), "<= 1.1")
	res.AddRatio("standby first pass after follow / the standby's own hot pass", lowerMedian(ownRatio), "")
	res.AddRatio("source first pass after InnoDB 100% dump/load / source hot pass (anchor)", lowerMedian(anchorRatio), "")
	res.AddRatio("standby cold pass / source hot pass", lowerMedian(coldRatio), "")
	res.Notes = append(res.Notes,
		fmt.Sprintf("workload: point selects (one connection) over %d ids drawn at random from %d rows; %s on the first set, then the shifted set until the failover, %s to %s after the shift; passes of %d queries; pool %d MiB on both servers", hotIDs, rows, before, interval+2*time.Second, 2*interval+2*time.Second, queries, pool>>20),
		fmt.Sprintf("follow --interval %s -D sbtest on the same 2-vCPU machine as both servers; its cost: %d alternating %s windows on the hot source", interval, costWindows, costWindow))
	return res, nil
}

// followCost runs the hot source's workload in alternating windows without and with
// follow running, and reports the QPS of each and their ratio.
//
// The servers, follow and the load generator share this machine's CPUs, which separate
// hosts would not: the target's loads and follow's own work would be counted as the
// source's cost. So while the windows run, the source server and the load generator
// are pinned to the first CPU and the target and follow to the others (when there are
// two or more): what is left between source and follow is what follow asks of the source.
func followCost(ctx context.Context, env Env, a, b *server, hot []int64, rng *rand.Rand, window time.Duration, windows int, interval time.Duration, startFollow func() (func() error, int, error), res *Result) error {
	if runtime.NumCPU() >= 2 {
		all, rest := fmt.Sprintf("0-%d", runtime.NumCPU()-1), fmt.Sprintf("1-%d", runtime.NumCPU()-1)
		pin := func(pid int, cpus string) {
			if err := exec.CommandContext(ctx, "taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).Run(); err != nil {
				env.Log.Warnf("taskset %s %d: %v", cpus, pid, err)
			}
		}
		srcPid, tgtPid := a.sb.Status(ctx).Pid, b.sb.Status(ctx).Pid
		pin(os.Getpid(), "0")
		pin(srcPid, "0")
		pin(tgtPid, rest)
		prev := startFollow
		startFollow = func() (func() error, int, error) {
			stop, pid, err := prev()
			if err == nil {
				pin(pid, rest)
			}
			return stop, pid, err
		}
		defer func() {
			pin(os.Getpid(), all)
			pin(srcPid, all)
			pin(tgtPid, all)
		}()
		res.Notes = append(res.Notes, "follow's cost: source server and load generator pinned to CPU 0, target server and follow to the others, so that the target's loads and follow's own work do not count as the source's")
	}
	var with, without []float64
	for w := range windows {
		following := w%2 == 1
		var stop func() error
		if following {
			var err error
			if stop, _, err = startFollow(); err != nil {
				return err
			}
		}
		qps, err := a.pointLoop(ctx, hot, rng, window)
		if stop != nil {
			_ = stop()
		}
		if err != nil {
			return err
		}
		if following {
			with = append(with, qps)
		} else {
			without = append(without, qps)
		}
		env.Log.Infof("moving: cost window %d: follow %v: %.0f QPS", w+1, following, qps)
	}
	res.AddMetric("source QPS without follow", median(without), "q/s")
	res.AddMetric("source QPS with follow at "+interval.String(), median(with), "q/s")
	res.AddRatio("source QPS with follow / without", median(with)/median(without), ">= 0.95")
	return nil
}
