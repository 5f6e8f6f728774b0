// Package metrics exposes a long-running command's state (follow's lag, snapshot --every's
// age) in the Prometheus text format, through the Prometheus Go client: on an HTTP listener
// (--metrics-listen) for a scraper, and/or as a file rewritten atomically after every round
// (--metrics-file) for node_exporter's textfile collector.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Exporter owns a registry and where it is published.
type Exporter struct {
	Registry *prometheus.Registry
	file     string
	srv      *http.Server
	// Addr is the address the listener got (with port 0, the port chosen).
	Addr string
}

// New makes an exporter; listen ("host:port", "" for none) starts serving /metrics at once,
// file ("" for none) is written by Flush.
func New(listen, file string) (*Exporter, error) {
	e := &Exporter{Registry: prometheus.NewRegistry(), file: file}
	if file != "" {
		// The file is written beside itself and renamed into place: a directory that is
		// missing or not writable fails at once, not as a warning every round of a run
		// that exits 0 (a typo in the textfile collector's path went unnoticed).
		f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".check-*")
		if err != nil {
			return nil, exitcode.UsageError(fmt.Errorf("--metrics-file %s: cannot write in its directory: %w", file, err))
		}
		f.Close()
		os.Remove(f.Name())
	}
	if listen == "" {
		return e, nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	e.Addr = ln.Addr().String()
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// Handler serves the registry in the Prometheus exposition format, for a caller that
// mounts /metrics on a server of its own (the agent's, with its TLS and authentication).
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.Registry, promhttp.HandlerOpts{})
}

// Flush writes the metrics file, when one was asked for.
func (e *Exporter) Flush() error {
	if e == nil || e.file == "" {
		return nil
	}
	if err := prometheus.WriteToTextfile(e.file, e.Registry); err != nil {
		return fmt.Errorf("write the metrics file: %w", err)
	}
	return nil
}

// Close flushes the file one last time and stops the listener.
func (e *Exporter) Close() error {
	if e == nil {
		return nil
	}
	err := e.Flush()
	if e.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if serr := e.srv.Shutdown(ctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	}
	return err
}
