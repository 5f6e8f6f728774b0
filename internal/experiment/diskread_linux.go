package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// diskSeqLimit bounds the sequential read: enough for a steady figure, short on any disk.
const diskSeqLimit = 512 << 20

// measureDisk reads the experiment table's data file past the OS cache (O_DIRECT): 1 MiB
// blocks in order, then 16 KiB pages at random offsets, 8 at a time for a second, as a
// loader and a crowd of queries read. The figures are the hardware's, on this run's file.
func (r *recRun) measureDisk(ctx context.Context) *DiskRead {
	path := filepath.Join(r.conn.Server.Datadir, r.o.Schema, "sbtest1.ibd")
	d := &DiskRead{File: path}
	if err := diskRead(ctx, path, d); err != nil {
		d.Note = "not measured: " + err.Error()
		r.log.Warnf("disk read speed %s", d.Note)
		return d
	}
	r.log.Infof("disk reads of %s: %.0f MB/s in 1 MiB blocks, %.0f random 16 KiB reads/s (%.0f MB/s) 8 at a time", path, d.SeqMBps, d.RandomIOPS, d.RandomMBps)
	return d
}

func diskRead(ctx context.Context, path string, d *DiskRead) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size() &^ (1<<20 - 1)
	if size < 1<<20 {
		return fmt.Errorf("%s is smaller than 1 MiB", path)
	}
	buf, err := alignedBuffer(1 << 20)
	if err != nil {
		return err
	}
	defer func() { _ = syscall.Munmap(buf) }()
	t0 := time.Now()
	var n int64
	for off := int64(0); off < min(size, diskSeqLimit) && ctx.Err() == nil; off += 1 << 20 {
		m, err := f.ReadAt(buf, off)
		if err != nil && m == 0 {
			return fmt.Errorf("read %s: %w", path, err)
		}
		n += int64(m)
	}
	if secs := time.Since(t0).Seconds(); secs > 0 {
		d.SeqMBps, d.Bytes = float64(n)/1e6/secs, n
	}
	const readers, page = 8, 16 << 10
	var reads atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(time.Second)
	t1 := time.Now()
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := alignedBuffer(page)
			if err != nil {
				return
			}
			defer func() { _ = syscall.Munmap(b) }()
			rng := rand.New(rand.NewPCG(uint64(i), 0x16))
			for time.Now().Before(stop) && ctx.Err() == nil {
				if _, err := f.ReadAt(b, rng.Int64N(size/page)*page); err != nil {
					return
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	if secs := time.Since(t1).Seconds(); secs > 0 {
		d.RandomIOPS = float64(reads.Load()) / secs
		d.RandomMBps = d.RandomIOPS * page / 1e6
	}
	return ctx.Err()
}

// alignedBuffer is memory O_DIRECT can read into: mmap'd, so page-aligned.
func alignedBuffer(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("allocate a read buffer: %w", err)
	}
	return b, nil
}
