// Package manifest is innowarm's portable buffer-pool manifest: a versioned, line-oriented
// UTF-8 text file (gzip when the name ends in .gz) that `innowarm snapshot` writes and
// `warm --from` / `inspect --manifest` read. Unlike InnoDB's own ib_buffer_pool dump
// (space_id,page_no lines), it names every page's schema, table, partition and index, so a
// reader can resolve the pages on another server whose tablespace ids differ.
//
// The file is written in one streaming pass, so what is only known at the end (entry and
// object counts, capture duration, the SHA-256 of everything before it) goes in a trailer
// line; a file without its trailer is therefore always recognisably truncated. The format
// is described in docs/manifest-format.md.
//
// Reading: Open/NewReader stream entries with no allocation per entry; Verify checks a whole
// file without keeping its entries; Load/Read keep everything in memory and return only a
// fully valid manifest. A caller that acts on entries while streaming must Verify first:
// corruption near the end of a file is only found at the end.
package manifest

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/keys"
	"github.com/innowarm/innowarm/internal/units"
)

// FormatVersion is the format this package writes and the newest it reads. Version 2 added
// each page's history across captures (Entry.Seen, Last, Score) and the header's captures;
// version 1 files read with Seen 1, Last 0 and Score 0. Version 3 added each index's key
// columns (Object.KeyColumns) and each page's key range (Entry.Low, Entry.High); older files
// read without them. Version 4 added descending key fields (a key column's ":desc",
// keys.Column.Desc), whose ranges run from the greater key to the lesser: a reader that
// does not know them would read such a range as empty, so only a file that has one is
// written in version 4 (VersionFor), the others in version 3, which older innowarm
// versions read.
const FormatVersion = 4

// keysVersion is the oldest version that holds key ranges: the one written when nothing
// needs a newer one.
const keysVersion = 3

// VersionFor is the format version a manifest with these objects is written in: the
// oldest that can say what they hold.
func VersionFor(objects []Object) int {
	for _, o := range objects {
		if o.descending() {
			return 4
		}
	}
	return keysVersion
}

// descending says whether the object has a descending key field (format version 4).
func (o Object) descending() bool {
	cs, err := o.Columns()
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Desc {
			return true
		}
	}
	return false
}

// magic starts the first line of every manifest, followed by the format version.
const magic = "innowarm-manifest"

// Page sizes InnoDB supports for innodb_page_size; a header outside them is refused.
const (
	MinPageSize = 4 << 10
	MaxPageSize = 64 << 10
)

// Header describes the capture. The Writer fills Entries, Objects, CaptureDuration and
// SHA256 when it finishes; the Reader fills them from the trailer, so they are only set
// once a whole file has been read.
type Header struct {
	FormatVersion int `json:"format_version"`
	// ServerID identifies the source server: @@server_uuid, or host:port where the server
	// has none (MariaDB); see flavor.Server.Identity.
	ServerID      string      `json:"server_id"`
	Hostname      string      `json:"hostname"`
	Flavor        flavor.Kind `json:"flavor"`
	ServerVersion string      `json:"server_version"`
	PageSize      int         `json:"page_size"`
	PoolBytes     int64       `json:"pool_bytes"`
	PoolPages     int64       `json:"pool_pages"`
	// CapturedAt is when the capture started, stored in UTC to the second.
	CapturedAt  time.Time `json:"captured_at"`
	ToolVersion string    `json:"tool_version"`
	// Captures is how many captures the entries' history covers: 1 for one snapshot, more
	// for snapshot --every, whose manifest scores each page over the captures it kept.
	Captures int `json:"captures"`

	Entries int64 `json:"entries"`
	Objects int64 `json:"objects"`
	// KeyedEntries (version 3) counts the entries whose key range has a known Low.
	KeyedEntries    int64         `json:"keyed_entries"`
	CaptureDuration time.Duration `json:"capture_duration_ns"`
	// SHA256 is the hex digest of the uncompressed file up to the trailer's " sha256=".
	SHA256 string `json:"sha256"`
}

// HeaderFor fills a header from a detected server. PoolPages is the configured pool size in
// pages; a caller that read Innodb_buffer_pool_pages_total may overwrite it.
func HeaderFor(s flavor.Server, capturedAt time.Time, toolVersion string) Header {
	h := Header{
		FormatVersion: keysVersion,
		ServerID:      s.Identity(),
		Hostname:      s.Hostname,
		Flavor:        s.Kind,
		ServerVersion: s.VersionString,
		PageSize:      s.PageSize,
		PoolBytes:     s.PoolSize,
		CapturedAt:    capturedAt,
		ToolVersion:   toolVersion,
		Captures:      1,
	}
	if s.PageSize > 0 {
		h.PoolPages = s.PoolSize / int64(s.PageSize)
	}
	return h
}

