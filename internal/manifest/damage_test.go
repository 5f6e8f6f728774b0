package manifest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

// bigManifest has enough entries (20,000, some 420 kB) that damage in its middle lies far
// from the trailer and, gzipped, from gzip's CRC.
func bigManifest(t testing.TB) []byte {
	t.Helper()
	m := &Manifest{}
	m.Header = testHeader()
	m.Objects = []Object{{SpaceID: 5, PageType: "INDEX", Schema: "shop", Table: "orders", Index: "PRIMARY"}}
	for i := range 20_000 {
		m.Entries = append(m.Entries, Entry{Object: 0, Page: uint32(1000 + i), LRU: uint32(i), Seen: 1})
	}
	return encode(t, m)
}

// checkDamaged asserts err reports the manifest name as damaged: one line, exit 2, the
// damage said before any detail of a line that did not parse.
func checkDamaged(t *testing.T, err error, name, what string) {
	t.Helper()
	checkFormatError(t, err, name, ErrCorrupt, "the "+what+" is damaged")
	if msg := err.Error(); !strings.HasPrefix(msg, "manifest "+name+": corrupt: the "+what+" is damaged: ") {
		t.Fatalf("error %q does not say first that the %s is damaged", msg, what)
	}
}

// A byte flipped in the middle of a manifest first shows as a line that does not parse; the
// message must say the file is damaged (its checksum, or gzip's CRC or stream), not report
// a malformed line as if the file had been written so.
func TestDamageInTheMiddleIsReportedAsDamage(t *testing.T) {
	plain := bigManifest(t)
	gz := gzipBytes(t, plain)
	for _, c := range []struct {
		name string
		data []byte
	}{{"hot.manifest", plain}, {"hot.manifest.gz", gz}} {
		mid := len(c.data) / 2
		path := filepath.Join(t.TempDir(), c.name)
		parseErrors := 0 // flips whose first symptom is a line that does not parse
		for i := mid; i < mid+24; i++ {
			for bit := range 8 {
				damaged := bytes.Clone(c.data)
				damaged[i] ^= 1 << bit
				_, err := Read(bytes.NewReader(damaged), c.name)
				checkDamaged(t, err, c.name, "file")
				if strings.Contains(err.Error(), "the damage shows at line") {
					parseErrors++
				}
				// Verify, which streams without keeping entries, says the same.
				if err := os.WriteFile(path, damaged, 0o644); err != nil {
					t.Fatal(err)
				}
				_, verr := Verify(path)
				checkDamaged(t, verr, path, "file")
			}
		}
		if parseErrors == 0 {
			t.Errorf("%s: no flip showed as a line that does not parse: the test does not reach the case", c.name)
		}
	}
}

// A line that is wrong in an intact file (its checksums match: written so) is reported as
// what it is, not as damage; a line longer than the reader's buffer is hashed across the
// buffer's refills.
func TestWrongLineInIntactFileIsNotDamage(t *testing.T) {
	good := string(smallManifest(t))
	for _, c := range []struct{ data, says string }{
		{strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n1 1001 1 young 1 0 0\n", 1), "line 15: malformed entry"},
		{strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n1 1001 "+strings.Repeat("9", maxLine+10)+"\n", 1), "line 15: line longer than"},
		{strings.Replace(good, "page_size 16384\n", "page_size 12288\n", 1), "not an InnoDB page size"},
	} {
		data := resign(t, []byte(c.data))
		for name, in := range map[string][]byte{"in.manifest": data, "in.manifest.gz": gzipBytes(t, data)} {
			_, err := Read(bytes.NewReader(in), name)
			checkFormatError(t, err, name, ErrCorrupt, c.says)
			if strings.Contains(err.Error(), "damaged") {
				t.Errorf("%s: an intact file reported as damaged: %v", name, err)
			}
			// Not re-signed, the same line is damage.
			bad := []byte(c.data)
			if strings.HasSuffix(name, ".gz") {
				bad = gzipBytes(t, bad)
			}
			_, err = Read(bytes.NewReader(bad), name)
			checkDamaged(t, err, name, "file")
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: %v does not say where the damage showed (%q)", name, err, c.says)
			}
		}
	}
}

// A manifest in object storage damaged behind the server's back (same size) or cut short:
// the object's stored checksum, gzip's and the manifest's own find it, and the message says
// the object is damaged and names it, however the damage first showed.
func TestDamagedObjectIsReportedAsDamage(t *testing.T) {
	srv, c := manifestBucket(t)
	ctx := context.Background()
	plain := bigManifest(t)
	for key, body := range map[string][]byte{"hot.manifest": plain, "hot.manifest.gz": gzipBytes(t, plain)} {
		u := objstore.URL{Bucket: "manifests", Key: key}
		d := objstore.NewDigester()
		d.Write(body)
		if _, err := c.Put(ctx, u, bytes.NewReader(body), d.Digests(), "application/octet-stream"); err != nil {
			t.Fatal(err)
		}
		load := func() error {
			r, err := c.Open(ctx, u)
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = Read(r, u.String())
			return err
		}
		if err := load(); err != nil {
			t.Fatalf("%s intact: %v", u, err)
		}
		path := srv.ObjectPath("manifests", key)
		for _, flip := range []byte{0x01, 0x10, 0x80} {
			damaged := bytes.Clone(body)
			damaged[len(body)/2] ^= flip
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			err := load()
			checkDamaged(t, err, u.String(), "object")
			if !errors.Is(err, objstore.ErrChecksum) && !strings.Contains(err.Error(), "checksum mismatch") && !strings.Contains(err.Error(), "gzip") {
				t.Errorf("%s: %v names no checksum", u, err)
			}
		}
		// Cut short: truncated or damaged, never a line that does not parse as if written so.
		if err := os.WriteFile(path, body[:len(body)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		err := load()
		if (!errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated)) || exitcode.Of(err) != exitcode.Usage ||
			strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "manifest "+u.String()+": ") || strings.Contains(err.Error(), " read: ") {
			t.Errorf("%s cut short: %v (exit %d), want one line, exit 2, truncated or damaged", u, err, exitcode.Of(err))
		}
		t.Logf("%s cut short: %v", u, err)
	}
}

// manifestBucket starts an S3 server of the test's own with a bucket "manifests", and a
// client of it, with the environment's credentials only.
func manifestBucket(t *testing.T) (*s3test.Server, *objstore.Client) {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "manifests")
	s3test.Isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	c, err := objstore.New(context.Background(), srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}
