package catalog

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
)

// Cache gives a caller that loads the same selection again and again (snapshot --every,
// each round of follow on both of its servers) the catalog it loaded last, for as long as
// the server's dictionary says no table, partition, index or column changed. On MariaDB,
// information_schema's TABLES sizes, STATISTICS and PARTITIONS open every selected table:
// 11-16 s for a server of 20,000 tables, paid at each capture, and each time the selected
// tables go through the server's table cache, pushing out the ones its clients use. The
// dictionary's fingerprint reads views that open no table (flavor.DictionaryFingerprint).
//
// What the fingerprint does not see (index sizes growing, a table's comment, MariaDB's
// IGNORED indexes, changed without a rebuild) is at most MaxAge old; the tablespaces' file
// sizes are read again at every reuse.
type Cache struct {
	// MaxAge bounds how long one load is given again; 0 means DefaultCacheAge.
	MaxAge time.Duration

	mu     sync.Mutex
	filter Filter // the filter of the cached load, Exact aside
	reads  Reads  // what the cached load read
	exact  map[TableName]bool
	print  fingerprint
	cat    *Catalog
	at     time.Time
	// derived holds what Derived built from the cached load, dropped with it.
	derived map[string]any
	// Loads and Reuses count what Load did, for tests and logs.
	Loads, Reuses int
}

// DefaultCacheAge is how long a cached catalog lasts when Cache.MaxAge is 0: sizes the
// dictionary does not fingerprint are at most this old, and a server of 20,000 tables pays
// its full catalog read once per this time instead of once per capture.
const DefaultCacheAge = 10 * time.Minute

// fingerprint is the server and a count and a checksum of each of its dictionary views
// (flavor.DictionaryFingerprint): any CREATE, DROP, RENAME, TRUNCATE, rebuild, partition
// change, index or column change moves one of them.
type fingerprint string

func readFingerprint(ctx context.Context, sess *connection.Session, srv flavor.Server) (fingerprint, error) {
	var parts []string
	for _, src := range srv.DictionaryFingerprint() {
		var n, sum int64
		q := "SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS(' ', " + src.Columns + "))), 0) FROM " + src.From
		if err := sess.QueryRow(ctx, q, nil, &n, &sum); err != nil {
			return "", fmt.Errorf("read the dictionary's fingerprint: %w", explainPrivilege(err, src.From))
		}
		parts = append(parts, fmt.Sprintf("%s %d %d", src.From, n, sum))
	}
	return fingerprint(srv.String() + "\n" + strings.Join(parts, "\n")), nil
}

// Load is catalog.Load, given again from the cache when the filter is the one of the cached
// load (or, with Exact, names a subset of its tables) and the dictionary has not changed.
// A filter whose Exact tables the cache lacks loads the union of both, so that a follow
// round whose hot set moved to a few new tables reuses the catalog from the next round on.
// The catalog returned is the caller's to change (its slices are its own; the tables are
// shared and must not be changed). A nil Cache loads every time.
func (c *Cache) Load(ctx context.Context, conn *connection.Conn, f Filter) (*Catalog, error) {
	return c.LoadReading(ctx, conn, f, Reads{})
}

