package location

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/manifest"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

// generation writes a manifest of pages pages whose hostname names gen, so a reader can
// tell which write it got.
func generation(gen, pages int) (manifest.Header, func(*manifest.Writer) error) {
	h := manifest.Header{
		ServerID: "3e11fa47-71ca-11e1-9e33-c80aa9429562", Hostname: "gen-" + strconv.Itoa(gen), Flavor: "MariaDB",
		ServerVersion: "10.11.19-MariaDB", PageSize: 16 << 10, PoolBytes: int64(pages) << 14, PoolPages: int64(pages),
		CapturedAt: time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC), ToolVersion: "test", Captures: 1,
	}
	return h, func(w *manifest.Writer) error {
		for i := range pages {
			o := manifest.Object{SpaceID: uint32(i % 300), PageType: "INDEX", Schema: "shop", Table: "t" + strconv.Itoa(i%300), Index: "PRIMARY"}
			if err := w.Page(o, uint32(i*7919%1_000_003), uint32(i), i%3 == 0); err != nil {
				return err
			}
		}
		return nil
	}
}

func genOf(t *testing.T, m *manifest.Manifest) int {
	t.Helper()
	g, err := strconv.Atoi(strings.TrimPrefix(m.Header.Hostname, "gen-"))
	if err != nil {
		t.Fatalf("manifest hostname %q", m.Header.Hostname)
	}
	return g
}

func startS3(t *testing.T) (*s3test.Server, *Store) {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "manifests")
	srv.SetEnv(t)
	return srv, &Store{TempDir: t.TempDir()}
}

func write(t *testing.T, st *Store, loc string, gen, pages int, o manifest.WriteOptions) Written {
	t.Helper()
	h, produce := generation(gen, pages)
	w, err := st.Write(context.Background(), loc, h, o, produce)
	if err != nil {
		t.Fatalf("write gen %d to %s: %v", gen, loc, err)
	}
	return w
}

func load(t *testing.T, st *Store, loc string) int {
	t.Helper()
	m, err := st.Load(context.Background(), loc)
	if err != nil {
		t.Fatalf("load %s: %v", loc, err)
	}
	return genOf(t, m)
}

// leftovers lists the objects under the bucket that are not manifests a user named.
func leftovers(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	out, err := srv.Client(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("manifests")})
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, o := range out.Contents {
		if strings.Contains(aws.ToString(o.Key), ".tmp-") {
			tmp = append(tmp, aws.ToString(o.Key))
		}
	}
	return tmp
}

func TestObjectRoundTrip(t *testing.T) {
	srv, st := startS3(t)
	ctx := context.Background()
	for _, name := range []string{"db1/hot.manifest", "db1/hot.manifest.gz"} {
		loc := "s3://manifests/" + name
		w := write(t, st, loc, 1, 5000, manifest.WriteOptions{})
		m, err := st.Load(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Entries) != 5000 || m.Header.SHA256 != w.Header.SHA256 || m.Name != loc {
			t.Fatalf("%s: read %d entries, sha %s (wrote %s), name %q", loc, len(m.Entries), m.Header.SHA256, w.Header.SHA256, m.Name)
		}
		info, err := st.Stat(ctx, loc)
		if err != nil || info.Size != w.Bytes || w.Bytes == 0 {
			t.Fatalf("stat %s = %+v, %v; wrote %d bytes", loc, info, err, w.Bytes)
		}
		if raw, _ := os.ReadFile(srv.ObjectPath("manifests", name)); int64(len(raw)) != w.Bytes || manifest.Compressed(name) != bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
			t.Fatalf("%s: stored %d bytes (gzip %v), wrote %d", name, len(raw), bytes.HasPrefix(raw, []byte{0x1f, 0x8b}), w.Bytes)
		}
		write(t, st, loc, 2, 5000, manifest.WriteOptions{})
		again, err := st.Stat(ctx, loc)
		if err != nil || again.Identity == info.Identity {
			t.Fatalf("identity after a rewrite: %q, was %q (%v)", again.Identity, info.Identity, err)
		}
		if g := load(t, st, loc); g != 2 {
			t.Fatalf("%s holds gen %d, want 2", loc, g)
		}
	}
	if tmp := leftovers(t, srv); len(tmp) > 0 {
		t.Fatalf("temporary objects left: %v", tmp)
	}
	if err := st.CheckWritable(ctx, "s3://manifests/db2/new.manifest", 3); err != nil {
		t.Fatalf("check writable: %v", err)
	}
}

