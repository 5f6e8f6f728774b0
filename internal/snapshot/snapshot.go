// Package snapshot captures a running server's hot set, the pages in its buffer pool in LRU
// order, to a portable manifest (internal/manifest) that names every page's schema, table,
// partition and index, so that another server can load the same pages.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/manifest"
)

// Options shape a capture.
type Options struct {
	Path        string // "-" for stdout
	Keep        int    // previous manifests kept as PATH.1 ... PATH.N
	AllowEmpty  bool   // let an empty capture replace a manifest
	Filter      catalog.Filter
	ToolVersion string
}

// Result describes one capture.
type Result struct {
	Path         string          `json:"path"`
	Entries      int64           `json:"entries"`
	Objects      int64           `json:"objects"`
	Bytes        int64           `json:"bytes,omitempty"`
	Seconds      float64         `json:"seconds"`
	ReadSeconds  float64         `json:"read_seconds"` // of which reading the page list
	PoolPages    int64           `json:"pool_pages"`
	Unattributed int64           `json:"unattributed_pages"`
	Header       manifest.Header `json:"header"`
	CapturedAt   time.Time       `json:"captured_at"`
}

// Capture writes one manifest of the pool's current content.
func Capture(ctx context.Context, conn *connection.Conn, o Options) (*Result, error) {
	t0 := time.Now()
	f := o.Filter
	if f.Empty() {
		f.All = true
	}
	cat, err := catalog.Load(ctx, conn, f)
	if err != nil {
		return nil, err
	}
	totals, err := bufferpool.ReadTotals(ctx, conn)
	if err != nil {
		return nil, err
	}
	h := manifest.HeaderFor(conn.Server, t0.UTC(), o.ToolVersion)
	if totals.PagesTotal > 0 {
		h.PoolPages = totals.PagesTotal
	}
	filtered := !o.Filter.Empty()
	chosen := map[string]bool{}
	for _, t := range cat.Tables {
		chosen[t.Schema+"\x00"+t.Name] = true
	}
	var st bufferpool.LRUStats
	hdr, err := manifest.WriteFileAtomic(o.Path, h, manifest.WriteOptions{Keep: o.Keep, AllowEmpty: o.AllowEmpty}, func(w *manifest.Writer) error {
		var err error
		st, err = bufferpool.StreamLRU(ctx, conn, cat, func(p bufferpool.LRUPage) error {
			if filtered && !chosen[p.Schema+"\x00"+p.Table] {
				return nil
			}
			return w.Page(manifest.Object{SpaceID: p.Space, PageType: p.PageType, Schema: p.Schema, Table: p.Table, Partition: p.Partition, Index: p.Index}, p.Page, p.LRU, p.Old)
		})
		w.SetCaptureDuration(time.Since(t0))
		return err
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Path: o.Path, Entries: hdr.Entries, Objects: hdr.Objects, Seconds: time.Since(t0).Seconds(), ReadSeconds: st.Seconds,
		PoolPages: h.PoolPages, Unattributed: st.Unattributed, Header: hdr, CapturedAt: h.CapturedAt}
	if o.Path != manifest.StdioName {
		if fi, err := os.Stat(o.Path); err == nil {
			res.Bytes = fi.Size()
		}
	}
	return res, nil
}

// Every captures every interval until ctx is cancelled: a sidecar that keeps a recent
// manifest on disk, so that a crash does not lose the hot set. A failed capture is logged and
// leaves the previous manifest in place; the next tick tries again. It returns nil when
// stopped by ctx (that is how it is meant to end) and each capture's result to report.
func Every(ctx context.Context, conn *connection.Conn, o Options, interval time.Duration, report func(*Result), log *logx.Logger) error {
	if o.Path == manifest.StdioName {
		return fmt.Errorf("--every needs a file (-o PATH), not stdout")
	}
	failures := 0
	for {
		res, err := Capture(ctx, conn, o)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, manifest.ErrEmpty):
			log.Warnf("capture found no pages; kept the previous manifest %s", o.Path)
		case err != nil:
			failures++
			log.Warnf("capture failed (%d in a row), previous manifest kept: %v", failures, err)
		default:
			failures = 0
			report(res)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}
