package benchsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

// The S3 scenario (issue 20): warm --from a manifest in object storage against the same
// manifest (the same bytes) from a local file, after a cold restart each, rounds alternating;
// and the manifest's read alone (location.Store.Load), in process, for the snapshot's
// manifest and a 1M-page one. The storage is versitygw on loopback, so the figures are
// innowarm's own cost of object storage (requests, checksums, streaming), not a network's.
func init() {
	Register(Scenario{
		Name:  "s3",
		Issue: 20,
		About: "warm --from s3:// (versitygw on loopback) vs the same manifest from a local file; the manifest read alone",
		Run:   runS3Bench,
	})
}

func runS3Bench(ctx context.Context, env Env) (Result, error) {
	var res Result
	rows, pool, rounds, bigPages := int64(3_500_000), int64(1<<30), 15, 1_000_000
	if env.Quick() {
		rows, pool, rounds, bigPages = 300_000, 128<<20, 2, 100_000
	}
	s, err := startServer(ctx, env, pool)
	if err != nil {
		return res, err
	}
	defer s.close()
	env.Log.Infof("s3: bench prepare --rows %d; pool %d MiB", rows, pool>>20)
	if _, err := s.innowarm(ctx, "bench", "prepare", "--rows", strconv.FormatInt(rows, 10), "--tables", "1", "--create-schema", "sbtest"); err != nil {
		return res, err
	}
	if err := s.exec(ctx, "SELECT COUNT(*) FROM sbtest.sbtest1 FORCE INDEX (PRIMARY)", "SELECT COUNT(*) FROM sbtest.sbtest1 FORCE INDEX (k_1)"); err != nil {
		return res, err
	}

	bin, err := s3test.EnsureBinary()
	if err != nil {
		return res, err
	}
	srv, err := s3test.Launch(bin, filepath.Join(env.OutDir, "versitygw"), s3test.Options{})
	if err != nil {
		return res, err
	}
	defer srv.Kill()
	if err := srv.CreateBucket(ctx, "manifests"); err != nil {
		return res, err
	}
	// innowarm (child processes and this one) reaches the storage through the AWS
	// environment, as a sidecar would.
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		defer os.Setenv(k, os.Getenv(k))
		os.Setenv(k, v)
	}
	loc := "s3://manifests/bench/hot.manifest"
	snap, err := s.innowarm(ctx, "snapshot", "-o", loc, "--json")
	if err != nil {
		return res, err
	}
	var sr struct {
		Entries int64 `json:"entries"`
		Bytes   int64 `json:"bytes"`
	}
	_ = json.Unmarshal([]byte(snap.stdout), &sr)
	// The same bytes as a local file: the posix backend keeps the object as a file.
	local := filepath.Join(env.OutDir, "hot.manifest")
	raw, err := os.ReadFile(srv.ObjectPath("manifests", "bench/hot.manifest"))
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(local, raw, 0o644); err != nil {
		return res, err
	}
	res.AddMetric("manifest pages", float64(sr.Entries), "pages")
	res.AddMetric("manifest size", float64(sr.Bytes), "bytes")

	// Each round warms from both after a cold restart each, the order alternating. The
	// server's own load phase (the native loader reading the pages) varies by a second from
	// one run to the next on a shared machine and is the same work either way, so innowarm's
	// part (the whole command less the server's load) is reported beside the totals.
	var fromS3, fromFile, ownS3, ownFile, cpuS3, cpuFile, perRound []float64
	for round := range rounds {
		order := []string{local, loc}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		pair := map[string]float64{}
		for _, from := range order {
			if err := s.cold(ctx); err != nil {
				return res, err
			}
			// The cold restart dropped the OS page cache, the storage server's code with it:
			// storage runs elsewhere in life, so it answers one request before the clock starts.
			if err := srv.Ping(ctx); err != nil {
				return res, err
			}
			m, err := s.innowarm(ctx, "warm", "--from", from, "--json", "-q")
			if err != nil {
				return res, err
			}
			own := m.seconds - warmResult(m.stdout).Native.Seconds
			pair[from] = m.seconds
			if from == loc {
				fromS3, ownS3, cpuS3 = append(fromS3, m.seconds), append(ownS3, own), append(cpuS3, m.cpu)
			} else {
				fromFile, ownFile, cpuFile = append(fromFile, m.seconds), append(ownFile, own), append(cpuFile, m.cpu)
			}
			env.Log.Infof("s3: round %d: warm --from %s: %.2f s (innowarm's part %.3f s, its CPU %.3f s)", round+1, from, m.seconds, own, m.cpu)
		}
		perRound = append(perRound, pair[loc]/pair[local])
	}
	res.AddMetric("warm --from s3:// (whole command)", lowerMedian(fromS3), "s")
	res.AddMetric("warm --from file (whole command)", lowerMedian(fromFile), "s")
	res.AddMetric("innowarm's part of warm --from s3:// (whole command less the server's load)", lowerMedian(ownS3), "s")
	res.AddMetric("innowarm's part of warm --from file", lowerMedian(ownFile), "s")
	res.AddMetric("innowarm's CPU, warm --from s3://", lowerMedian(cpuS3), "s")
	res.AddMetric("innowarm's CPU, warm --from file", lowerMedian(cpuFile), "s")
	res.AddRatio("warm --from s3:// / warm --from file (medians)", lowerMedian(fromS3)/lowerMedian(fromFile), "<= 1.1")
	res.AddRatio("warm --from s3:// / warm --from file (median of the rounds' ratios)", lowerMedian(perRound), "")

	// The read alone, in process: the snapshot's manifest, and a large synthetic one.
	st := &location.Store{TempDir: env.OutDir}
	bigLoc, bigLocal := "s3://manifests/bench/big.manifest", filepath.Join(env.OutDir, "big.manifest")
	bigSize, err := writeBigManifest(ctx, st, bigLoc, bigLocal, bigPages)
	if err != nil {
		return res, err
	}
	for _, c := range []struct {
		label, remote, local string
		pages                int64
		size                 int64
	}{{"the snapshot's manifest", loc, local, sr.Entries, sr.Bytes}, {fmt.Sprintf("a %d-page manifest", bigPages), bigLoc, bigLocal, int64(bigPages), bigSize}} {
		// Wall time on a busy machine is mostly waiting for a CPU; this process's CPU time
		// is what the read costs.
		var remote, file, remoteCPU, fileCPU []float64
		for round := range 2 * rounds {
			for i, l := range []string{c.local, c.remote} {
				if round%2 == 1 {
					l = []string{c.remote, c.local}[i]
				}
				t0, c0 := time.Now(), processCPU()
				if _, err := st.Load(ctx, l); err != nil {
					return res, err
				}
				wall, cpu := time.Since(t0).Seconds(), processCPU()-c0
				if l == c.remote {
					remote, remoteCPU = append(remote, wall), append(remoteCPU, cpu)
				} else {
					file, fileCPU = append(file, wall), append(fileCPU, cpu)
				}
			}
		}
		res.AddMetric("read "+c.label+" from s3://", lowerMedian(remote), "s")
		res.AddMetric("read "+c.label+" from a file", lowerMedian(file), "s")
		res.AddMetric("CPU to read "+c.label+" from s3://", lowerMedian(remoteCPU), "s")
		res.AddMetric("CPU to read "+c.label+" from a file", lowerMedian(fileCPU), "s")
		res.AddRatio(fmt.Sprintf("read s3:// / file, CPU, %s (%d pages, %.1f MB)", c.label, c.pages, float64(c.size)/1e6), lowerMedian(remoteCPU)/lowerMedian(fileCPU), "")
	}
	res.Notes = append(res.Notes,
		"innowarm's part is the whole command less the server's native load phase (warm --json's native.seconds): connecting, reading and resolving the manifest, the dump file, the report",
		fmt.Sprintf("pool %d MiB holding sbtest1 (%d rows, both indexes read whole); the manifest: %d pages, %d bytes (plain text)", pool>>20, rows, sr.Entries, sr.Bytes),
		fmt.Sprintf("%d rounds, a cold restart before each warm, the order alternating; figures are medians; warm times are the whole command (the method auto picks)", rounds),
		"storage: versitygw "+s3test.Version+" (posix backend) on loopback; the object's SHA-256 is checked by the SDK as it streams, the manifest's own trailer by innowarm")
	return res, nil
}

// writeBigManifest writes the same synthetic manifest of pages pages (300 objects, random
// page numbers) to an object and a file, and returns its size.
func writeBigManifest(ctx context.Context, st *location.Store, remote, local string, pages int) (int64, error) {
	h := manifest.Header{ServerID: "bench", Hostname: "bench", Flavor: "MariaDB", ServerVersion: "10.11", PageSize: 16 << 10,
		PoolBytes: int64(pages) << 14, PoolPages: int64(pages), CapturedAt: time.Now(), ToolVersion: "bench", Captures: 1}
	produce := func(w *manifest.Writer) error {
		for i := range pages {
			o := manifest.Object{SpaceID: uint32(i % 300), PageType: "INDEX", Schema: "shop", Table: "t" + strconv.Itoa(i%300), Index: "PRIMARY"}
			if err := w.Page(o, uint32(i*7919%4_000_037), uint32(i), i%3 == 0); err != nil {
				return err
			}
		}
		return nil
	}
	var size int64
	for _, loc := range []string{remote, local} {
		w, err := st.Write(ctx, loc, h, manifest.WriteOptions{}, produce)
		if err != nil {
			return 0, err
		}
		size = w.Bytes
	}
	return size, nil
}

// processCPU is this process's user and system time so far, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