// validPageSize reports whether n is a power of two InnoDB can use as innodb_page_size.
func validPageSize(n int) bool {
	return n >= MinPageSize && n <= MaxPageSize && bits.OnesCount(uint(n)) == 1
}

// Object is one thing pages belong to: an index of a table (or of one partition), or for
// pages that carry no index (off-page BLOB/LOB pages, which InnoDB attributes only to the
// tablespace) the table itself with an empty Index. Readers resolve it by name.
type Object struct {
	// SpaceID is the tablespace id on the source server. It is informational: ids differ
	// between servers, so readers resolve objects by name, not by id.
	SpaceID uint32 `json:"space_id"`
	// PageType is INNODB_BUFFER_PAGE_LRU.PAGE_TYPE: INDEX, BLOB, LOB_DATA, RTREE_INDEX, ...
	PageType string `json:"page_type"`
	Schema   string `json:"schema"`
	Table    string `json:"table"`
	// Partition is the partition, or for subpartitioned tables the subpartition, whose
	// tablespace holds the page (subpartition names are unique within a table); empty for
	// unpartitioned tables.
	Partition string `json:"partition,omitempty"`
	// Index is empty for pages that belong to no index (BLOB/LOB pages).
	Index string `json:"index,omitempty"`
	// KeyColumns (version 3) describes the index's key fields, in the text form of
	// keys.AppendColumns (name:type pairs, with charset and collation); empty when the
	// manifest carries no keys for the object. Columns parses it.
	KeyColumns string `json:"key_columns,omitempty"`
}

// Columns parses KeyColumns; nil when the object carries no keys.
func (o Object) Columns() (keys.Columns, error) {
	if o.KeyColumns == "" {
		return nil, nil
	}
	return keys.ParseColumns([]byte(o.KeyColumns))
}

func (o Object) String() string {
	s := fmt.Sprintf("%s.%s", o.Schema, o.Table)
	if o.Partition != "" {
		s += " partition " + o.Partition
	}
	if o.Index != "" {
		s += " index " + o.Index
	}
	return s + " (" + o.PageType + ")"
}

// Entry is one page in the source server's buffer pool. It is 24 bytes in memory, so a
// 33M-page (512 GiB) pool fits in about 800 MB, plus its key ranges (Manifest.Ranges).
type Entry struct {
	// Object is the index of the page's object in the manifest's object list.
	Object uint32 `json:"object"`
	// Page is the page number within the object's tablespace.
	Page uint32 `json:"page"`
	// LRU is the page's distance from the head of the LRU list: 0 is the most recently used
	// page (INNODB_BUFFER_PAGE_LRU.LRU_POSITION counts from the tail; the snapshot turns it
	// round). With several buffer pool instances each has its own list, so positions may
	// repeat.
	LRU uint32 `json:"lru"`
	// Old is set for pages in the old sublist (IS_OLD), the first to be evicted.
	Old bool `json:"old"`
	// Seen is how many of the header's captures held the page, Last how many captures ago
	// the last of them was (0: the newest capture; LRU and Old are from that one).
	Seen uint16 `json:"seen"`
	Last uint16 `json:"last"`
	// Score is the page's hotness over the captures in millionths (0 to ScoreMax): a
	// decaying average of where it stood in each LRU list (see snapshot.History). 0 means
	// no history (one capture, or a version 1 file): order by Old and LRU then.
	Score uint32 `json:"score"`
	// Range (version 3) is 1 + the index of the page's key range in Manifest.Ranges; 0
	// when the manifest has none for it. Streaming readers give it with Reader.Range.
	Range uint32 `json:"range,omitempty"`
}

// Range is the key range a page held (version 3), as two bound tokens (ParseBound reads
// them): Low its lowest key when the capture saw it (a lower bound of every key the page
// holds), High the next page's lowest key (an exclusive upper bound), or "@N": where this
// object's entry for page N starts. Empty tokens are unknown.
type Range struct {
	Low  string `json:"low,omitempty"`
	High string `json:"high,omitempty"`
}

// Known says whether the range says anything.
func (r Range) Known() bool { return r.Low != "" || r.High != "" }

// LowBound and HighBound interpret Low and High.
func (r Range) LowBound() (Bound, error)  { return ParseBound(r.Low) }
func (r Range) HighBound() (Bound, error) { return ParseBound(r.High) }

// BoundKind says what an entry's Low or High holds.
type BoundKind uint8

