package benchsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/innowarm/innowarm/internal/sqltext"
	"github.com/innowarm/innowarm/internal/units"
)

// The capturecost scenario (issue 21): what reading the pages' key ranges adds to
// `snapshot`. The key ranges come from the non-leaf pages of the captured indexes'
// tablespace files, so the data is shaped the way that makes those pages real: tables that
// grew by inserts in random key order with their secondary indexes maintained (BINARY(16),
// BIGINT, composite DATETIME(3) primary keys; INT, DATETIME, VARCHAR, DECIMAL secondary
// keys). For each pool size the pool is filled from those tables, then `snapshot
// --no-keys` and `snapshot` (with keys) are run one after the other, the order swapped
// every round, and each round's ratio of the two is kept: the target is on the median.
func init() {
	Register(Scenario{
		Name:  "capturecost",
		Issue: 21,
		About: "what key capture adds to snapshot at 1 and 12 GiB pools of random-order tables: snapshot / snapshot --no-keys, alternating rounds",
		Run:   runCaptureCostBench,
	})
}

// captureSetBytes is what one set of the three tables takes on disk per million rows
// (orders 320 MB, accounts 315 MB, events 210 MB on MariaDB 10.11).
const captureSetBytes = 850 << 20

// captureRun is one snapshot command's run.
type captureRun struct {
	Keys       bool    `json:"keys"`
	Seconds    float64 `json:"seconds"`
	CPU        float64 `json:"cpu_seconds"`
	Entries    int64   `json:"entries"`
	Bytes      int64   `json:"bytes"`
	KeySeconds float64 `json:"key_seconds"`
	TreePages  int64   `json:"tree_pages_read"`
	Keyed      int64   `json:"keyed_pages"`
}

func runCaptureCostBench(ctx context.Context, env Env) (Result, error) {
	var res Result
	pools := []int64{1 << 30, 12 << 30}
	rowsPerSet, rounds := int64(1_000_000), 7
	if env.Quick() {
		pools = []int64{128 << 20}
		rowsPerSet, rounds = 100_000, 5
	}
	maxPool := pools[len(pools)-1]
	// The data is loaded into the largest pool: random-order inserts into a pool that
	// holds them are bound by the CPU, not by reads.
	s, err := startServer(ctx, env, maxPool)
	if err != nil {
		return res, err
	}
	defer s.close()
	perSet := captureSetBytes * rowsPerSet / 1_000_000
	sets := int(maxPool*11/10/perSet) + 1
	env.Log.Infof("capturecost: %d sets of 3 tables of %d rows in random key order (about %s)", sets, rowsPerSet, units.FormatBytes(int64(sets)*perSet))
	if err := s.exec(ctx, "CREATE DATABASE capture"); err != nil {
		return res, err
	}
	if err := loadCaptureSets(ctx, s, sets, rowsPerSet); err != nil {
		return res, err
	}
	var tables []string
	for i := 1; i <= sets; i++ {
		for _, t := range []string{"orders", "accounts", "events"} {
			tables = append(tables, fmt.Sprintf("capture.%s%d", t, i))
		}
	}
	for _, pool := range pools {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		label := "@ " + units.FormatBytes(pool)
		runs, err := measureCaptureCost(ctx, env, s, pool, tables, rounds)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("pool %s: %v", units.FormatBytes(pool), err))
			env.Log.Warnf("capturecost: pool %s: %v", units.FormatBytes(pool), err)
			continue
		}
		var wall, cpu, noKeys, withKeys, noKeysCPU, withKeysCPU, keySecs []float64
		var keyed captureRun
		for i := 0; i+1 < len(runs); i += 2 {
			a, b := runs[i], runs[i+1] // one round: one of each, in either order
			if a.Keys {
				a, b = b, a
			}
			wall = append(wall, b.Seconds/a.Seconds)
			if a.CPU > 0 {
				cpu = append(cpu, b.CPU/a.CPU)
			}
			noKeys, withKeys = append(noKeys, a.Seconds), append(withKeys, b.Seconds)
			noKeysCPU, withKeysCPU = append(noKeysCPU, a.CPU), append(withKeysCPU, b.CPU)
			keySecs = append(keySecs, b.KeySeconds)
			keyed = b
		}
		res.AddMetric("snapshot --no-keys "+label+", median", median(noKeys), "s")
		res.AddMetric("snapshot (keys) "+label+", median", median(withKeys), "s")
		res.AddMetric("snapshot --no-keys CPU "+label+", median", median(noKeysCPU), "s")
		res.AddMetric("snapshot (keys) CPU "+label+", median", median(withKeysCPU), "s")
		res.AddMetric("key capture's own clock "+label+", median", median(keySecs), "s")
		res.AddMetric("entries "+label, float64(keyed.Entries), "")
		res.AddMetric("keyed entries "+label, float64(keyed.Keyed), "")
		res.AddMetric("non-leaf pages read "+label, float64(keyed.TreePages), "")
		res.AddMetric("manifest bytes with keys "+label, float64(keyed.Bytes), "B")
		res.AddRatio(fmt.Sprintf("snapshot / snapshot --no-keys at %s, wall time, median of %d rounds", units.FormatBytes(pool), len(wall)), median(wall), "<= 1.2")
		res.AddRatio(fmt.Sprintf("snapshot / snapshot --no-keys at %s, CPU time, median of %d rounds", units.FormatBytes(pool), len(cpu)), median(cpu), "")
		env.Log.Infof("capturecost: pool %s: %d entries (%d keyed, %d non-leaf pages read): --no-keys %.3f s, keys %.3f s (key capture %.3f s); ratio %.2f wall, %.2f CPU (medians of %d rounds)",
			units.FormatBytes(pool), keyed.Entries, keyed.Keyed, keyed.TreePages, median(noKeys), median(withKeys), median(keySecs), median(wall), median(cpu), len(wall))
	}
	return res, nil
}

