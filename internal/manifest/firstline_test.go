package manifest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/objstore"
)

// Damage in the first line (the magic, the version) of a manifest is damage like any
// other: an object's stored checksum proves it whatever the line became, a file's trailer
// when the line is still near a manifest's; the message says the object or file is damaged
// and where it showed, not that it is not a manifest or needs a newer innowarm. A file that
// is nothing like a manifest is still said not to be one, without being read further.
func TestDamagedFirstLineIsReportedAsDamage(t *testing.T) {
	plain := bigManifest(t)
	srv, c := manifestBucket(t)
	ctx := context.Background()
	u := objstore.URL{Bucket: "manifests", Key: "hot.manifest"}
	d := objstore.NewDigester()
	d.Write(plain)
	if _, err := c.Put(ctx, u, bytes.NewReader(plain), d.Digests(), "text/plain"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "hot.manifest")
	for _, tc := range []struct {
		at       int
		to       byte
		fileSays error // nil: damaged
	}{
		{3, 'X', nil},                     // the magic
		{0, 0x1f, nil},                    // the magic, as gzip's first byte
		{len(magic) + 1, '9', ErrVersion}, // a future version: only an object's checksum tells
		{len(magic) + 2, 'A', nil},        // the version's end
		{len(magic) + 2, '\r', nil},       // what a CR LF file shows
	} {
		damaged := bytes.Clone(plain)
		damaged[tc.at] = tc.to
		if err := os.WriteFile(srv.ObjectPath("manifests", u.Key), damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := c.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Read(r, u.String())
		r.Close()
		checkDamaged(t, err, u.String(), "object")
		if !strings.Contains(err.Error(), "(the damage shows at line 1: ") {
			t.Errorf("%v does not say where the damage showed", err)
		}
		if err := os.WriteFile(file, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Load(file)
		if tc.fileSays == nil {
			checkDamaged(t, err, file, "file")
		} else if !errors.Is(err, tc.fileSays) {
			t.Errorf("file with byte %d = %q: %v, want %v", tc.at, tc.to, err, tc.fileSays)
		}
	}
	if err := os.WriteFile(file, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); !errors.Is(err, ErrNotManifest) {
		t.Errorf("a file unlike a manifest: %v, want not a manifest", err)
	}
}
