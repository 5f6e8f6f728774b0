package manifest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"strconv"
	"time"
)

// Writer streams a manifest: the header when it is created, an object line the first time
// each object is used, one line per page, and the trailer on Finish. Memory is bounded by
// the number of distinct objects, not pages.
type Writer struct {
	buf     *bufio.Writer // everything but the checksum goes through it, and so into the hash
	dst     io.Writer     // the checksum goes straight here
	sum     hash.Hash
	header  Header
	ids     map[Object]uint32
	objects uint32
	keyed   []bool // per object: it has key columns
	entries int64
	// withKeys counts the entries whose Low is known.
	withKeys int64

	started     time.Time
	duration    time.Duration
	durationSet bool

	err      error // sticky: the first write error ends the manifest
	finished bool
}

// hashingWriter feeds what it writes to a hash as well.
type hashingWriter struct {
	h   hash.Hash
	dst io.Writer
}

func (w hashingWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	return w.dst.Write(p)
}

// NewWriter validates h and writes the magic line and header to dst. Entries, Objects,
// CaptureDuration and SHA256 in h are ignored: the Writer computes them. The file is
// written in h.FormatVersion, at least version 3 (keys) and at most FormatVersion: a
// caller with descending key fields asks for version 4 (VersionFor), and Object refuses
// them in an older one.
func NewWriter(dst io.Writer, h Header) (*Writer, error) {
	if !validPageSize(h.PageSize) {
		return nil, fmt.Errorf("manifest header: page size %d is not one InnoDB uses (%d to %d, a power of two)", h.PageSize, MinPageSize, MaxPageSize)
	}
	if h.CapturedAt.IsZero() {
		return nil, errors.New("manifest header: capture time is not set")
	}
	if h.PoolBytes < 0 || h.PoolPages < 0 {
		return nil, errors.New("manifest header: negative pool size")
	}
	if h.Captures < 1 || h.Captures > math.MaxUint16 {
		h.Captures = 1
	}
	h.FormatVersion = min(max(h.FormatVersion, keysVersion), FormatVersion)
	h.CapturedAt = h.CapturedAt.UTC().Truncate(time.Second)
	h.Entries, h.Objects, h.KeyedEntries, h.CaptureDuration, h.SHA256 = 0, 0, 0, 0, ""
	sum := sha256.New()
	w := &Writer{
		buf:     bufio.NewWriterSize(hashingWriter{h: sum, dst: dst}, 64<<10),
		dst:     dst,
		sum:     sum,
		header:  h,
		ids:     map[Object]uint32{},
		started: time.Now(),
	}
	var b []byte
	b = append(b, magic+" "+strconv.Itoa(h.FormatVersion)+"\n"...)
	for _, kv := range headerFields(h) {
		b = append(b, kv.key...)
		b = append(b, ' ')
		b = appendField(b, kv.value)
		b = append(b, '\n')
	}
	w.write(b)
	return w, w.err
}

type keyValue struct{ key, value string }

// headerFields lists the header lines in the order they are written.
func headerFields(h Header) []keyValue {
	return []keyValue{
		{"server_id", h.ServerID},
		{"hostname", h.Hostname},
		{"flavor", string(h.Flavor)},
		{"server_version", h.ServerVersion},
		{"page_size", strconv.Itoa(h.PageSize)},
		{"pool_bytes", strconv.FormatInt(h.PoolBytes, 10)},
		{"pool_pages", strconv.FormatInt(h.PoolPages, 10)},
		{"captured_at", h.CapturedAt.Format(time.RFC3339)},
		{"tool_version", h.ToolVersion},
		{"captures", strconv.Itoa(h.Captures)},
	}
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.buf.Write(b); err != nil {
		w.err = fmt.Errorf("write manifest: %w", err)
	}
}

func (w *Writer) usable() error {
	if w.finished {
		return errors.New("manifest writer: already finished")
	}
	return w.err
}

// Object returns o's id, writing its object line the first time o is seen.
func (w *Writer) Object(o Object) (uint32, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if id, ok := w.ids[o]; ok {
		return id, nil
	}
	if !isToken(o.KeyColumns, true) {
		return 0, fmt.Errorf("manifest writer: object %s: key columns %q are not one word", o, o.KeyColumns)
	}
	if w.header.FormatVersion < 4 && o.descending() {
		return 0, fmt.Errorf("manifest writer: object %s: descending key columns %q need format version 4, the file is version %d", o, o.KeyColumns, w.header.FormatVersion)
	}
	id := w.objects
	b := append(w.buf.AvailableBuffer(), "object "...)
	b = strconv.AppendUint(b, uint64(id), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(o.SpaceID), 10)
	for _, f := range [...]string{o.PageType, o.Schema, o.Table, o.Partition, o.Index} {
		b = append(b, ' ')
		b = appendField(b, f)
	}
	b = append(b, ' ')
	b = appendToken(b, o.KeyColumns)
	b = append(b, '\n')
	w.write(b)
	if w.err != nil {
		return 0, w.err
	}
	w.ids[o] = id
	w.objects++
	w.keyed = append(w.keyed, o.KeyColumns != "")
	return id, nil
}

// appendToken writes a raw one-word field, "-" for empty.
func appendToken(b []byte, tok string) []byte {
	if tok == "" {
		return append(b, unknownBound...)
	}
	return append(b, tok...)
}

