package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/keys"
)

// version2Example is a version 2 file, as innowarm wrote them before key ranges: it reads
// with no key columns and no ranges.
const version2Example = `innowarm-manifest 2
server_id 3e11fa47-71ca-11e1-9e33-c80aa9429562
hostname db1.example.com
flavor MySQL
server_version 8.0.36
page_size 16384
pool_bytes 134217728
pool_pages 8192
captured_at 2026-03-01T10:00:05Z
tool_version v0.5.0
captures 3
object 0 12 INDEX shop orders p2026 PRIMARY
object 1 12 INDEX shop orders p2026 idx_user
object 2 31 INDEX my%20app order-lines%202024 - PRIMARY
object 3 12 BLOB shop orders p2026 -
0 3 0 y 3 0 1000000
0 4 1 y 3 0 998536
1 37 2 y 3 0 871230
2 3 5 o 3 0 612004
0 118 3 y 1 0 368975
2 4 40 y 2 1 241117
3 907 6 o 1 0 95040
1 38 7 o 1 0 47380
end entries=8 objects=4 capture_duration=42ms sha256=d26bfe0c6faf00c51951b2eeefab4a2cea5d8961e595168848cf935ed35aa9eb
`

func TestReadsVersion2(t *testing.T) {
	m, err := Read(strings.NewReader(version2Example), "v2")
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.FormatVersion != 2 || m.Header.Captures != 3 || len(m.Entries) != 8 || len(m.Ranges) != 0 || m.Header.KeyedEntries != 0 {
		t.Fatalf("header %+v, %d entries, %d ranges", m.Header, len(m.Entries), len(m.Ranges))
	}
	for _, o := range m.Objects {
		if o.KeyColumns != "" {
			t.Errorf("object %s has key columns in a version 2 file", o)
		}
	}
	// Version 3's key columns are not version 2.
	bad := strings.Replace(version2Example, "object 0 12 INDEX shop orders p2026 PRIMARY", "object 0 12 INDEX shop orders p2026 PRIMARY id:int4", 1)
	if _, err := Read(strings.NewReader(string(resign(t, []byte(bad)))), "v2"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("v2 object with key columns: %v", err)
	}
}

// keyedManifest: one keyed object (a composite key), one keyless one.
func keyedManifest(t testing.TB) string {
	cols := keys.Columns{{Name: "user id", Type: keys.Type{Kind: keys.Uint, Size: 4}}, {Name: "at", Type: keys.Type{Kind: keys.Datetime, Scale: 3}}, {Name: "name", Type: keys.Type{Kind: keys.Varchar, Collation: "utf8mb4_0900_ai_ci", Prefix: 10}}}
	m := &Manifest{}
	m.Header = testHeader()
	m.Objects = []Object{
		{SpaceID: 5, PageType: "INDEX", Schema: "shop", Table: "orders", Index: "idx_user", KeyColumns: string(keys.AppendColumns(nil, cols))},
		{SpaceID: 5, PageType: "BLOB", Schema: "shop", Table: "orders"},
	}
	k1, _ := KeyBound(cols, keys.Key{{U: 42}, {I: 20240229130405, Micro: 250000}, {Bytes: []byte("Müller, K")}})
	k2, _ := KeyBound(cols, keys.Key{{U: 43}, keys.Null})
	for i, r := range []Range{{Low: OpenBound, High: k1}, {Low: k1, High: PageBound(9)}, {Low: k2, High: OpenBound}, {}, {High: k2}} {
		e := Entry{Object: 0, Page: uint32(7 + i), LRU: uint32(i), Seen: 1}
		m.AddRange(&e, r)
		m.Entries = append(m.Entries, e)
	}
	m.Entries = append(m.Entries, Entry{Object: 1, Page: 100, LRU: 9, Seen: 1})
	var b strings.Builder
	if _, err := Write(&b, m); err != nil {
		panic(err)
	}
	return b.String()
}

// keyedManifestText is keyedManifest's file, for the fuzz test's seeds.
var keyedManifestText string

