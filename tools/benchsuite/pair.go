package benchsuite

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// pair is a source server and a standby with the same sbtest data, the standby's loaded
// after another table so that its space ids differ: hot sets must travel by name.
type pair struct {
	source, standby *server
}

// startPair starts both servers and prepares tables sbtest tables of rows rows on each.
func startPair(ctx context.Context, env Env, name string, pool, rows int64, tables int) (*pair, error) {
	a, err := startServerIn(ctx, env, pool, "source")
	if err != nil {
		return nil, err
	}
	b, err := startServerIn(ctx, env, pool, "standby")
	if err != nil {
		a.close()
		return nil, err
	}
	p := &pair{source: a, standby: b}
	env.Log.Infof("%s: bench prepare --rows %d --tables %d on both servers (the standby after another table); pool %d MiB", name, rows, tables, pool>>20)
	if err := b.exec(ctx, "CREATE DATABASE first", "CREATE TABLE first.t (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		p.close()
		return nil, err
	}
	for _, s := range []*server{a, b} {
		if _, err := s.innowarm(ctx, "bench", "prepare", "--rows", strconv.FormatInt(rows, 10), "--tables", strconv.Itoa(tables), "--create-schema", "sbtest"); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

func (p *pair) close() {
	p.source.close()
	p.standby.close()
}

// tableToPool is the workload table's file size over the pool.
func (p *pair) tableToPool(pool int64) (float64, bool) {
	fi, err := os.Stat(filepath.Join(p.source.sb.Datadir, "sbtest", "sbtest1.ibd"))
	if err != nil {
		return 0, false
	}
	return float64(fi.Size()) / float64(pool), true
}

// drawIDs draws n ids in [1, rows], the hot set of a workload.
func drawIDs(rng *rand.Rand, n int, rows int64) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = 1 + rng.Int64N(rows)
	}
	return ids
}

// passOver is one pass of point selects: queries ids drawn uniformly from hot.
func passOver(rng *rand.Rand, hot []int64, queries int) []int64 {
	ids := make([]int64, queries)
	for i := range ids {
		ids[i] = hot[rng.IntN(len(hot))]
	}
	return ids
}