// LoadReading is Load, a load reading as r says (LoadReading); a cached load made without
// r's StoredColumns is given as it is, one made with NoSizes only where r has it too.
func (c *Cache) LoadReading(ctx context.Context, conn *connection.Conn, f Filter, r Reads) (*Catalog, error) {
	if c == nil {
		return LoadReading(ctx, conn, f, r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	// The fingerprint's session is not held through a full load, which opens its own and
	// reads beside it: an account allowed two connections was refused a third, and
	// snapshot, follow and --every (which load through a cache) failed at that limit.
	held := true
	release := func() {
		if held {
			sess.Close()
			held = false
		}
	}
	defer release()
	fp, err := readFingerprint(ctx, sess, conn.Server)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		release()
		// A dictionary view this user or server does not give: every load reads in full,
		// as without a cache.
		c.cat, c.derived = nil, nil
		return LoadReading(ctx, conn, f, r)
	}
	maxAge := cmp.Or(c.MaxAge, DefaultCacheAge)
	base := f
	base.Exact = nil
	// A load without sizes is not given to a caller that wants them.
	same := c.cat != nil && fp == c.print && time.Since(c.at) < maxAge && reflect.DeepEqual(base, c.filter) && (r.NoSizes || !c.reads.NoSizes)
	want, _ := exactSet(f.Exact)
	if same && c.covers(want) {
		if err := refreshFileSizes(ctx, sess, conn.Server, c.cat); err != nil {
			return nil, err
		}
		c.Reuses++
		return c.cat.subset(want), nil
	}
	release()
	load := f
	if same && c.exact != nil && want != nil {
		// The union, so that the cached set only grows while the dictionary stays put.
		for n := range c.exact {
			if !want[n] {
				load.Exact = append(load.Exact, n)
			}
		}
	}
	cat, err := LoadReading(ctx, conn, load, r)
	if err != nil {
		return nil, err
	}
	c.Loads++
	c.filter, c.print, c.cat, c.at, c.derived, c.reads = base, fp, cat, time.Now(), nil, r
	c.exact, _ = exactSet(load.Exact)
	return cat.subset(want), nil
}

// Derived gives what build made of the cached load before (another dictionary read beside
// the catalog), building it once per load under key: it is as current as the catalog Load
// gave last. build gets the whole cached load, of which each catalog Load gave is a part,
// so that what it makes serves them all; without a cache or a cached load it gets cat, and
// runs each time. A failed build is not kept.
func (c *Cache) Derived(key string, cat *Catalog, build func(*Catalog) (any, error)) (any, error) {
	if c == nil {
		return build(cat)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cat == nil {
		return build(cat)
	}
	if v, ok := c.derived[key]; ok {
		return v, nil
	}
	v, err := build(c.cat)
	if err != nil {
		return nil, err
	}
	if c.derived == nil {
		c.derived = map[string]any{}
	}
	c.derived[key] = v
	return v, nil
}

// KnownSpaces is the tablespaces of the catalog's table parts whose id is known.
func (c *Catalog) KnownSpaces() map[uint32]bool {
	spaces := map[uint32]bool{}
	for _, t := range c.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown {
				spaces[p.Space] = true
			}
		}
	}
	return spaces
}

// covers reports whether the cached load holds every table of want (nil: all of the filter).
func (c *Cache) covers(want map[TableName]bool) bool {
	if c.exact == nil {
		return true
	}
	if want == nil {
		return false
	}
	for n := range want {
		if !c.exact[n] {
			return false
		}
	}
	return true
}

// subset is a copy of c with its own slices, keeping only the tables (and skips) of want;
// nil keeps them all.
func (c *Catalog) subset(want map[TableName]bool) *Catalog {
	out := *c
	out.Tables = slices.Clone(c.Tables)
	out.Skipped = slices.Clone(c.Skipped)
	out.Notes = slices.Clone(c.Notes)
	out.estimateNotes = slices.Clone(c.estimateNotes)
	if want == nil {
		return &out
	}
	out.Tables = slices.DeleteFunc(out.Tables, func(t *Table) bool { return !want[TableName{t.Schema, t.Name}] })
	out.Skipped = slices.DeleteFunc(out.Skipped, func(s Skip) bool { return !want[TableName{s.Schema, s.Table}] })
	return &out
}

// refreshFileSizes reads the tablespaces' sizes again: they grow between captures, and the
// key capture chooses how to read the files by them.
func refreshFileSizes(ctx context.Context, sess *connection.Session, srv flavor.Server, cat *Catalog) error {
	sizes, err := readFileSizes(ctx, sess, srv)
	if err != nil {
		return err
	}
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if s, ok := sizes[p.Space]; ok && p.SpaceKnown {
				p.FileSize = s
			}
		}
		for i := range t.Aux {
			if s, ok := sizes[t.Aux[i].Space]; ok {
				t.Aux[i].FileSize = s
			}
		}
	}
	return nil
}