// isToken: empty, or printable bytes without spaces (escaped key text is).
func isToken(s string, allowEmpty bool) bool {
	if s == "" {
		return allowEmpty
	}
	// Eight bytes at a time (a manifest line's keys are most of its bytes): a word has a
	// byte <= ' ' when one of its bytes is below 0x21, one of 0x7f when one of its bytes
	// xor 0x7f is zero (the exact tests of "Bit Twiddling Hacks" hasless and haszero).
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		y := x ^ (ones * 0x7f)
		if (x-ones*0x21)&^x&highs != 0 || (y-ones)&^y&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// WriteEntry writes one page of an object already returned by Object, without a key range.
func (w *Writer) WriteEntry(e Entry) error { return w.WriteEntryRange(e, Range{}) }

// WriteEntryRange writes one page with its key range (e.Range is ignored); a page of an
// object without key columns has none.
func (w *Writer) WriteEntryRange(e Entry, r Range) error {
	if err := w.usable(); err != nil {
		return err
	}
	if e.Object >= w.objects {
		return fmt.Errorf("manifest writer: entry refers to object %d, only %d defined", e.Object, w.objects)
	}
	if r.Known() && !w.keyed[e.Object] {
		return fmt.Errorf("manifest writer: entry of page %d has a key range, its object has no key columns", e.Page)
	}
	if !isToken(r.Low, true) || !isToken(r.High, true) {
		return fmt.Errorf("manifest writer: entry of page %d: bounds %q %q are not one word each", e.Page, r.Low, r.High)
	}
	// AvailableBuffer lets the line be formatted in bufio's own buffer: no copy, no allocation.
	b := w.buf.AvailableBuffer()
	b = strconv.AppendUint(b, uint64(e.Object), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(e.Page), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(e.LRU), 10)
	if e.Old {
		b = append(b, " o "...)
	} else {
		b = append(b, " y "...)
	}
	b = strconv.AppendUint(b, uint64(max(e.Seen, 1)), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(e.Last), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(min(e.Score, ScoreMax)), 10)
	// A page without a key range ends there: the range is two words only where one is
	// known, so keyless pages cost nothing.
	if r.Known() {
		b = append(b, ' ')
		b = appendToken(b, r.Low)
		b = append(b, ' ')
		b = appendToken(b, r.High)
	}
	b = append(b, '\n')
	w.write(b)
	if w.err == nil {
		w.entries++
		if r.Low != "" {
			w.withKeys++
		}
	}
	return w.err
}

// Page writes one page of object o: Object then WriteEntry.
func (w *Writer) Page(o Object, page, lru uint32, old bool) error {
	id, err := w.Object(o)
	if err != nil {
		return err
	}
	return w.WriteEntry(Entry{Object: id, Page: page, LRU: lru, Old: old, Seen: 1})
}

// Entries is the number of entries written so far.
func (w *Writer) Entries() int64 { return w.entries }

// SetCaptureDuration records how long the capture took; by default Finish uses the time
// since NewWriter.
func (w *Writer) SetCaptureDuration(d time.Duration) {
	w.duration, w.durationSet = d, true
}

// Finish writes the trailer and returns the complete header. It does not close the
// destination. A manifest whose writer was not finished has no trailer, and every reader
// refuses it as truncated.
func (w *Writer) Finish() (Header, error) {
	if err := w.usable(); err != nil {
		return Header{}, err
	}
	w.finished = true
	h := w.header
	h.Entries = w.entries
	h.Objects = int64(w.objects)
	h.KeyedEntries = w.withKeys
	h.CaptureDuration = w.duration
	if !w.durationSet {
		h.CaptureDuration = time.Since(w.started)
	}
	h.CaptureDuration = max(h.CaptureDuration.Round(time.Millisecond), 0)
	// The checksum covers the trailer too, up to its own field.
	w.write(fmt.Appendf(nil, "end entries=%d objects=%d keyed=%d capture_duration=%s", h.Entries, h.Objects, h.KeyedEntries, h.CaptureDuration))
	if w.err == nil {
		if err := w.buf.Flush(); err != nil {
			w.err = fmt.Errorf("write manifest: %w", err)
		}
	}
	if w.err != nil {
		return Header{}, w.err
	}
	h.SHA256 = hex.EncodeToString(w.sum.Sum(nil))
	if _, err := io.WriteString(w.dst, " sha256="+h.SHA256+"\n"); err != nil {
		w.err = fmt.Errorf("write manifest: %w", err)
		return Header{}, w.err
	}
	return h, nil
}

// Write writes a whole in-memory manifest to dst: its objects first, in order (so ids are
// kept), then its entries. The header's CaptureDuration is kept.
func Write(dst io.Writer, m *Manifest) (Header, error) {
	h := m.Header
	h.FormatVersion = VersionFor(m.Objects)
	w, err := NewWriter(dst, h)
	if err != nil {
		return Header{}, err
	}
	for i, o := range m.Objects {
		id, err := w.Object(o)
		if err != nil {
			return Header{}, err
		}
		if id != uint32(i) {
			return Header{}, fmt.Errorf("manifest writer: object %d repeats object %d", i, id)
		}
	}
	for _, e := range m.Entries {
		if err := w.WriteEntryRange(e, m.RangeOf(e)); err != nil {
			return Header{}, err
		}
	}
	w.SetCaptureDuration(m.Header.CaptureDuration)
	return w.Finish()
}