func TestObjectKeepRotation(t *testing.T) {
	srv, st := startS3(t)
	loc := "s3://manifests/hot.manifest.gz"
	for gen := 1; gen <= 4; gen++ {
		write(t, st, loc, gen, 100, manifest.WriteOptions{Keep: 2})
	}
	for loc, want := range map[string]int{loc: 4, "s3://manifests/hot.manifest.1.gz": 3, "s3://manifests/hot.manifest.2.gz": 2} {
		if g := load(t, st, loc); g != want {
			t.Errorf("%s holds gen %d, want %d", loc, g, want)
		}
	}
	if _, err := st.Stat(context.Background(), "s3://manifests/hot.manifest.3.gz"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("slot 3 with --keep 2: %v", err)
	}
	// A smaller --keep deletes the slots beyond it.
	write(t, st, loc, 5, 100, manifest.WriteOptions{Keep: 1})
	if _, err := st.Stat(context.Background(), "s3://manifests/hot.manifest.2.gz"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("slot 2 after --keep 1: %v", err)
	}
	if g := load(t, st, "s3://manifests/hot.manifest.1.gz"); g != 4 {
		t.Errorf("slot 1 holds gen %d, want 4", g)
	}
	// Something else in a slot stops the write before the capture.
	putForeign(t, srv, "hot.manifest.2.gz", "my precious backup")
	h, _ := generation(6, 100)
	produced := false
	_, err := st.Write(context.Background(), loc, h, manifest.WriteOptions{Keep: 2}, func(*manifest.Writer) error { produced = true; return nil })
	if err == nil || produced || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "hot.manifest.2.gz: exists and is not an innowarm manifest") {
		t.Fatalf("write over a foreign slot = %v (produced %v)", err, produced)
	}
}

func putForeign(t *testing.T, srv *s3test.Server, key, body string) {
	t.Helper()
	if _, err := srv.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("manifests"), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func TestObjectNeverWorseThanBefore(t *testing.T) {
	srv, st := startS3(t)
	ctx := context.Background()
	loc := "s3://manifests/hot.manifest"
	write(t, st, loc, 1, 1000, manifest.WriteOptions{Keep: 1})

	// A capture that fails half-way.
	h, produce := generation(2, 1000)
	_, err := st.Write(ctx, loc, h, manifest.WriteOptions{Keep: 1}, func(w *manifest.Writer) error {
		if err := produce(w); err != nil {
			return err
		}
		return errors.New("lost the server")
	})
	if err == nil || !strings.Contains(err.Error(), "not written: lost the server") {
		t.Fatalf("failed capture = %v", err)
	}
	// An empty one where a manifest exists.
	h, _ = generation(3, 0)
	_, err = st.Write(ctx, loc, h, manifest.WriteOptions{Keep: 1}, func(*manifest.Writer) error { return nil })
	if !errors.Is(err, manifest.ErrEmpty) {
		t.Fatalf("empty capture = %v, want ErrEmpty", err)
	}
	if g := load(t, st, loc); g != 1 {
		t.Fatalf("after failed captures the manifest is gen %d, want 1", g)
	}
	if _, err := st.Stat(ctx, "s3://manifests/hot.manifest.1"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("a failed capture rotated: slot 1 = %v", err)
	}
	// Allowed, it replaces.
	write(t, st, loc, 4, 0, manifest.WriteOptions{Keep: 1, AllowEmpty: true})
	if g := load(t, st, loc); g != 4 {
		t.Fatalf("after an allowed empty capture: gen %d", g)
	}
	// An object that is not a manifest is never replaced, and nothing is captured.
	putForeign(t, srv, "backup.sql", "CREATE TABLE precious (id int);\n")
	produced := false
	_, err = st.Write(ctx, "s3://manifests/backup.sql", h, manifest.WriteOptions{}, func(*manifest.Writer) error { produced = true; return nil })
	if err == nil || produced || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "refusing to replace it") {
		t.Fatalf("write over a foreign object = %v (produced %v)", err, produced)
	}
	if err := st.CheckWritable(ctx, "s3://manifests/backup.sql", 0); err == nil {
		t.Fatal("check writable accepted a foreign object")
	}
	if tmp := leftovers(t, srv); len(tmp) > 0 {
		t.Fatalf("temporary objects left: %v", tmp)
	}
}