const (
	// BoundUnknown: no key known (no key columns, a page the capture could not place, a
	// version 1 or 2 file). Written "-".
	BoundUnknown BoundKind = iota
	// BoundOpen: the start of the index (Low) or its end (High). Written "~".
	BoundOpen
	// BoundKey: a key in keys.AppendKey's text form over the object's KeyColumns.
	BoundKey
	// BoundPage (High only): the range ends where this object's entry for page Bound.Page
	// starts (its Low), written "@N": the page's right neighbour is in the manifest too, so
	// its key is written once. A reader that finds no such entry knows no end.
	BoundPage
)

// Bound is Low or High interpreted.
type Bound struct {
	Kind BoundKind
	Page uint32 // BoundPage
	Key  string // BoundKey: the text form (parse with keys.ParseKey and the object's columns)
}

// Tokens for the bounds that hold no key.
const (
	OpenBound    = "~"
	unknownBound = "-"
)

// PageBound is the High token "@N".
func PageBound(page uint32) string { return "@" + strconv.FormatUint(uint64(page), 10) }

// KeyBound is the token for a key over columns cs; a key with no fields is unknown ("").
func KeyBound(cs keys.Columns, k keys.Key) (string, error) {
	if len(k) == 0 {
		return "", nil
	}
	b, err := keys.AppendKey(nil, cs, k)
	return string(b), err
}

// ParseBound interprets a Low or High token: "" or "-" unknown, "~" open, "@N" a page, else
// a key's text form (not parsed here).
func ParseBound(tok string) (Bound, error) {
	switch {
	case tok == "" || tok == unknownBound:
		return Bound{}, nil
	case tok == OpenBound:
		return Bound{Kind: BoundOpen}, nil
	case strings.HasPrefix(tok, "@"):
		n, ok := parseUint32([]byte(tok[1:]))
		if !ok {
			return Bound{}, fmt.Errorf("bad page reference %q", tok)
		}
		return Bound{Kind: BoundPage, Page: n}, nil
	}
	return Bound{Kind: BoundKey, Key: tok}, nil
}

// ScoreMax is the score of a page at the head of the young sublist in every capture.
const ScoreMax = 1_000_000

// PageCount is the number of young and old pages of one object.
type PageCount struct {
	Young int64 `json:"young"`
	Old   int64 `json:"old"`
}

// Pages is young + old.
func (c PageCount) Pages() int64 { return c.Young + c.Old }

// Summary is everything about a manifest except its entries: what Verify returns, and what
// inspect shows.
type Summary struct {
	// Name is the file name the manifest was read from ("stdin" for -), used in errors.
	Name    string   `json:"name"`
	Header  Header   `json:"header"`
	Objects []Object `json:"objects"`
	// Counts[i] counts the pages of Objects[i].
	Counts []PageCount `json:"counts"`
}

// Manifest is a whole manifest in memory.
type Manifest struct {
	Summary
	Entries []Entry `json:"entries"`
	// Ranges are the entries' key ranges (Entry.Range - 1 indexes them).
	Ranges []Range `json:"ranges,omitempty"`
}

// RangeOf is e's key range; the zero Range when it has none.
func (m *Manifest) RangeOf(e Entry) Range {
	if e.Range == 0 || int(e.Range) > len(m.Ranges) {
		return Range{}
	}
	return m.Ranges[e.Range-1]
}

// AddRange stores r and sets e.Range to it (a zero r clears it).
func (m *Manifest) AddRange(e *Entry, r Range) {
	if !r.Known() {
		e.Range = 0
		return
	}
	m.Ranges = append(m.Ranges, r)
	e.Range = uint32(len(m.Ranges))
}

// CheckPageSize refuses a manifest captured with another innodb_page_size than the target
// server's: page numbers would point at the wrong bytes.
func (s *Summary) CheckPageSize(serverPageSize int) error {
	return checkPageSize(s.Name, s.Header, serverPageSize)
}

// CheckPageSize is Summary.CheckPageSize for a streaming reader: the header is known as
// soon as Open returns, so a mismatch is refused before the body is read.
func (r *Reader) CheckPageSize(serverPageSize int) error {
	return checkPageSize(r.name, r.header, serverPageSize)
}

func checkPageSize(name string, h Header, serverPageSize int) error {
	if h.PageSize == serverPageSize {
		return nil
	}
	return formatError(name, ErrPageSize, 0, "manifest was captured with %s pages, this server uses %s: capture a manifest on a server with the same innodb_page_size",
		units.FormatBytes(int64(h.PageSize)), units.FormatBytes(int64(serverPageSize)))
}
