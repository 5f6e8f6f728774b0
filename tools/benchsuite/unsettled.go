package benchsuite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The unsettled-source scenario (issue 21): one `snapshot`, with its defaults, of a source
// whose pool has not settled, carried to a cold standby by `warm --from`, ten runs, each
// on a freshly unsettled source. The source's pool holds what a bulk load left (run 1) or
// what a report's scan made young (the later runs: a cold restart, then sbtest2, which the
// workload never reads, scanned with innodb_old_blocks_time = 0), when a skewed workload
// of point selects over ids scattered across sbtest1 (4x the pool) starts; the snapshot
// is taken at the end of its first pass while it goes on, as a user would take one of a
// server in service. The targets
// are on the standby's first pass of the workload: misses <= its hot pass's + 5% of its
// cold pass's, in every run, on a standby of an identical build (other space ids) and on a
// logical copy: the source's sbtest1 then grown by inserts in random key order, the
// standby's restored in key order, as from a dump (other pages, other page numbers). In
// the first runs a one-look snapshot of the same moment (`--observe 0`, just before) is
// carried too, for comparison: what a single look at such a pool misses.
func init() {
	Register(Scenario{
		Name:  "unsettled",
		Issue: 21,
		About: "one snapshot (defaults) of a source whose pool has not settled, taken while the workload runs, warmed on a cold standby (identical build, then a logical copy): first-pass misses against hot + 5% of cold, 10 runs each",
		Run:   runUnsettledBench,
	})
}