func TestObjectReadErrors(t *testing.T) {
	srv, st := startS3(t)
	ctx := context.Background()
	loc := "s3://manifests/hot.manifest"
	write(t, st, loc, 1, 2000, manifest.WriteOptions{})
	putForeign(t, srv, "ib_buffer_pool", "0,3\n0,4\n")
	for _, c := range []struct {
		loc, says string
		code      int
	}{
		{"s3://manifests/none.manifest", "manifest s3://manifests/none.manifest: no such object at " + srv.Endpoint, exitcode.Usage},
		{"s3://nobucket/hot.manifest", `bucket "nobucket" does not exist`, exitcode.Usage},
		{"s3://manifests/ib_buffer_pool", "not an innowarm manifest", exitcode.Usage},
		{"s3://manifests", "no object name", exitcode.Usage},
		{"gs://manifests/x", "only s3://", exitcode.Usage},
	} {
		_, err := st.Load(ctx, c.loc)
		if err == nil || exitcode.Of(err) != c.code || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("load %s = %v (exit %d), want exit %d saying %q", c.loc, err, exitcode.Of(err), c.code, c.says)
		}
		if !strings.HasPrefix(c.loc, "s3://manifests/") || c.loc == "s3://manifests" {
			continue
		}
		if _, err := st.Stat(ctx, c.loc); err == nil && strings.Contains(c.loc, "none") {
			t.Errorf("stat %s succeeded", c.loc)
		}
	}
	for _, c := range []struct{ loc, says string }{
		{"s3://nobucket/x.manifest", `bucket "nobucket" does not exist`},
		{"s3://manifests/ib_buffer_pool", "is not an innowarm manifest"},
	} {
		if err := st.CheckWritable(ctx, c.loc, 0); err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), c.says) {
			t.Errorf("check writable %s = %v, want exit 2 saying %q", c.loc, err, c.says)
		}
	}

	// A damaged object: the storage's checksum, then the manifest's own, refuse it.
	path := srv.ObjectPath("manifests", "hot.manifest")
	raw, _ := os.ReadFile(path)
	f, _ := os.OpenFile(path, os.O_WRONLY, 0)
	f.WriteAt([]byte{raw[len(raw)/2] ^ 1}, int64(len(raw)/2))
	f.Close()
	if _, err := st.Load(ctx, loc); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("load of a damaged object = %v (exit %d), want exit 2", err, exitcode.Of(err))
	}

	// The endpoint gone: a runtime failure, one line, within the bounded attempts.
	srv.Kill()
	_, err := st.Load(ctx, loc)
	if err == nil || exitcode.Of(err) != exitcode.Runtime || !strings.Contains(err.Error(), "cannot reach the endpoint") {
		t.Fatalf("load with the endpoint gone = %v (exit %d), want exit 1", err, exitcode.Of(err))
	}
	h, produce := generation(2, 10)
	if _, err := st.Write(ctx, loc, h, manifest.WriteOptions{}, produce); err == nil || exitcode.Of(err) != exitcode.Runtime {
		t.Fatalf("write with the endpoint gone = %v (exit %d), want exit 1", err, exitcode.Of(err))
	}
	if err := st.CheckWritable(ctx, loc, 0); err == nil || exitcode.Of(err) != exitcode.Runtime {
		t.Fatalf("check writable with the endpoint gone = %v, want exit 1", err)
	}
}

// TestObjectKilledAtEachStep kills the storage right after each step of a write and
// restarts it: the target is the previous manifest until the copy, the new one after it,
// and its rotation slot is never lost.
func TestObjectKilledAtEachStep(t *testing.T) {
	for _, step := range []string{stepUploaded, stepRotated, stepCopied} {
		t.Run(step, func(t *testing.T) {
			srv, st := startS3(t)
			loc := "s3://manifests/hot.manifest.gz"
			write(t, st, loc, 1, 3000, manifest.WriteOptions{Keep: 1})
			write(t, st, loc, 2, 3000, manifest.WriteOptions{Keep: 1})
			st.afterStep = func(s string) {
				if s == step {
					srv.Kill()
				}
			}
			h, produce := generation(3, 3000)
			_, err := st.Write(context.Background(), loc, h, manifest.WriteOptions{Keep: 1}, produce)
			st.afterStep = nil
			srv.Restart(t)
			want, wantSlot := 2, 1
			if step != stepUploaded {
				wantSlot = 2 // rotated before the kill
			}
			if step == stepCopied {
				want = 3
				if err != nil {
					t.Fatalf("a write killed after its copy reported %v: the rest is best effort", err)
				}
			} else if err == nil {
				t.Fatal("a write killed before its copy reported success")
			}
			if g := load(t, st, loc); g != want {
				t.Errorf("killed after %s: the manifest is gen %d, want %d", step, g, want)
			}
			if g := load(t, st, "s3://manifests/hot.manifest.1.gz"); g != wantSlot {
				t.Errorf("killed after %s: slot 1 is gen %d, want %d", step, g, wantSlot)
			}
			write(t, st, loc, 4, 3000, manifest.WriteOptions{Keep: 1})
			if g := load(t, st, loc); g != 4 {
				t.Errorf("the next write: gen %d", g)
			}
		})
	}
}

