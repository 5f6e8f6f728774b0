package manifest

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// FuzzRead: no input makes the reader panic; every refusal is a classified one-line usage
// error; whatever is accepted survives a write/read round trip unchanged.
// `go test -fuzz FuzzRead ./internal/manifest` explores; plain `go test` runs the seeds.
func FuzzRead(f *testing.F) {
	small := smallManifest(f)
	hostile := encode(f, hostileManifest())
	seeds := [][]byte{
		small,
		hostile,
		gzipBytes(f, small),
		small[:len(small)/2],
		[]byte(""),
		[]byte("innowarm-manifest 3\n"),
		[]byte(version2Example),
		[]byte("innowarm-manifest 1\n"),
		[]byte("innowarm-manifest 1\npage_size 16384\ncaptured_at 2026-03-01T10:00:05Z\nend entries=0 objects=0 sha256=0000000000000000000000000000000000000000000000000000000000000000\n"),
		[]byte("innowarm-manifest 2\n"),
		[]byte("0,3\n0,4\n"),
		{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff},
		bytes.Replace(small, []byte("\n1 1001 1 y 1 0 0\n"), []byte("\n9 1001 1 y 1 0 0\n"), 1),
		resign(f, bytes.Replace(small, []byte("object 1 5 BLOB shop orders - -"), []byte("object 1 5 BLOB sh%00p or%20ders p%2D -"), 1)),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add([]byte(keyedManifestText))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage && !strings.Contains(err.Error(), ": read: ") {
				t.Fatalf("error is not a usage error: %v", err)
			}
			if errorKind(err) == nil || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("unclassified or multi-line error: %q", err)
			}
			return
		}
		if m.Header.Entries != int64(len(m.Entries)) || m.Header.Objects != int64(len(m.Objects)) {
			t.Fatalf("accepted with counts %d/%d but %d entries, %d objects", m.Header.Entries, m.Header.Objects, len(m.Entries), len(m.Objects))
		}
		var b bytes.Buffer
		if _, err := Write(&b, m); err != nil {
			t.Fatalf("an accepted manifest cannot be written: %v", err)
		}
		again, err := Read(&b, "again")
		if err != nil {
			t.Fatalf("re-reading what was written: %v", err)
		}
		m.Header.SHA256, again.Header.SHA256 = "", ""  // objects may now come first
		m.Header.FormatVersion = VersionFor(m.Objects) // an older file is written as the oldest version that holds its objects
		m.Name, again.Name = "", ""
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, again)
		}
	})
}

// FuzzEscape: every string survives escaping, and an escaped field never contains a
// separator.
func FuzzEscape(f *testing.F) {
	for _, s := range hostileNames {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		field := appendField(nil, s)
		if bytes.ContainsAny(field, " \n") || len(field) == 0 {
			t.Fatalf("%q escaped to %q", s, field)
		}
		got, err := parseField(field)
		if err != nil || got != s {
			t.Fatalf("%q -> %q -> %q, %v", s, field, got, err)
		}
	})
}