func init() { keyedManifestText = keyedManifest(nil) }

func TestKeyRanges(t *testing.T) {
	good := keyedManifest(t)
	for _, want := range []string{
		"object 0 5 INDEX shop orders - idx_user user%20id:uint4,at:datetime(3),name:varchar@utf8mb4_0900_ai_ci/10\n",
		"object 1 5 BLOB shop orders - - -\n",
		"0 7 0 y 1 0 0 ~ 42,2024-02-29T13:04:05.250,'Müller%2C%20K\n",
		"0 8 1 y 1 0 0 42,2024-02-29T13:04:05.250,'Müller%2C%20K @9\n",
		"0 9 2 y 1 0 0 43,\\N ~\n",
		"0 10 3 y 1 0 0\n",
		"0 11 4 y 1 0 0 - 43,\\N\n",
		"1 100 9 y 1 0 0\n",
		"end entries=6 objects=2 keyed=3 ",
	} {
		if !strings.Contains(good, want) {
			t.Errorf("the file does not hold %q:\n%s", want, good)
		}
	}
	m, err := Read(strings.NewReader(good), "k")
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.KeyedEntries != 3 || len(m.Ranges) != 4 {
		t.Fatalf("%d keyed entries, %d ranges", m.Header.KeyedEntries, len(m.Ranges))
	}
	cols, err := m.Objects[0].Columns()
	if err != nil || len(cols) != 3 || cols[2].Type.Prefix != 10 {
		t.Fatalf("columns %+v, %v", cols, err)
	}
	r := m.RangeOf(m.Entries[1])
	low, _ := r.LowBound()
	high, _ := r.HighBound()
	k, err := keys.ParseKey(cols, []byte(low.Key))
	if err != nil || low.Kind != BoundKey || k[0].U != 42 || string(k[2].Bytes) != "Müller, K" || high.Kind != BoundPage || high.Page != 9 {
		t.Errorf("entry 1: %+v %+v %+v %v", low, high, k, err)
	}
	if r := m.RangeOf(m.Entries[0]); r.Low != OpenBound {
		t.Errorf("entry 0 range %+v", r)
	}
	if r := m.RangeOf(m.Entries[3]); r.Known() {
		t.Errorf("entry 3 has range %+v", r)
	}

	for name, edit := range map[string][2]string{
		"key of the wrong type":         {"0 9 2 y 1 0 0 43,\\N ~", "0 9 2 y 1 0 0 x,\\N ~"},
		"more fields than columns":      {"0 9 2 y 1 0 0 43,\\N ~", "0 9 2 y 1 0 0 43,\\N,'a,1 ~"},
		"low is a page":                 {"0 9 2 y 1 0 0 43,\\N ~", "0 9 2 y 1 0 0 @3 ~"},
		"bad page reference":            {"0 9 2 y 1 0 0 43,\\N ~", "0 9 2 y 1 0 0 43,\\N @x"},
		"one bound":                     {"0 9 2 y 1 0 0 43,\\N ~", "0 9 2 y 1 0 0 43,\\N"},
		"three bounds":                  {"0 9 2 y 1 0 0 43,\\N ~", "0 9 2 y 1 0 0 43,\\N ~ ~"},
		"a range that says nothing":     {"0 10 3 y 1 0 0\n", "0 10 3 y 1 0 0 - -\n"},
		"range on a keyless object":     {"1 100 9 y 1 0 0\n", "1 100 9 y 1 0 0 ~ ~\n"},
		"bad key columns":               {"idx_user user%20id:uint4", "idx_user user%20id:uint9"},
		"object without key columns":    {"object 1 5 BLOB shop orders - - -", "object 1 5 BLOB shop orders - -"},
		"keyed count off":               {"keyed=3", "keyed=2"},
		"unescaped string in a key":     {"'Müller%2C%20K @9", "'Müller%2CK%zz @9"},
		"raw control byte in a key":     {"43,\\N ~", "43,'a\x01 ~"},
		"string escaped differently":    {"'Müller%2C%20K @9", "'M%C3%BCller%2C%20K @9"},
		"datetime with the wrong scale": {"2024-02-29T13:04:05.250,'Müller%2C%20K @9", "2024-02-29T13:04:05.25,'Müller%2C%20K @9"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(good, edit[0]) {
				t.Fatalf("the file has no %q", edit[0])
			}
			data := resign(t, []byte(strings.Replace(good, edit[0], edit[1], 1)))
			if _, err := Read(strings.NewReader(string(data)), "k"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("read: %v, want corrupt", err)
			}
		})
	}
}