// TestObjectKilledAtRandomMoments is the sidecar's life with a storage that crashes: writes
// of a large manifest (as snapshot --every makes them) while versitygw is killed -9 at a
// random moment of each one's exchange with it (upload, verification, rotation, copy), 10
// times, and restarted on the same directory. After every restart the manifest reads back whole and valid: the last one
// written, or the one being written if its copy had completed.
func TestObjectKilledAtRandomMoments(t *testing.T) {
	srv, st := startS3(t)
	loc := "s3://manifests/prod/db1/hot.manifest"
	const pages = 60_000 // about 1.8 MB plain
	var encoded time.Time
	st.afterStep = func(s string) {
		if s == stepEncoded {
			encoded = time.Now()
		}
	}
	write(t, st, loc, 0, pages, manifest.WriteOptions{Keep: 1})
	write(t, st, loc, 0, pages, manifest.WriteOptions{Keep: 1}) // with a rotation, as the rest
	exchange := time.Since(encoded)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("%d pages: upload, verify, rotate and copy take %s; kill times drawn with seed %d", pages, exchange.Round(time.Millisecond), seed)
	valid, committed, failed := 0, 0, 0
	for gen := 1; gen <= 10; gen++ {
		// One kill in each tenth of the exchange (and a little beyond it, since a write
		// under load takes longer), at a random moment within it.
		delay := time.Duration((float64(gen-1) + rng.Float64()) / 10 * 1.3 * float64(exchange))
		killed := make(chan struct{})
		st.afterStep = func(s string) {
			if s == stepEncoded {
				go func() { time.Sleep(delay); srv.Kill(); close(killed) }()
			}
		}
		h, produce := generation(gen, pages)
		_, err := st.Write(context.Background(), loc, h, manifest.WriteOptions{Keep: 1}, produce)
		<-killed
		srv.Restart(t)
		m, lerr := st.Load(context.Background(), loc)
		if lerr != nil {
			t.Fatalf("kill %d after %s (write error: %v): the manifest does not read back: %v", gen, delay, err, lerr)
		}
		g := genOf(t, m)
		switch {
		case err == nil && g != gen:
			t.Fatalf("kill %d: the write succeeded but the manifest is gen %d", gen, g)
		case g != gen && g != valid:
			t.Fatalf("kill %d: the manifest is gen %d, want %d or %d", gen, g, valid, gen)
		case len(m.Entries) != pages:
			t.Fatalf("kill %d: %d entries", gen, len(m.Entries))
		}
		if err != nil {
			failed++
		}
		if g == gen {
			committed++
		}
		valid = g
	}
	t.Logf("10 kills: %d writes failed, %d replaced the manifest; it read back valid after each", failed, committed)
}

func TestLocalPathsUnchanged(t *testing.T) {
	st := &Store{}
	dir := t.TempDir()
	loc := filepath.Join(dir, "hot.manifest.gz")
	w := write(t, st, loc, 1, 100, manifest.WriteOptions{Keep: 1})
	write(t, st, loc, 2, 100, manifest.WriteOptions{Keep: 1})
	if g := load(t, st, loc); g != 2 {
		t.Fatalf("gen %d", g)
	}
	if g := load(t, st, filepath.Join(dir, "hot.manifest.1.gz")); g != 1 {
		t.Fatalf("slot 1: gen %d", g)
	}
	info, err := st.Stat(context.Background(), loc)
	if err != nil || info.Size == 0 || w.Bytes == 0 || !strings.Contains(info.Identity, loc) {
		t.Fatalf("stat = %+v, %v", info, err)
	}
	for _, c := range []struct{ loc, says string }{
		{filepath.Join(dir, "nodir", "x"), "does not exist"},
		{filepath.Join(dir, "none.manifest"), ""},
	} {
		err := st.CheckWritable(context.Background(), c.loc, 0)
		if (c.says == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.says)) {
			t.Errorf("check writable %s = %v", c.loc, err)
		}
	}
	if _, err := st.Stat(context.Background(), filepath.Join(dir, "none")); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("stat of a missing file = %v", err)
	}
	// No S3 client is made for local files: a broken S3 configuration does not matter.
	broken := &Store{S3: objstore.Config{Endpoint: "not a url", Profile: "nosuch"}}
	if _, err := broken.Load(context.Background(), loc); err != nil {
		t.Fatalf("a local load with a broken S3 configuration: %v", err)
	}
	if _, err := broken.Load(context.Background(), "s3://b/k"); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("an object load with a broken S3 configuration = %v, want exit 2", err)
	}
}

