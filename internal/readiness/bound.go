package readiness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/connection"
)

// A readiness probe run every few seconds for the life of a server must not cost what the
// pool holds each time: an exact count reads the pool's page list (the server copies it, or
// builds a table of it), O(pool). Between two exact counts, InnoDB's global page counters
// bound how far the count can have moved: every page that entered the pool was read or
// created (Innodb_pages_read, Innodb_pages_created), and every page that left it made the
// pool shorter by one or made room for one of those, so
//
//	left    = read + created - (data_now - data_then)     (Innodb_buffer_pool_pages_data)
//	covered_now >= covered_then - left
//	covered_now <= covered_then + read + created
//
// A probe whose lower bound already reaches the threshold, or whose upper bound cannot, needs
// no page list: it reads four status counters. Only a probe that falls between the bounds
// counts again, and its count anchors the next ones. The bounds are global (any page of the
// pool leaving counts against the target), so they are conservative, never optimistic.

// Counted is a Target whose coverage is pages covered over pages wanted.
type Counted interface {
	Count(ctx context.Context) (covered, total int64, detail string, err error)
	// PageExact says whether covered counts every resident page of a fixed set (a
	// manifest's pages). A selection's count is clamped to sizes from statistics, which the
	// server recomputes as it opens tables: only its lower bound holds then.
	PageExact() bool
}

// Bounded answers Coverage from the counters when they settle the question, and from an
// exact Count otherwise. State persists between processes (each probe is one) in StateDir.
type Bounded struct {
	Conn   *connection.Conn
	Target Counted
	// Key names the target (the manifest's checksum, the selection): a state is reused only
	// for the same target on the same server run.
	Key  string
	Want float64
	// StateDir holds one small JSON file per server and target; empty: the user's cache
	// directory (~/.cache/innowarm/readiness).
	StateDir string
	// MaxAge forces an exact count when the last one is older (0: never).
	MaxAge time.Duration
	// Exact is set after each Coverage: whether it counted pages (true) or used bounds.
	Exact bool
}

// anchor is the last exact count and the counters read with it.
type anchor struct {
	ServerStart int64        `json:"server_start"` // unix seconds, from Uptime
	At          time.Time    `json:"at"`
	Covered     int64        `json:"covered"`
	Total       int64        `json:"total"`
	Counters    pageCounters `json:"counters"`
}

type pageCounters = bufferpool.PageCounters

// Bounds is what the counters say of the count now, given an anchor.
type Bounds struct{ Low, High int64 }

// BoundsSince returns the bounds on the covered count now.
func BoundsSince(a anchor, now pageCounters) Bounds {
	entered := max(now.Read-a.Counters.Read, 0) + max(now.Created-a.Counters.Created, 0)
	return Bounds{Low: max(a.Covered-now.LeftSince(a.Counters), 0), High: min(a.Covered+entered, a.Total)}
}

// Coverage implements Target.
func (b *Bounded) Coverage(ctx context.Context) (float64, string, error) {
	now, err := bufferpool.ReadPageCounters(ctx, b.Conn)
	if err != nil {
		return 0, "", err
	}
	path := b.statePath()
	start := time.Now().Unix() - now.Uptime
	if a, ok := loadAnchor(path); ok && a.Total > 0 && abs64(a.ServerStart-start) <= 2 && (b.MaxAge == 0 || time.Since(a.At) < b.MaxAge) {
		bd := BoundsSince(a, now)
		low, high := float64(bd.Low)/float64(a.Total), float64(bd.High)/float64(a.Total)
		switch {
		case low >= b.Want:
			b.Exact = false
			return low, fmt.Sprintf("at least %d of %d pages resident (%.1f%%): counted %s ago, bounded since by the server's page counters", bd.Low, a.Total, 100*low, roundAge(a.At)), nil
		case high < b.Want && b.Target.PageExact():
			b.Exact = false
			return high, fmt.Sprintf("at most %d of %d pages resident (%.1f%%): counted %s ago, bounded since by the server's page counters", bd.High, a.Total, 100*high, roundAge(a.At)), nil
		}
	}
	covered, total, detail, err := b.Target.Count(ctx)
	if err != nil {
		return 0, "", err
	}
	b.Exact = true
	if total > 0 {
		saveAnchor(path, anchor{ServerStart: start, At: time.Now().UTC(), Covered: covered, Total: total, Counters: now})
	}
	if total == 0 {
		return 0, detail, nil
	}
	return float64(covered) / float64(total), detail, nil
}

func roundAge(t time.Time) string { return time.Since(t).Round(time.Second).String() }

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func (b *Bounded) statePath() string {
	dir := b.StateDir
	if dir == "" {
		if c, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(c, "innowarm", "readiness")
		} else {
			dir = filepath.Join(os.TempDir(), "innowarm-readiness")
		}
	}
	srv := b.Conn.Server
	// The user too: what a user may see decides the sizes the target is counted against.
	id := strings.Join([]string{srv.Identity(), srv.Datadir, b.Conn.Opts.Host, strconv.Itoa(b.Conn.Opts.Port), b.Conn.Opts.Socket, b.Conn.Opts.User, b.Key}, "\x00")
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".json")
}

func loadAnchor(path string) (anchor, bool) {
	var a anchor
	raw, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(raw, &a) != nil {
		return a, false
	}
	return a, true
}

// saveAnchor writes the state atomically; a probe that cannot write it still answers, it
// only counts again next time.
func saveAnchor(path string, a anchor) {
	raw, err := json.Marshal(a)
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if os.WriteFile(tmp, raw, 0o600) != nil {
		return
	}
	if os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}
