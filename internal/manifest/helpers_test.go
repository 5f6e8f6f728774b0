package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/keys"
)

// hostileNames are identifiers MySQL and MariaDB accept (quoted) that would break a naive
// space- or line-separated format, plus bytes no identifier has, to prove escaping is exact.
var hostileNames = []string{
	"",
	"-",
	"--",
	"%",
	"%20",
	"a b",
	" leading and trailing ",
	"tab\there",
	"new\nline",
	"cr\rlf\r\n",
	"`backticks`",
	`"double" 'single'`,
	"select",
	"order by",
	"end",
	"object",
	"0",
	"innowarm-manifest 1",
	"日本語のテーブル",
	"émoji 🐬",
	"nbsp\u00a0and\u2028line sep",
	"zero\x00byte",
	"del\x7f",
	"invalid \xff\xfe utf8",
	"replacement \ufffd char",
	"#P#p0",
	"t/* Partition `p0` */",
	"=equals=",
	strings.Repeat("x", 64),
}

func testHeader() Header {
	return Header{
		ServerID:      "3e11fa47-71ca-11e1-9e33-c80aa9429562",
		Hostname:      "db-1 (prod)",
		Flavor:        "MariaDB",
		ServerVersion: "10.11.19-MariaDB-log",
		PageSize:      16 << 10,
		PoolBytes:     128 << 20,
		PoolPages:     8192,
		CapturedAt:    time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC),
		ToolVersion:   "v0.0.0-test",
		Captures:      1,
	}
}

// hostileManifest has one object per hostile name in every name position, and pages of each.
func hostileManifest() *Manifest {
	m := &Manifest{}
	m.Header = testHeader()
	m.Header.CaptureDuration = 1234 * time.Millisecond
	m.Header.Captures = 4
	for i, name := range hostileNames {
		cols := keys.Columns{{Name: name, Type: keys.Type{Kind: keys.Int, Size: 8}}, {Name: name + ",:", Type: keys.Type{Kind: keys.Varchar, Collation: "utf8mb4_bin"}}}
		m.Objects = append(m.Objects,
			Object{SpaceID: uint32(i), PageType: "INDEX", Schema: name, Table: "t" + name, Partition: name, Index: name + "i", KeyColumns: string(keys.AppendColumns(nil, cols))},
			Object{SpaceID: uint32(i), PageType: "BLOB", Schema: "s", Table: name, Partition: "", Index: ""},
			Object{SpaceID: uint32(i), PageType: name + "T", Schema: "s" + name, Table: "x", Index: name},
		)
	}
	lru := uint32(0)
	for id, o := range m.Objects {
		cols, _ := o.Columns()
		for p := range 3 {
			e := Entry{Object: uint32(id), Page: uint32(id*10 + p), LRU: lru, Old: lru%3 == 0,
				Seen: uint16(1 + lru%4), Last: uint16(lru % 3), Score: lru * 997 % (ScoreMax + 1)}
			if cols != nil {
				name := hostileNames[id/3]
				low, _ := KeyBound(cols, keys.Key{{I: int64(p) - 1}, {Bytes: []byte(name)}})
				r := Range{Low: low, High: PageBound(uint32(id*10 + p + 1))}
				switch p {
				case 0:
					r.Low = OpenBound
				case 2:
					r.High, _ = KeyBound(cols, keys.Key{{I: 99}, keys.Null})
				}
				m.AddRange(&e, r)
			}
			m.Entries = append(m.Entries, e)
			lru++
		}
	}
	m.Entries = append(m.Entries, Entry{Object: 0, Page: ^uint32(0), LRU: ^uint32(0), Old: true, Seen: 4, Last: 3, Score: ScoreMax})
	return m
}

// encode writes m and returns the file's bytes.
func encode(t testing.TB, m *Manifest) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := Write(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// smallManifest is a short valid file for damage tests.
func smallManifest(t testing.TB) []byte {
	m := &Manifest{}
	m.Header = testHeader()
	m.Objects = []Object{
		{SpaceID: 5, PageType: "INDEX", Schema: "shop", Table: "orders", Index: "PRIMARY"},
		{SpaceID: 5, PageType: "BLOB", Schema: "shop", Table: "orders"},
	}
	for i := range 20 {
		m.Entries = append(m.Entries, Entry{Object: uint32(i % 2), Page: uint32(1000 + i), LRU: uint32(i), Old: i >= 12, Seen: 1})
	}
	return encode(t, m)
}

// resign recomputes the trailer's checksum of a hand-edited manifest, so that a test
// reaches the check it is about rather than the checksum.
func resign(t testing.TB, data []byte) []byte {
	t.Helper()
	i := bytes.LastIndex(data, []byte("\nend "))
	j := bytes.Index(data[i:], []byte(" sha256="))
	if i < 0 || j < 0 {
		t.Fatal("no trailer to re-sign")
	}
	sum := sha256.Sum256(data[:i+j])
	out := append(bytes.Clone(data[:i+j]), " sha256="...)
	return append(append(out, hex.EncodeToString(sum[:])...), '\n')
}

// checkFormatError asserts err is a one-line usage error of the given kind that names the
// file and contains every fragment.
func checkFormatError(t *testing.T, err error, name string, kind error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %q is not %v", err, kind)
	}
	if exitcode.Of(err) != exitcode.Usage {
		t.Errorf("error %q: exit code %d, want %d", err, exitcode.Of(err), exitcode.Usage)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("error is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, "manifest "+name+": ") {
		t.Errorf("error %q does not start with %q", msg, "manifest "+name+": ")
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("error %q does not mention %q", msg, f)
		}
	}
}

// errorKind names the kind of a reader error, for tests that accept several.
func errorKind(err error) error {
	for _, k := range []error{ErrNotManifest, ErrVersion, ErrTruncated, ErrCorrupt, ErrPageSize} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}
