package manifest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEscapeRoundTripsHostileNames(t *testing.T) {
	for _, name := range hostileNames {
		field := appendField(nil, name)
		if bytes.ContainsAny(field, " \t\n\r\x00") {
			t.Errorf("%q escaped to %q, which contains a separator", name, field)
		}
		if !utf8.Valid(field) {
			t.Errorf("%q escaped to %q, which is not UTF-8", name, field)
		}
		got, err := parseField(field)
		if err != nil || got != name {
			t.Errorf("%q -> %q -> %q, %v", name, field, got, err)
		}
	}
}

func TestEscapeKeepsReadableNames(t *testing.T) {
	for in, want := range map[string]string{
		"":         "-",
		"-":        "%2D",
		"orders":   "orders",
		"a b":      "a%20b",
		"100%":     "100%25",
		"日本":       "日本",
		"t\u2028x": "t%E2%80%A8x",
		"\xff":     "%FF",
	} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			if got := string(appendField(nil, in)); got != want {
				t.Errorf("escape %q = %q, want %q", in, got, want)
			}
		})
	}
	for _, bad := range []string{"", "%", "%4", "%zz", "a\tb", "a\rb", "\xff"} {
		if _, err := parseField([]byte(bad)); err == nil {
			t.Errorf("parseField(%q) accepted a field the writer never produces", bad)
		}
	}
	if got, err := parseField([]byte("%e6%97%a5")); err != nil || got != "日" {
		t.Errorf("lower-case hex: %q, %v", got, err)
	}
}

func TestRoundTripHostileNames(t *testing.T) {
	want := hostileManifest()
	data := encode(t, want)
	if !utf8.Valid(data) {
		t.Fatal("the manifest is not valid UTF-8")
	}
	if bytes.ContainsAny(data, "\t\r\x00") {
		t.Fatal("the manifest contains raw tabs, carriage returns or NULs")
	}
	got, err := Read(bytes.NewReader(data), "hostile")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Objects, want.Objects) {
		for i := range want.Objects {
			if i < len(got.Objects) && got.Objects[i] != want.Objects[i] {
				t.Errorf("object %d: got %#v, want %#v", i, got.Objects[i], want.Objects[i])
			}
		}
		t.Fatalf("objects differ (%d vs %d)", len(got.Objects), len(want.Objects))
	}
	if !reflect.DeepEqual(got.Entries, want.Entries) || !reflect.DeepEqual(got.Ranges, want.Ranges) {
		t.Fatal("entries differ")
	}
	h := got.Header
	wantH := want.Header
	wantH.FormatVersion = VersionFor(want.Objects)
	wantH.Entries, wantH.Objects = int64(len(want.Entries)), int64(len(want.Objects))
	for _, e := range want.Entries {
		if want.RangeOf(e).Low != "" {
			wantH.KeyedEntries++
		}
	}
	if wantH.KeyedEntries == 0 {
		t.Fatal("the hostile manifest has no key ranges")
	}
	wantH.SHA256 = h.SHA256
	if h != wantH {
		t.Errorf("header:\n got %+v\nwant %+v", h, wantH)
	}
	if len(h.SHA256) != 64 {
		t.Errorf("checksum %q", h.SHA256)
	}
	// Writing what was read gives the same bytes: the encoding is canonical.
	if again := encode(t, got); !bytes.Equal(again, data) {
		t.Error("re-encoding a read manifest changed its bytes")
	}
}

func TestHeaderFieldsRoundTrip(t *testing.T) {
	m := &Manifest{}
	m.Header = testHeader()
	m.Header.ServerID = "db.example.com:3307"
	m.Header.Flavor = "MySQL"
	m.Header.ServerVersion = "8.0.36-28 Percona Server"
	m.Header.PageSize = 8 << 10
	m.Header.PoolBytes = 512 << 30
	m.Header.PoolPages = (512 << 30) / (8 << 10)
	m.Header.CapturedAt = time.Date(2026, 1, 2, 3, 4, 5, 999, time.FixedZone("JST", 9*3600))
	m.Header.CaptureDuration = 90 * time.Second
	got, err := Read(bytes.NewReader(encode(t, m)), "h")
	if err != nil {
		t.Fatal(err)
	}
	h := got.Header
	if h.ServerID != m.Header.ServerID || h.Flavor != "MySQL" || h.ServerVersion != m.Header.ServerVersion ||
		h.PageSize != 8192 || h.PoolBytes != 512<<30 || h.PoolPages != 1<<26 || h.CaptureDuration != 90*time.Second ||
		h.Hostname != m.Header.Hostname || h.ToolVersion != m.Header.ToolVersion {
		t.Errorf("header: %+v", h)
	}
	// Stored in UTC, to the second.
	if want := time.Date(2026, 1, 1, 18, 4, 5, 0, time.UTC); !h.CapturedAt.Equal(want) || h.CapturedAt.Location() != time.UTC {
		t.Errorf("captured_at %v, want %v", h.CapturedAt, want)
	}
	if h.Entries != 0 || h.Objects != 0 {
		t.Errorf("counts %d/%d for an empty manifest", h.Entries, h.Objects)
	}
}