// TestObjectKeyWithoutRoomForItsTemporaryKey: a manifest's key whose temporary key (the
// upload's first stop, 19 bytes longer) would be over S3's 1,024 bytes is a usage error
// before anything is captured or sent: a key of 1,006 to 1,024 bytes passed the URL's
// check, and its write to AWS S3 would fail after the capture, the temporary key refused
// (this test's server, versitygw, stores such keys: without the check the write went
// through). A key at the bound (1,005 bytes) is written and read back, its temporary key
// removed.
func TestObjectKeyWithoutRoomForItsTemporaryKey(t *testing.T) {
	srv, st := startS3(t)
	ctx := context.Background()
	// Parts of 200 bytes: each a file name on the S3 server's disk, under its 255.
	key := func(n int) string {
		var b strings.Builder
		for n-b.Len() > 200 {
			b.WriteString(strings.Repeat("k", 199) + "/")
		}
		b.WriteString(strings.Repeat("v", n-b.Len()-3) + ".gz")
		return b.String()
	}
	over := "s3://manifests/" + key(1006)
	if len(key(1006)) != 1006 || len(key(1005)) != 1005 {
		t.Fatalf("keys of %d and %d bytes", len(key(1006)), len(key(1005)))
	}
	for _, keep := range []int{0, 3} {
		if err := st.CheckWritable(ctx, over, keep); exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "use a key of at most 1005 bytes") {
			t.Errorf("keep %d: CheckWritable of a 1,006-byte key: %v, want a usage error naming the bound", keep, err)
		}
		h, produce := generation(1, 10)
		called := false
		_, err := st.Write(ctx, over, h, manifest.WriteOptions{Keep: keep}, func(w *manifest.Writer) error { called = true; return produce(w) })
		if exitcode.Of(err) != exitcode.Usage || called {
			t.Errorf("keep %d: Write of a 1,006-byte key: %v (produced: %v), want a usage error before producing", keep, err, called)
		}
	}
	at := "s3://manifests/" + key(1005)
	if err := st.CheckWritable(ctx, at, 0); err != nil {
		t.Fatalf("CheckWritable of a 1,005-byte key: %v", err)
	}
	write(t, st, at, 1, 10, manifest.WriteOptions{})
	if g := load(t, st, at); g != 1 {
		t.Errorf("read back generation %d", g)
	}
	if tmp := leftovers(t, srv); len(tmp) > 0 {
		t.Errorf("left behind: %v", tmp)
	}
}

// TestInterruptedWriteKeepsTheManifest: a write whose context ends while its pages are
// produced (Ctrl-C during a huge pool's encoding) fails with the context's error and
// leaves the manifest as it was, on a local path and on an object: the local file was
// replaced once the producer, which does not look at the context, had finished.
func TestInterruptedWriteKeepsTheManifest(t *testing.T) {
	_, objects := startS3(t)
	for _, c := range []struct {
		st  *Store
		loc string
	}{
		{&Store{}, filepath.Join(t.TempDir(), "hot.manifest")},
		{objects, "s3://manifests/interrupted.manifest"},
	} {
		write(t, c.st, c.loc, 1, 100, manifest.WriteOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		h, produce := generation(2, 100)
		_, err := c.st.Write(ctx, c.loc, h, manifest.WriteOptions{}, func(w *manifest.Writer) error {
			cancel() // the interrupt comes while the pages are written
			return produce(w)
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: an interrupted write = %v, want context.Canceled", c.loc, err)
		}
		if g := load(t, c.st, c.loc); g != 1 {
			t.Errorf("%s: after an interrupted write the manifest is generation %d, want the one before it (1)", c.loc, g)
		}
	}
}
