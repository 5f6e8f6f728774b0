package catalog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// limitedConn connects as a user the server lets hold at most n connections at once.
func limitedConn(t *testing.T, n int) *connection.Conn {
	t.Helper()
	return sandboxtest.LimitedUser(t, fmt.Sprintf("lim%d", n), n)
}

// limitsSchema creates a schema of a few tables, one partitioned, for the loads below.
func limitsSchema(t *testing.T) string {
	t.Helper()
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t,
		"CREATE TABLE "+sqltext.Table(db, "a")+" (id INT PRIMARY KEY, k INT, c VARCHAR(20), KEY kk (k))",
		"CREATE TABLE "+sqltext.Table(db, "b")+" (id INT PRIMARY KEY, t TEXT)",
		"CREATE TABLE "+sqltext.Table(db, "p")+" (id INT PRIMARY KEY, v INT, KEY kv (v)) PARTITION BY HASH (id) PARTITIONS 3",
		"INSERT INTO "+sqltext.Table(db, "a")+" VALUES (1, 1, 'x'), (2, 2, 'y')")
	return db
}

func describeCatalog(cat *Catalog) string {
	s := ""
	for _, tb := range cat.Tables {
		s += fmt.Sprintf("%s: %d indexes, %d parts; ", tb.FullName(), len(tb.Indexes), len(tb.Parts))
	}
	return s
}

// TestLoadWithFewConnections: a user the server lets hold two or three connections loads
// the same catalog as root, the dictionary reads that could not have a session of their
// own running after the others ("read table sizes: open session: Error 1226 ...
// max_user_connections").
func TestLoadWithFewConnections(t *testing.T) {
	db := limitsSchema(t)
	f := Filter{Schemas: []string{db}}
	want, err := Load(context.Background(), sandboxtest.Conn(t), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("max_user_connections=%d", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cat, err := Load(ctx, limitedConn(t, n), f)
			if err != nil {
				t.Fatal(err)
			}
			if got, exp := describeCatalog(cat), describeCatalog(want); got != exp || len(cat.Tables) != 3 {
				t.Errorf("catalog:\n%s\nwant:\n%s", got, exp)
			}
		})
	}
}

// TestLoadWithOneConnectionFails: with the load's own session the only one the server
// allows, the reads beside it cannot run: the load fails at once with the server's refusal,
// and does not wait for a session that nothing will free.
func TestLoadWithOneConnectionFails(t *testing.T) {
	db := limitsSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Load(ctx, limitedConn(t, 1), Filter{Schemas: []string{db}})
	if ctx.Err() != nil {
		t.Fatal("the load waited for a session that nothing would free")
	}
	if !connection.LimitReached(err) {
		t.Fatalf("load with one connection: %v, want the server's refusal", err)
	}
}

// TestReadsShareSessionsAtTheLimit: reads the server refuses a session run one after the
// other on the session that frees, all of them, whatever the order they were refused in;
// without a limit they still run side by side.
func TestReadsShareSessionsAtTheLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const reads = 5
	t.Run("limited", func(t *testing.T) {
		conn := limitedConn(t, 2)
		held, err := conn.NewSession(ctx) // the load's own session
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		var running, most atomic.Int32
		var ids sync.Map
		var pending []*pendingRead[int64]
		for i := 0; i < reads; i++ {
			pending = append(pending, startRead(ctx, conn, func(ctx context.Context, s *connection.Session) (int64, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				ids.Store(s.ID(), true)
				var v int64
				err := s.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.TABLES", nil, &v)
				return v, err
			}))
		}
		for i, p := range pending {
			if _, err := p.wait(); err != nil {
				t.Errorf("read %d: %v", i, err)
			}
		}
		if most.Load() != 1 {
			t.Errorf("%d reads ran at once on one free connection", most.Load())
		}
		n := 0
		ids.Range(func(any, any) bool { n++; return true })
		if n != 1 {
			t.Errorf("reads ran on %d sessions, want the one the limit leaves", n)
		}
		// This connection's pool only: the share is the process's, and a read another
		// test's load left running in the background (the race pass, under load) is
		// tracked there too.
		readSessions.mu.Lock()
		_, left := readSessions.pools[conn]
		readSessions.mu.Unlock()
		if left {
			t.Errorf("the connection's pool is still tracked after every read ended")
		}
	})
	t.Run("unlimited", func(t *testing.T) {
		conn := sandboxtest.Conn(t)
		var started atomic.Int32
		all := make(chan struct{})
		var pending []*pendingRead[int64]
		for i := 0; i < reads; i++ {
			pending = append(pending, startRead(ctx, conn, func(ctx context.Context, s *connection.Session) (int64, error) {
				if started.Add(1) == reads {
					close(all)
				}
				select {
				case <-all:
					return s.ID(), nil
				case <-ctx.Done():
					return 0, fmt.Errorf("only %d of %d reads started side by side", started.Load(), reads)
				}
			}))
		}
		seen := map[int64]bool{}
		for i, p := range pending {
			id, err := p.wait()
			if err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			seen[id] = true
		}
		if len(seen) != reads {
			t.Errorf("%d reads ran on %d sessions", reads, len(seen))
		}
	})
}
