// Command innowarm-bench runs `make bench`: innowarm against its peers, in one run, with
// results in JSON and a Markdown table of ratios.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/innowarm/innowarm/tools/benchsuite"
)

func main() {
	var o benchsuite.Options
	flag.StringVar(&o.OutDir, "o", "bench-results", "output directory")
	flag.StringVar(&o.Filter, "run", ".", "only scenarios whose name matches this regexp")
	flag.StringVar(&o.Scale, "scale", "full", "full (the issues' sizes) or quick (a smoke run)")
	flag.StringVar(&o.Bin, "bin", "bin/innowarm", "innowarm binary under test")
	flag.Parse()
	if o.Scale != "full" && o.Scale != "quick" {
		fmt.Fprintln(os.Stderr, "innowarm-bench: -scale must be full or quick")
		os.Exit(2)
	}
	abs, err := filepath.Abs(o.Bin)
	if err == nil {
		o.Bin = abs
	}
	if _, err := os.Stat(o.Bin); err != nil {
		fmt.Fprintf(os.Stderr, "innowarm-bench: %s not found: run make build first\n", o.Bin)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := benchsuite.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "innowarm-bench:", err)
		os.Exit(1)
	}
	fmt.Print(rep.Markdown())
	fmt.Printf("\nresults: %s/results.json, %s/results.md\n", o.OutDir, o.OutDir)
}