func runUnsettledBench(ctx context.Context, env Env) (Result, error) {
	var res Result
	rows, pool, hotIDs, queries, runs, oneLookRuns := int64(2_200_000), int64(128<<20), 6_000, 20_000, 10, 3
	if env.Quick() {
		rows, pool, hotIDs, queries, runs, oneLookRuns = 600_000, 64<<20, 3_000, 10_000, 3, 1
	}
	rng := rand.New(rand.NewPCG(21, 5))
	hot := drawIDs(rng, hotIDs, rows)
	workload := func() []int64 { return passOver(rng, hot, queries) }
	pr, err := startPair(ctx, env, "unsettled", pool, rows, 2)
	if err != nil {
		return res, err
	}
	defer pr.close()
	a, b := pr.source, pr.standby
	if x, ok := pr.tableToPool(pool); ok {
		res.AddMetric("workload table / pool", x, "x")
	}
	dir := env.OutDir

	// standbyBaseline is the standby's cold and hot passes (its hot set after three).
	standbyBaseline := func() (cold, hot pass, err error) {
		if err = b.cold(ctx); err != nil {
			return
		}
		if cold, err = b.pointPass(ctx, workload()); err != nil {
			return
		}
		for range 2 {
			if _, err = b.pointPass(ctx, workload()); err != nil {
				return
			}
		}
		hot, err = b.pointPass(ctx, workload())
		return
	}
	// unsettle leaves the source's pool as a report's scan leaves it (run 1 keeps the bulk
	// load's leftovers).
	unsettle := func() error {
		if err := a.cold(ctx); err != nil {
			return err
		}
		return a.exec(ctx, "SET GLOBAL innodb_old_blocks_time = 0", "SELECT SUM(LENGTH(c)) FROM sbtest.sbtest2", "SET GLOBAL innodb_old_blocks_time = 1000")
	}
	// capture runs the workload on the source, as a server in service has it, and
	// snapshot with its defaults from the end of the first pass on; the workload goes on
	// until the snapshot is done (two passes at least). Just before it, a one-look snapshot
	// when asked.
	capture := func(run int, oneLook bool) (live, look string, snap measured, err error) {
		live, look = filepath.Join(dir, fmt.Sprintf("run%d.manifest", run)), ""
		var passes [][]int64
		for range 8 {
			passes = append(passes, workload())
		}
		var wg sync.WaitGroup
		var passErr error
		var srcPasses []pass
		firstDone, snapDone := make(chan struct{}), make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i >= 2 {
					select {
					case <-snapDone:
						return
					default:
					}
				}
				p, err := a.pointPass(ctx, passes[i%len(passes)])
				if err != nil {
					passErr = err
					if i == 0 {
						close(firstDone)
					}
					return
				}
				srcPasses = append(srcPasses, p)
				if i == 0 {
					close(firstDone)
				}
			}
		}()
		<-firstDone
		if passErr == nil && oneLook {
			// The same moment's one look, for comparison.
			look = filepath.Join(dir, fmt.Sprintf("run%d-one-look.manifest", run))
			_, err = a.innowarm(ctx, "snapshot", "-o", look, "--observe", "0")
		}
		if passErr == nil && err == nil {
			snap, err = a.innowarm(ctx, "snapshot", "-o", live)
		}
		close(snapDone)
		wg.Wait()
		if err == nil {
			err = passErr
		}
		if err != nil {
			return
		}
		misses := make([]int64, len(srcPasses))
		for i, p := range srcPasses {
			misses[i] = p.misses
		}
		env.Log.Infof("unsettled: run %d: source passes' misses %v; snapshot %.1f s: %s", run, misses, snap.seconds, watchedLine(snap.stdout))
		return
	}
	warmFrom := func(path string, verbose bool) (pass, float64, error) {
		if err := b.cold(ctx); err != nil {
			return pass{}, 0, err
		}
		m, err := b.innowarm(ctx, "warm", "--from", path)
		if err != nil {
			return pass{}, 0, err
		}
		if verbose {
			env.Log.Infof("unsettled: warm --from %s:\n%s", filepath.Base(path), m.stdout)
		}
		p, err := b.pointPass(ctx, workload())
		return p, m.seconds, err
	}

	for _, phase := range []string{"identical build", "logical copy"} {
		if phase == "logical copy" {
			// The issue's case: a primary grown by inserts in random key order, its replica
			// restored from a logical dump (rows inserted in key order: denser pages, other
			// page numbers).
			if err := rebuildInOrder(ctx, env, a, pool, "c"); err != nil {
				return res, err
			}
			if err := rebuildInOrder(ctx, env, b, pool, "id"); err != nil {
				return res, err
			}
		}
		coldP, hotP, err := standbyBaseline()
		if err != nil {
			return res, err
		}
		bound := float64(hotP.misses) + 0.05*float64(coldP.misses)
		env.Log.Infof("unsettled: %s: standby cold pass %d misses (%.2f s), hot pass %d misses (%.2f s): bound %.0f", phase, coldP.misses, coldP.seconds, hotP.misses, hotP.seconds, bound)
		var share, ratio, lookShare, snapSecs []float64
		met := 0
		for run := 1; run <= runs; run++ {
			if run > 1 || phase != "identical build" {
				if err := unsettle(); err != nil {
					return res, err
				}
			}
			live, look, snap, err := capture(run, run <= oneLookRuns)
			if err != nil {
				return res, fmt.Errorf("%s run %d: %w", phase, run, err)
			}
			first, w, err := warmFrom(live, run == 1)
			if err != nil {
				return res, fmt.Errorf("%s run %d: warm --from: %w", phase, run, err)
			}
			s := (float64(first.misses) - float64(hotP.misses)) / float64(max(coldP.misses, 1))
			share, ratio, snapSecs = append(share, s), append(ratio, first.seconds/hotP.seconds), append(snapSecs, snap.seconds)
			if float64(first.misses) <= bound {
				met++
			}
			line := fmt.Sprintf("unsettled: %s run %d: warm %.2f s, first pass %d misses (%.2f s; bound %.0f)", phase, run, w, first.misses, first.seconds, bound)
			if look != "" {
				lp, _, err := warmFrom(look, false)
				if err != nil {
					return res, err
				}
				lookShare = append(lookShare, (float64(lp.misses)-float64(hotP.misses))/float64(max(coldP.misses, 1)))
				line += fmt.Sprintf("; after a one-look snapshot of the same moment: %d misses", lp.misses)
			}
			env.Log.Infof("%s", line)
		}
		res.AddMetric(phase+": standby cold pass misses", float64(coldP.misses), "reads")
		res.AddMetric(phase+": standby hot pass misses", float64(hotP.misses), "reads")
		res.AddMetric(phase+": snapshot's time (it watched the pool), median", median(snapSecs), "s")
		res.AddMetric(fmt.Sprintf("%s: runs whose first pass met misses <= hot + 5%% of cold", phase), float64(met), fmt.Sprintf("of %d", runs))
		res.AddRatio(phase+": (first pass misses - hot misses) / cold misses, worst run", slices.Max(share), "<= 0.05")
		res.AddRatio(phase+": (first pass misses - hot misses) / cold misses, median", median(share), "")
		res.AddRatio(phase+": first pass / hot pass, median", median(ratio), "")
		if len(lookShare) > 0 {
			res.AddRatio(phase+": the same after a one-look snapshot of the same moment (--observe 0), median", median(lookShare), "")
		}
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("workload: %d point selects a pass over %d ids drawn from %d rows; pool %d MiB on both servers; on the source the workload runs from a cold restart, `snapshot -o FILE` (defaults: --observe auto) starts at the end of its first pass, and the workload goes on until the snapshot is done", queries, hotIDs, rows, pool>>20),
		"source: run 1 with bench prepare's leftovers (sbtest1, then sbtest2 which the workload never reads); later runs after a cold restart and a scan of sbtest2 with innodb_old_blocks_time = 0 (its pages young, as a load's)",
		"standby: the same prepare after another table (other space ids); for the logical copy the source's sbtest1 is rebuilt by INSERT ... SELECT ... ORDER BY c (rows in random key order) and the standby's by ORDER BY id (a dump's restore), each in a 1 GiB pool, then the pool set back; warm --from with its defaults (method auto, --by-key auto)")
	return res, nil
}

// rebuildInOrder replaces a server's sbtest1 by a copy of its rows inserted in the given
// order: by c (random key order) it is a table grown by random inserts, by id a logical
// restore of a dump. Other page numbers either way, pages filled otherwise. The copy is
// made in a 1 GiB pool (the inserts then wait on the CPU, not on reads), then the pool is
// set back.
func rebuildInOrder(ctx context.Context, env Env, s *server, pool int64, order string) error {
	env.Log.Infof("unsettled: %s: sbtest1 rebuilt by INSERT ... SELECT ... ORDER BY %s", filepath.Base(s.sb.Dir), order)
	if err := s.restart(ctx, 1<<30); err != nil {
		return err
	}
	if err := s.exec(ctx,
		"CREATE TABLE sbtest.copy LIKE sbtest.sbtest1",
		"INSERT INTO sbtest.copy SELECT * FROM sbtest.sbtest1 ORDER BY "+order,
		"DROP TABLE sbtest.sbtest1",
		"RENAME TABLE sbtest.copy TO sbtest.sbtest1",
		"ANALYZE TABLE sbtest.sbtest1"); err != nil {
		return err
	}
	return s.restart(ctx, pool)
}

// watchedLine is snapshot's line on how it watched the pool, or that it took one look.
func watchedLine(stdout string) string {
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "watched the pool") {
			return l
		}
	}
	return "one look"
}