func TestWriterRefusesBadHeaders(t *testing.T) {
	for name, mutate := range map[string]func(*Header){
		"page size 0":        func(h *Header) { h.PageSize = 0 },
		"page size 12k":      func(h *Header) { h.PageSize = 12 << 10 },
		"page size 128k":     func(h *Header) { h.PageSize = 128 << 10 },
		"no capture time":    func(h *Header) { h.CapturedAt = time.Time{} },
		"negative pool size": func(h *Header) { h.PoolBytes = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			h := testHeader()
			mutate(&h)
			if _, err := NewWriter(io.Discard, h); err == nil {
				t.Errorf("%s: accepted", name)
			}
		})
	}
}

func TestWriterDedupsObjectsAndChecksReferences(t *testing.T) {
	var b bytes.Buffer
	w, err := NewWriter(&b, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	o := Object{PageType: "INDEX", Schema: "s", Table: "t", Index: "PRIMARY"}
	for i := range 5 {
		if err := w.Page(o, uint32(i), uint32(i), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteEntry(Entry{Object: 1}); err == nil {
		t.Error("an entry for an undefined object was written")
	}
	w.SetCaptureDuration(2 * time.Second)
	h, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if h.Objects != 1 || h.Entries != 5 || h.CaptureDuration != 2*time.Second {
		t.Errorf("header %+v", h)
	}
	if n := strings.Count(b.String(), "\nobject "); n != 1 {
		t.Errorf("%d object lines, want 1", n)
	}
	if _, err := w.Finish(); err == nil {
		t.Error("Finish twice succeeded")
	}
	if err := w.Page(o, 9, 9, false); err == nil {
		t.Error("a page was written after Finish")
	}
}

// errWriter fails after n bytes: a full disk.
type errWriter struct{ n int }

func (w *errWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errors.New("no space left on device")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriterReportsWriteErrors(t *testing.T) {
	w, err := NewWriter(&errWriter{n: 100 << 10}, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	o := Object{PageType: "INDEX", Schema: "s", Table: "t", Index: "i"}
	var failed error
	for i := range 100000 {
		if failed = w.Page(o, uint32(i), uint32(i), false); failed != nil {
			break
		}
	}
	if failed == nil {
		if _, failed = w.Finish(); failed == nil {
			t.Fatal("no error from a writer that ran out of space")
		}
	}
	if !strings.Contains(failed.Error(), "no space left") {
		t.Errorf("error %q does not say why", failed)
	}
}

func TestStreamingReader(t *testing.T) {
	want := hostileManifest()
	r, err := NewReader(bytes.NewReader(encode(t, want)), "stream")
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().PageSize != 16384 || r.Header().Entries != 0 {
		t.Errorf("header before the body: %+v", r.Header())
	}
	var got []Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if int(e.Object) >= len(r.Objects()) {
			t.Fatalf("entry %+v refers to an object not yet returned", e)
		}
		// The streaming reader gives each entry's range beside it, until the next.
		w := want.Entries[len(got)]
		if r.Range() != want.RangeOf(w) {
			t.Errorf("entry %d: range %+v, want %+v", len(got), r.Range(), want.RangeOf(w))
		}
		w.Range = 0
		if e != w {
			t.Errorf("entry %d: %+v, want %+v", len(got), e, w)
		}
		got = append(got, e)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after the end: %v", err)
	}
	if len(got) != len(want.Entries) || len(r.Objects()) != len(want.Objects) {
		t.Error("streamed entries or objects differ")
	}
	if r.Header().Entries != int64(len(want.Entries)) || r.Header().SHA256 == "" {
		t.Errorf("trailer not in the header: %+v", r.Header())
	}
}

func TestGzipRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := hostileManifest()
	for _, name := range []string{"hot.manifest.gz", "hot.manifest"} {
		path := filepath.Join(dir, name)
		h, err := WriteFileAtomic(path, want.Header, WriteOptions{}, func(w *Writer) error {
			for _, o := range want.Objects {
				if _, err := w.Object(o); err != nil {
					return err
				}
			}
			for _, e := range want.Entries {
				if err := w.WriteEntryRange(e, want.RangeOf(e)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		isGzip := bytes.HasPrefix(raw, []byte{0x1f, 0x8b})
		if isGzip != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: gzip=%v", name, isGzip)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Entries, want.Entries) || !reflect.DeepEqual(got.Objects, want.Objects) || !reflect.DeepEqual(got.Ranges, want.Ranges) {
			t.Errorf("%s: content differs", name)
		}
		if got.Header.SHA256 != h.SHA256 || got.Name != path {
			t.Errorf("%s: header %+v, written %+v", name, got.Header, h)
		}
		if isGzip { // zcat gives the plain text, whose checksum is the same
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(plain, []byte("innowarm-manifest 3\n")) {
				t.Errorf("decompressed file starts %q", plain[:30])
			}
			again, err := Read(bytes.NewReader(plain), "plain")
			if err != nil || again.Header.SHA256 != h.SHA256 {
				t.Errorf("decompressed copy: %v", err)
			}
		}
	}
}

func TestVerifyKeepsNoEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m")
	if err := os.WriteFile(path, encode(t, hostileManifest()), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := Load(path)
	if !reflect.DeepEqual(*s, m.Summary) {
		t.Errorf("Verify summary differs from Load's")
	}
	if got := s.Stats().Pages; got != int64(len(m.Entries)) {
		t.Errorf("Verify counted %d pages, want %d", got, len(m.Entries))
	}
}

func TestDocumentedExampleIsValid(t *testing.T) {
	doc, err := os.ReadFile("../../docs/manifest-format.md")
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "<!-- example:start -->\n```\n", "```\n<!-- example:end -->"
	_, rest, ok := strings.Cut(string(doc), start)
	example, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatal("docs/manifest-format.md has no marked example")
	}
	m, err := Read(strings.NewReader(example), "example")
	if err != nil {
		t.Fatalf("the documented example does not read: %v", err)
	}
	if len(m.Entries) == 0 || len(m.Objects) == 0 {
		t.Error("the documented example has no entries")
	}
	// Its checksum is right, so the documentation cannot drift from the code; the names in
	// it are escaped as the writer escapes them.
	for _, o := range m.Objects {
		for _, name := range []string{o.Schema, o.Table, o.Partition, o.Index, o.PageType} {
			if escaped := string(appendField(nil, name)); !strings.Contains(example, " "+escaped) {
				t.Errorf("the example does not write %q as %q", name, escaped)
			}
		}
	}
}

// version1Example is a version 1 file, as innowarm wrote them before history: readers keep
// reading it, every page seen once with no score.
const version1Example = `innowarm-manifest 1
server_id 3e11fa47-71ca-11e1-9e33-c80aa9429562
hostname db1.example.com
flavor MySQL
server_version 8.0.36
page_size 16384
pool_bytes 134217728
pool_pages 8192
captured_at 2026-03-01T10:00:05Z
tool_version v0.4.0
object 0 12 INDEX shop orders p2026 PRIMARY
0 3 0 y
0 4 1 y
object 1 12 INDEX shop orders p2026 idx_user
1 37 2 y
object 2 31 INDEX my%20app order-lines%202024 - PRIMARY
2 3 3 y
0 118 4 y
object 3 12 BLOB shop orders p2026 -
3 907 5 o
2 4 6 o
1 38 7 o
end entries=8 objects=4 capture_duration=42ms sha256=40826b49585d96b6a63c3b799287561b9cb8a6913c83a83df8a6b0e50bfa3bf0
`

func TestReadsVersion1(t *testing.T) {
	m, err := Read(strings.NewReader(version1Example), "v1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.FormatVersion != 1 || m.Header.Captures != 1 || len(m.Entries) != 8 {
		t.Fatalf("header %+v, %d entries", m.Header, len(m.Entries))
	}
	for _, e := range m.Entries {
		if e.Seen != 1 || e.Last != 0 || e.Score != 0 {
			t.Errorf("entry %+v: a version 1 page is seen once, with no score", e)
		}
	}
	// A version 1 entry with version 2's fields is not version 1.
	bad := strings.Replace(version1Example, "\n0 3 0 y\n", "\n0 3 0 y 1 0 0\n", 1)
	if _, err := Read(strings.NewReader(bad), "v1"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("v1 entry with history fields: %v", err)
	}
}

func TestHistoryFieldsChecked(t *testing.T) {
	m := &Manifest{}
	m.Header = testHeader()
	m.Header.Captures = 3
	m.Objects = []Object{{SpaceID: 5, PageType: "INDEX", Schema: "shop", Table: "orders", Index: "PRIMARY"}}
	m.Entries = []Entry{{Page: 7, Seen: 3, Last: 2, Score: 5}}
	good := string(encode(t, m))
	if got, err := Read(strings.NewReader(good), "h"); err != nil || got.Entries[0] != m.Entries[0] || got.Header.Captures != 3 {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	// Each error names the rule the entry broke, where it is well formed.
	for name, c := range map[string]struct{ line, says string }{
		"seen more than captures": {"0 7 0 y 4 0 5", "SEEN 4 is not within 1 and the header's captures (3)"},
		"seen zero":               {"0 7 0 y 0 0 5", "SEEN 0 is not within 1 and the header's captures (3)"},
		"last not below captures": {"0 7 0 y 3 3 5", "LAST 3 is not below the header's captures (3)"},
		"score over the maximum":  {"0 7 0 y 3 2 1000001", "SCORE 1000001 is above 1000000"},
		"score missing":           {"0 7 0 y 3 2", "malformed entry"},
		"score not a number":      {"0 7 0 y 3 2 x", "malformed entry"},
	} {
		t.Run(name, func(t *testing.T) {
			data := resign(t, []byte(strings.Replace(good, "\n0 7 0 y 3 2 5\n", "\n"+c.line+"\n", 1)))
			_, err := Read(strings.NewReader(string(data)), "h")
			checkFormatError(t, err, "h", ErrCorrupt, c.says)
		})
	}
}