// loadCaptureSets creates sets of three tables, each filled by batches of rows in random
// key order (their keys are hashes of a sequence number), two tables at a time.
func loadCaptureSets(ctx context.Context, s *server, sets int, rows int64) error {
	srv := s.conn.Server
	var stmts [][]string // per set, in order
	for i := 1; i <= sets; i++ {
		orders, accounts, events := sqltext.Table("capture", fmt.Sprintf("orders%d", i)), sqltext.Table("capture", fmt.Sprintf("accounts%d", i)), sqltext.Table("capture", fmt.Sprintf("events%d", i))
		set := []string{
			"CREATE TABLE " + orders + " (id BINARY(16) PRIMARY KEY, customer_id INT NOT NULL, created DATETIME NOT NULL, status TINYINT NOT NULL, " +
				"note CHAR(100) NOT NULL, KEY (customer_id), KEY (created)) ENGINE=InnoDB",
			"CREATE TABLE " + accounts + " (id BIGINT UNSIGNED PRIMARY KEY, name VARCHAR(40) NOT NULL, balance DECIMAL(14,2) NOT NULL, " +
				"pad VARCHAR(80) NOT NULL, KEY (name), KEY (balance)) ENGINE=InnoDB",
			"CREATE TABLE " + events + " (tenant INT NOT NULL, ts DATETIME(3) NOT NULL, n INT NOT NULL, kind VARCHAR(16) NOT NULL, " +
				"payload CHAR(60) NOT NULL, PRIMARY KEY (tenant, ts, n), KEY (kind, ts)) ENGINE=InnoDB",
		}
		const batch = 100_000
		for lo := int64(1); lo <= rows; lo += batch {
			hi := min(lo+batch-1, rows)
			series := srv.Series("capture", lo, hi)
			set = append(set,
				fmt.Sprintf("INSERT INTO %s SELECT UNHEX(%s), FLOOR(RAND()*2000000), '2020-01-01' + INTERVAL FLOOR(RAND()*150000000) SECOND, seq %% 5, %s FROM %s",
					orders, srv.Hex32(fmt.Sprintf("CONCAT(%d, '-', seq)", i)), srv.Hex32("RAND()"), series),
				// seq * 2654435761 is one-to-one modulo 2^40 (the multiplier is odd).
				fmt.Sprintf("INSERT INTO %s SELECT (seq * 2654435761 + %d) %% 1099511627776, CONCAT('user-', %s), ROUND(RAND()*1000000, 2), REPEAT('x', FLOOR(RAND()*80)) FROM %s",
					accounts, i, srv.Hex32(fmt.Sprintf("CONCAT(%d, seq)", i)), series),
				fmt.Sprintf("INSERT INTO %s SELECT FLOOR(RAND()*5000), '2024-01-01' + INTERVAL FLOOR(RAND()*31536000000)*1000 MICROSECOND, seq, "+
					"ELT(1 + seq %% 7, 'click', 'view', 'buy', 'login', 'logout', 'search', 'error'), %s FROM %s", events, srv.Hex32("RAND()"), series))
		}
		stmts = append(stmts, set)
	}
	work := make(chan []string)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for set := range work {
				if err := s.exec(ctx, set...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, set := range stmts {
		select {
		case work <- set:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// measureCaptureCost restarts the server with the pool, fills it from the tables, and runs
// the two snapshots rounds times, alternating which goes first.
func measureCaptureCost(ctx context.Context, env Env, s *server, pool int64, tables []string, rounds int) ([]captureRun, error) {
	env.Log.Infof("capturecost: pool %s", units.FormatBytes(pool))
	if err := s.restart(ctx, pool); err != nil {
		return nil, err
	}
	if _, err := s.innowarm(ctx, "warm", "--tables", strings.Join(tables, ","), "--budget", "100%"); err != nil {
		return nil, fmt.Errorf("fill the pool: %w", err)
	}
	manifest := fmt.Sprintf("%s/pool-%d.manifest", env.OutDir, pool>>20)
	one := func(keys bool) (captureRun, error) {
		args := []string{"snapshot", "-o", manifest, "--json", "--observe", "0"} // the cost of one look
		if !keys {
			args = append(args, "--no-keys")
		}
		m, err := s.innowarm(ctx, args...)
		if err != nil {
			return captureRun{}, err
		}
		var out struct {
			Entries int64 `json:"entries"`
			Bytes   int64 `json:"bytes"`
			Keys    struct {
				Seconds   float64 `json:"seconds"`
				TreePages int64   `json:"tree_pages_read"`
				Keyed     int64   `json:"keyed_pages"`
				Note      string  `json:"note"`
			} `json:"keys"`
		}
		if err := json.Unmarshal([]byte(m.stdout), &out); err != nil {
			return captureRun{}, fmt.Errorf("snapshot --json: %w", err)
		}
		if keys && (out.Keys.Note != "" || out.Keys.Keyed == 0) {
			return captureRun{}, fmt.Errorf("snapshot captured no keys: %s", out.Keys.Note)
		}
		return captureRun{Keys: keys, Seconds: m.seconds, CPU: m.cpu, Entries: out.Entries, Bytes: out.Bytes,
			KeySeconds: out.Keys.Seconds, TreePages: out.Keys.TreePages, Keyed: out.Keys.Keyed}, nil
	}
	// A first pair, not counted: the tablespace files' non-leaf pages come into the OS
	// page cache as any capture after the first finds them.
	var runs []captureRun
	for r := -1; r < rounds; r++ {
		order := []bool{r%2 == 0, r%2 != 0}
		for _, keys := range order {
			c, err := one(keys)
			if err != nil {
				return runs, err
			}
			if r >= 0 {
				runs = append(runs, c)
			}
		}
	}
	return runs, nil
}