func TestWriterRefusesBadRanges(t *testing.T) {
	var b strings.Builder
	w, err := NewWriter(&b, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	keyless, _ := w.Object(Object{PageType: "INDEX", Schema: "s", Table: "t", Index: "GEN_CLUST_INDEX"})
	if err := w.WriteEntryRange(Entry{Object: keyless, Page: 1, Seen: 1}, Range{Low: "1"}); err == nil {
		t.Error("a range for an object without key columns was written")
	}
	keyed, _ := w.Object(Object{PageType: "INDEX", Schema: "s", Table: "t", Index: "PRIMARY", KeyColumns: "id:int4"})
	if err := w.WriteEntryRange(Entry{Object: keyed, Page: 1, Seen: 1}, Range{Low: "1 2"}); err == nil {
		t.Error("a bound with a space was written")
	}
	if _, err := w.Object(Object{PageType: "INDEX", Schema: "s", Table: "u", KeyColumns: "a b:int4"}); err == nil {
		t.Error("key columns with a space were written")
	}
}

// TestDescendingKeysAreVersion4: a manifest with a descending key field (its ranges run
// from the greater key to the lesser) is written in version 4, which older innowarm
// versions refuse rather than read such a range as empty; one without stays version 3,
// which they read. A version 3 file cannot hold one.
func TestDescendingKeysAreVersion4(t *testing.T) {
	desc := Object{SpaceID: 5, PageType: "INDEX", Schema: "shop", Table: "orders", Index: "k_desc", KeyColumns: "k:int4:desc,id:int4"}
	m := &Manifest{}
	m.Header = testHeader()
	m.Objects = []Object{desc}
	e := Entry{Object: 0, Page: 7, Seen: 1}
	m.AddRange(&e, Range{Low: "90,1", High: "40,7"})
	m.Entries = []Entry{e}
	var b strings.Builder
	h, err := Write(&b, m)
	if err != nil {
		t.Fatal(err)
	}
	if h.FormatVersion != 4 || !strings.HasPrefix(b.String(), "innowarm-manifest 4\n") || !strings.Contains(b.String(), " k:int4:desc,id:int4\n") {
		t.Fatalf("version %d:\n%s", h.FormatVersion, b.String())
	}
	back, err := Read(strings.NewReader(b.String()), "v4")
	if err != nil {
		t.Fatal(err)
	}
	cols, err := back.Objects[0].Columns()
	if err != nil || !cols[0].Desc || cols[1].Desc || back.RangeOf(back.Entries[0]).Low != "90,1" {
		t.Fatalf("read back %+v, %v, range %+v", cols, err, back.RangeOf(back.Entries[0]))
	}
	// Without a descending field: version 3.
	if good := keyedManifest(t); !strings.HasPrefix(good, "innowarm-manifest 3\n") {
		t.Errorf("an ascending manifest is not version 3: %.30q", good)
	}
	// A writer of version 3 refuses the object; a version 3 file with one is corrupt.
	w, err := NewWriter(&strings.Builder{}, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Object(desc); err == nil || !strings.Contains(err.Error(), "version 4") {
		t.Errorf("a version 3 writer took descending key columns: %v", err)
	}
	v3 := resign(t, []byte(strings.Replace(b.String(), "innowarm-manifest 4", "innowarm-manifest 3", 1)))
	if _, err := Read(strings.NewReader(string(v3)), "v3"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a version 3 file with a descending key field: %v, want corrupt", err)
	}
}
