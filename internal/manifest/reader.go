package manifest

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/keys"
)

// maxLine bounds one line (and so the reader's memory): object names are at most 64
// characters, 768 bytes fully escaped, so only a damaged file comes near it.
const maxLine = 64 << 10

var trailerPrefix = []byte("end ")

// Reader streams a manifest's entries. NewReader has read and checked the magic line and
// header when it returns; object lines are taken in as they come; the trailer (counts and
// checksum) is checked when Next reaches it and returns io.EOF. Any problem is returned as
// a one-line usage error, and every later call returns the same error.
type Reader struct {
	name    string
	br      *bufio.Reader
	gz      *gzip.Reader
	file    io.Closer
	sum     hash.Hash
	header  Header
	objects []Object
	columns []keys.Columns    // per object: its parsed key columns (version 3)
	known   map[Object]uint32 // to refuse an object defined twice
	entries int64
	keyed   int64 // entries with a known Low
	line    int64
	// low and high are the last entry's key range tokens as read (nil: none); they point
	// into the read buffer and hold until the next line is read.
	low, high []byte

	pending    Entry // the first entry, read while looking for the end of the header
	hasPending bool
	done       bool // the trailer was read and verified
	err        error

	// For explain: the input has ended or failed (nothing more to read), the trailer is
	// being parsed (the checksum holds part of it), the last read stopped inside a line
	// longer than the buffer, and explain has run.
	readFailed, inTrailer, midLine, explained bool
	// For a first line that is not a manifest's: it is a byte or two away from a
	// manifest's start (plain or gzip); it is worth explaining (suspect); only the
	// source's checks, not the trailer, can prove it damaged (sourceOnly).
	nearMagic, suspect, sourceOnly bool
}

// NewReader reads a manifest from src, plain or gzip (recognised by its content, not its
// name). name is used in error messages.
func NewReader(src io.Reader, name string) (*Reader, error) {
	r := &Reader{name: name, sum: sha256.New(), known: map[Object]uint32{}}
	outer := bufio.NewReaderSize(src, maxLine)
	head, _ := outer.Peek(2)
	if len(head) == 1 && head[0] == 0x1f {
		return nil, r.fail(ErrTruncated, 0, "the file ends inside the gzip header")
	}
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(outer)
		if err != nil {
			return nil, r.readError(err)
		}
		r.gz = gz
		r.br = bufio.NewReaderSize(gz, maxLine)
	} else {
		r.br = outer
	}
	if err := r.readMagic(); err != nil {
		return nil, r.explainFirst(err)
	}
	if err := r.readHeader(); err != nil {
		return nil, r.explain(err)
	}
	return r, nil
}

// Name is the name given to NewReader or Open.
func (r *Reader) Name() string { return r.name }

// Header is the header; its counts and checksum are set once Next has returned io.EOF.
func (r *Reader) Header() Header { return r.header }

// Objects are the objects defined so far: all of them once Next has returned io.EOF.
// Entries returned by Next only refer to objects already in the list.
func (r *Reader) Objects() []Object { return r.objects }

// Close releases the file opened by Open (not a reader given to NewReader).
func (r *Reader) Close() error {
	var err error
	if r.gz != nil {
		err = r.gz.Close()
	}
	if r.file != nil {
		if cerr := r.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Next returns the next entry, or io.EOF after the trailer has been read and verified.
func (r *Reader) Next() (Entry, error) {
	if r.hasPending {
		r.hasPending = false
		return r.pending, nil
	}
	for {
		if r.err != nil {
			return Entry{}, r.err
		}
		if r.done {
			return Entry{}, io.EOF
		}
		line, err := r.nextLine()
		if errors.Is(err, io.EOF) {
			return Entry{}, r.fail(ErrTruncated, 0, "no trailer after %d entries (line %d): the write was interrupted or the file was cut", r.entries, r.line)
		}
		if err != nil {
			return Entry{}, r.explain(err)
		}
		e, isEntry, err := r.bodyLine(line)
		if err != nil {
			return Entry{}, r.explain(err)
		}
		if isEntry {
			return e, nil
		}
	}
}

// fail records the first problem; every later call returns it.
func (r *Reader) fail(kind error, line int64, format string, args ...any) error {
	if r.err == nil {
		r.err = formatError(r.name, kind, line, format, args...)
	}
	return r.err
}

// readError classifies an error from the file or the gzip stream.
func (r *Reader) readError(err error) error {
	r.readFailed = true
	if r.err != nil {
		return r.err
	}
	where := ""
	if r.line > 0 {
		where = fmt.Sprintf(" (after line %d)", r.line)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return r.fail(ErrTruncated, 0, "the compressed data ends early%s", where)
	}
	if cause := r.damage(err); cause != "" {
		r.err = exitcode.UsageError(&FormatError{Name: r.name, Kind: ErrCorrupt, Cause: err,
			Detail: fmt.Sprintf("the %s is damaged: %s%s", r.what(), cause, where)})
		return r.err
	}
	// An I/O error says nothing about the manifest: a runtime failure, not bad input.
	r.err = fmt.Errorf("manifest %s: read: %w", r.name, err)
	return r.err
}

// damage describes an error of the input that proves its bytes damaged: gzip's own checks,
// or the source's (Damaged); "" for any other error, which says nothing about the bytes.
func (r *Reader) damage(err error) string {
	var corrupt flate.CorruptInputError
	var d Damaged
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the compressed data ends early"
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum):
		return err.Error() // "gzip: invalid checksum"
	case errors.As(err, &corrupt):
		return fmt.Sprintf("gzip: %v", err)
	case errors.As(err, &d) && d.Damaged():
		// The source names the object itself; the message names it once.
		msg := strings.TrimPrefix(err.Error(), r.name+": ")
		return strings.TrimPrefix(msg, "manifest "+r.name+": ")
	}
	return ""
}

// what is what the manifest is stored in, for messages: an object ("s3://...") or a file.
func (r *Reader) what() string {
	if strings.Contains(r.name, "://") {
		return "object"
	}
	return "file"
}

// explain runs once when the content is found wrong before the end (a line that does not
// parse, a header without a field it needs). Damage in the middle of a file, a flipped
// byte, shows first as such a line, long before the checksums that prove it: so the rest
// of the input is read, hashed as nextLine does, through gzip's CRC and the source's own
// checks, and a damaged file is reported as damaged (with the line where it showed), a
// wrong line in an intact file as what it is. Memory stays bounded: nothing is kept.
func (r *Reader) explain(err error) error {
	var fe *FormatError
	if r.explained || r.readFailed || !errors.As(err, &fe) || !errors.Is(fe.Kind, ErrCorrupt) && !r.suspect {
		return err
	}
	r.explained = true
	useSum := !r.inTrailer && !r.sourceOnly // the trailer's own failure leaves the checksum unusable
	midLine := r.midLine
	var want string // the sha256 of the first trailer found
	var srcErr error
	for {
		raw, rerr := r.br.ReadSlice('\n')
		if useSum && len(raw) > 0 {
			if !midLine && rerr == nil && bytes.HasPrefix(raw, trailerPrefix) {
				line := raw[:len(raw)-1]
				if at := bytes.LastIndex(line, []byte(" sha256=")); at >= 0 {
					r.sum.Write(line[:at])
					want = string(line[at+len(" sha256="):])
				}
				useSum = false // the first trailer decides; nothing after it is hashed
			} else {
				r.sum.Write(raw)
			}
		}
		midLine = errors.Is(rerr, bufio.ErrBufferFull)
		if rerr == nil || midLine {
			continue
		}
		if rerr != io.EOF {
			srcErr = rerr
		}
		break
	}
	r.readFailed = true
	var cause string
	switch {
	case srcErr != nil:
		cause = r.damage(srcErr)
	case sha256Hex.MatchString(want):
		if got := hex.EncodeToString(r.sum.Sum(nil)); got != want {
			cause = fmt.Sprintf("checksum mismatch: the content hashes to sha256 %s..., the trailer says %s...", got[:12], want[:12])
		}
	}
	if cause == "" {
		return err // the input is intact as far as can be told: the line is what is wrong
	}
	shows := fe.Detail
	if fe.Line > 0 {
		shows = fmt.Sprintf("line %d: %s", fe.Line, fe.Detail)
	} else if r.suspect {
		shows = "line 1: " + fe.Detail
	}
	r.err = exitcode.UsageError(&FormatError{Name: r.name, Kind: ErrCorrupt, Cause: srcErr,
		Detail: fmt.Sprintf("the %s is damaged: %s (the damage shows at %s)", r.what(), cause, shows)})
	return r.err
}

// nextLine returns the next line without its newline, hashing it unless it is the trailer
// (parseTrailer hashes the part of it the checksum covers).
// It returns io.EOF only at a clean end of input (after a newline).
func (r *Reader) nextLine() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	raw, err := r.br.ReadSlice('\n')
	if err != nil {
		switch {
		case err == io.EOF && len(raw) == 0:
			r.readFailed = true
			return nil, io.EOF
		case err == io.EOF:
			r.readFailed = true
			return nil, r.fail(ErrTruncated, r.line+1, "the last line is incomplete")
		case errors.Is(err, bufio.ErrBufferFull):
			// Hashed, so that explain can check the rest against the checksum.
			r.sum.Write(raw)
			r.midLine = true
			return nil, r.fail(ErrCorrupt, r.line+1, "line longer than %d bytes", maxLine)
		default:
			return nil, r.readError(err)
		}
	}
	r.line++
	if !bytes.HasPrefix(raw, trailerPrefix) {
		r.sum.Write(raw)
	}
	return raw[:len(raw)-1], nil
}

// explainFirst has a wrong first line explained as damage when damage may be its cause: a
// manifest's magic with a bad version, or a line a byte or two from a manifest's start
// (checked as any other line: against the trailer's checksum and the source's checks), or
// a version from the future (against the source's checks alone, an object's stored
// checksum or gzip's CRC: a newer format may hash otherwise). A line unlike a manifest's is
// not read further: the input may be any large file given by mistake.
func (r *Reader) explainFirst(err error) error {
	var fe *FormatError
	if !errors.As(err, &fe) {
		return err
	}
	r.sourceOnly = errors.Is(fe.Kind, ErrVersion)
	r.suspect = r.sourceOnly || errors.Is(fe.Kind, ErrNotManifest) && r.nearMagic
	return r.explain(err)
}

// nearMagic reports whether b starts a byte or two away from a manifest's start, plain
// ("innowarm-manifest ") or gzip (1f 8b 08): what a damaged manifest's first bytes look like.
func nearMagic(b []byte) bool {
	for _, want := range []struct {
		start []byte
		diffs int
	}{{[]byte(magic + " "), 2}, {[]byte{0x1f, 0x8b, 8}, 1}} {
		if len(b) < len(want.start) {
			continue
		}
		n := 0
		for i, c := range want.start {
			if b[i] != c {
				n++
			}
		}
		if n <= want.diffs {
			return true
		}
	}
	return false
}

// ibBufferPoolLine matches InnoDB's own dump format, to say so when someone passes one.
var ibBufferPoolLine = regexp.MustCompile(`^\d+,\s*\d+\r?\n?$`)

func (r *Reader) readMagic() error {
	raw, err := r.br.ReadSlice('\n')
	r.nearMagic = nearMagic(raw)
	want := []byte(magic + " ")
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return r.readError(err)
	}
	if err != nil { // no complete first line
		switch {
		case len(raw) == 0:
			return r.fail(ErrTruncated, 0, "the file is empty")
		case err == io.EOF && (bytes.HasPrefix(want, raw) || bytes.HasPrefix(raw, want)):
			return r.fail(ErrTruncated, 1, "the file ends inside the first line")
		case !bytes.HasPrefix(raw, want):
			return r.fail(ErrNotManifest, 0, "it does not start with %q", magic)
		default:
			return r.fail(ErrCorrupt, 1, "line longer than %d bytes", maxLine)
		}
	}
	r.line = 1
	r.sum.Write(raw)
	line := raw[:len(raw)-1]
	if !bytes.HasPrefix(line, want) {
		hint := ""
		if ibBufferPoolLine.Match(raw) {
			hint = " (this looks like InnoDB's own ib_buffer_pool dump; innowarm snapshot writes manifests)"
		}
		return r.fail(ErrNotManifest, 0, "first line is %s, not %q%s", quoteFragment(line), magic+" VERSION", hint)
	}
	v := line[len(want):]
	version, perr := strconv.Atoi(string(v))
	if perr != nil || version < 1 || !isDigits(v) {
		if bytes.HasSuffix(v, []byte("\r")) {
			return r.fail(ErrCorrupt, 1, "the file has Windows line ends (CR LF): a manifest's lines end with LF alone (was it edited or copied as text?)")
		}
		return r.fail(ErrCorrupt, 1, "bad format version %s", quoteFragment(v))
	}
	if version > FormatVersion {
		return r.fail(ErrVersion, 0, "the file is format version %d, this innowarm reads up to version %d: upgrade innowarm", version, FormatVersion)
	}
	r.header.FormatVersion = version
	r.header.Captures = 1
	return nil
}

var headerKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// isBodyLine tells the first line after the header: an entry, an object or the trailer.
func isBodyLine(line []byte) bool {
	return (len(line) > 0 && line[0] >= '0' && line[0] <= '9') ||
		bytes.HasPrefix(line, []byte("object ")) || bytes.HasPrefix(line, trailerPrefix)
}

func (r *Reader) readHeader() error {
	seen := map[string]bool{}
	for {
		line, err := r.nextLine()
		if errors.Is(err, io.EOF) {
			return r.fail(ErrTruncated, 0, "the file ends inside the header (line %d)", r.line)
		}
		if err != nil {
			return err
		}
		if isBodyLine(line) {
			if err := r.checkHeader(seen); err != nil {
				return err
			}
			e, isEntry, err := r.bodyLine(line)
			if err != nil {
				return err
			}
			r.pending, r.hasPending = e, isEntry
			return nil
		}
		key, value, ok := bytes.Cut(line, []byte(" "))
		if !ok || !headerKey.Match(key) {
			return r.fail(ErrCorrupt, r.line, "malformed header line %s (want: KEY VALUE)", quoteFragment(line))
		}
		if seen[string(key)] {
			return r.fail(ErrCorrupt, r.line, "header field %s given twice", key)
		}
		seen[string(key)] = true
		if err := r.headerField(string(key), value); err != nil {
			return err
		}
	}
}

// headerField stores one header value. Unknown keys are skipped (after checking they are
// well formed) so that a later version can add fields that older readers may ignore.
func (r *Reader) headerField(key string, raw []byte) error {
	value, err := parseField(raw)
	if err != nil {
		return r.fail(ErrCorrupt, r.line, "header field %s: %v", key, err)
	}
	bad := func(what string) error {
		return r.fail(ErrCorrupt, r.line, "header field %s: %s %s", key, what, quoteFragment(raw))
	}
	h := &r.header
	switch key {
	case "server_id":
		h.ServerID = value
	case "hostname":
		h.Hostname = value
	case "flavor":
		h.Flavor = flavor.Kind(value)
	case "server_version":
		h.ServerVersion = value
	case "tool_version":
		h.ToolVersion = value
	case "page_size":
		n, err := strconv.Atoi(value)
		if err != nil || !isDigits(raw) {
			return bad("bad number")
		}
		if !validPageSize(n) {
			return bad("not an InnoDB page size:")
		}
		h.PageSize = n
	case "pool_bytes", "pool_pages":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || !isDigits(raw) {
			return bad("bad number")
		}
		if key == "pool_bytes" {
			h.PoolBytes = n
		} else {
			h.PoolPages = n
		}
	case "captures":
		n, err := strconv.Atoi(value)
		if err != nil || !isDigits(raw) || n < 1 || n > math.MaxUint16 {
			return bad("bad number of captures")
		}
		h.Captures = n
	case "captured_at":
		t, err := time.Parse(time.RFC3339, value)
		if err != nil {
			return bad("bad RFC 3339 time")
		}
		h.CapturedAt = t.UTC()
	}
	return nil
}

// checkHeader runs when the header ends: the fields a reader cannot do without.
func (r *Reader) checkHeader(seen map[string]bool) error {
	for _, key := range []string{"page_size", "captured_at"} {
		if !seen[key] {
			return r.fail(ErrCorrupt, 0, "the header has no %s", key)
		}
	}
	return nil
}

// bodyLine handles one line after the header.
func (r *Reader) bodyLine(line []byte) (Entry, bool, error) {
	switch {
	case len(line) > 0 && line[0] >= '0' && line[0] <= '9':
		e, err := r.parseEntry(line)
		return e, err == nil, err
	case bytes.HasPrefix(line, []byte("object ")):
		return Entry{}, false, r.parseObject(line)
	case bytes.HasPrefix(line, trailerPrefix):
		return Entry{}, false, r.parseTrailer(line)
	}
	return Entry{}, false, r.fail(ErrCorrupt, r.line, "unexpected line %s", quoteFragment(line))
}

// cutUint32 reads a decimal number followed by a space. It does not allocate: this runs
// once per page.
func cutUint32(b []byte) (uint32, []byte, bool) {
	var v uint64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + uint64(b[i]-'0')
		if v > math.MaxUint32 {
			return 0, nil, false
		}
	}
	if i == 0 || i >= len(b) || b[i] != ' ' {
		return 0, nil, false
	}
	return uint32(v), b[i+1:], true
}

func (r *Reader) parseEntry(line []byte) (Entry, error) {
	obj, rest, ok1 := cutUint32(line)
	page, rest, ok2 := cutUint32(rest)
	lru, rest, ok3 := cutUint32(rest)
	e := Entry{Object: obj, Page: page, LRU: lru, Seen: 1}
	ok := ok1 && ok2 && ok3 && len(rest) >= 1 && (rest[0] == 'y' || rest[0] == 'o')
	var bounds []byte
	var rule string // which rule a well-formed history broke
	r.low, r.high = nil, nil
	if ok {
		e.Old = rest[0] == 'o'
		switch {
		case r.header.FormatVersion >= 3:
			bounds, rule, ok = r.parseHistory(rest[1:], &e, true)
		case r.header.FormatVersion == 2:
			_, rule, ok = r.parseHistory(rest[1:], &e, false)
		default:
			ok = len(rest) == 1
		}
	}
	if !ok {
		want := "OBJECT PAGE LRU y|o"
		if r.header.FormatVersion >= 2 {
			want += " SEEN LAST SCORE"
		}
		if r.header.FormatVersion >= 3 {
			want += " LOW HIGH"
		}
		if rule != "" {
			return Entry{}, r.fail(ErrCorrupt, r.line, "entry %s: %s", quoteFragment(line), rule)
		}
		return Entry{}, r.fail(ErrCorrupt, r.line, "malformed entry %s (want: %s)", quoteFragment(line), want)
	}
	if int(obj) >= len(r.objects) {
		return Entry{}, r.fail(ErrCorrupt, r.line, "object reference %d out of range (%d objects defined before it)", obj, len(r.objects))
	}
	if len(bounds) > 0 {
		if err := r.parseBounds(bounds, &e); err != nil {
			return Entry{}, err
		}
	}
	r.entries++
	return e, nil
}

// parseBounds reads a version 3 entry's " LOW HIGH": "-" unknown, "~" the index's start or
// end, "@N" (HIGH only) another entry's page, or a key over the object's columns.
func (r *Reader) parseBounds(b []byte, e *Entry) error {
	low, high, ok := bytes.Cut(b[1:], []byte(" "))
	if b[0] != ' ' || !ok || len(low) == 0 || len(high) == 0 || bytes.IndexByte(high, ' ') >= 0 {
		return r.fail(ErrCorrupt, r.line, "malformed key range %s (want: LOW HIGH)", quoteFragment(b))
	}
	cols := r.columns[e.Object]
	check := func(tok []byte, isHigh bool) error {
		switch {
		case string(tok) == unknownBound:
			return nil
		case cols == nil:
			return r.fail(ErrCorrupt, r.line, "key bound %s for an object without key columns", quoteFragment(tok))
		case string(tok) == OpenBound:
			return nil
		case isHigh && tok[0] == '@':
			if _, ok := parseUint32(tok[1:]); !ok {
				return r.fail(ErrCorrupt, r.line, "bad page reference %s", quoteFragment(tok))
			}
			return nil
		}
		if _, err := keys.ParseKey(cols, tok); err != nil {
			return r.fail(ErrCorrupt, r.line, "bad key %s: %v", quoteFragment(tok), err)
		}
		return nil
	}
	if err := check(low, false); err != nil {
		return err
	}
	if err := check(high, true); err != nil {
		return err
	}
	if string(low) == unknownBound && string(high) == unknownBound {
		return r.fail(ErrCorrupt, r.line, "a key range that says nothing is written as none")
	}
	r.low, r.high = low, high
	if string(low) != unknownBound {
		r.keyed++
	}
	return nil
}

// Range is the key range of the entry Next returned last (the zero Range when it has none).
func (r *Reader) Range() Range {
	tok := func(b []byte) string {
		if b == nil || string(b) == unknownBound {
			return ""
		}
		return string(b)
	}
	return Range{Low: tok(r.low), High: tok(r.high)}
}

// parseHistory reads a version 2 entry's " SEEN LAST SCORE": seen at least 1 and at most
// the header's captures, last below them, score at most ScoreMax. With more set (version
// 3) the score is followed by a space and the rest of the line, which it returns.
func (r *Reader) parseHistory(b []byte, e *Entry, more bool) ([]byte, string, bool) {
	if len(b) < 2 || b[0] != ' ' {
		return nil, "", false
	}
	seen, rest, ok1 := cutUint32(b[1:])
	last, rest, ok2 := cutUint32(rest)
	var score uint32
	ok3 := false
	if more {
		// Version 3: the score ends the line, or a space and the key range follow it.
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		score, ok3 = wholeUint32(rest[:end])
		rest = rest[end:]
	} else {
		score, ok3 = wholeUint32(rest)
	}
	captures := uint32(max(r.header.Captures, 1))
	switch {
	case !ok1 || !ok2 || !ok3:
		return nil, "", false
	case seen < 1 || seen > captures:
		return nil, fmt.Sprintf("SEEN %d is not within 1 and the header's captures (%d)", seen, captures), false
	case last >= captures:
		return nil, fmt.Sprintf("LAST %d is not below the header's captures (%d)", last, captures), false
	case score > ScoreMax:
		return nil, fmt.Sprintf("SCORE %d is above %d", score, ScoreMax), false
	}
	e.Seen, e.Last, e.Score = uint16(seen), uint16(last), score
	return rest, "", true
}

func (r *Reader) parseObject(line []byte) error {
	f := bytes.Split(line, []byte(" "))
	want := 8
	if r.header.FormatVersion >= 3 {
		want = 9
	}
	if len(f) != want {
		return r.fail(ErrCorrupt, r.line, "malformed object line %s (want: object ID SPACE TYPE SCHEMA TABLE PARTITION INDEX%s)", quoteFragment(line), map[bool]string{true: " KEYCOLUMNS"}[want == 9])
	}
	id, ok := parseUint32(f[1])
	if !ok || int64(id) != int64(len(r.objects)) {
		return r.fail(ErrCorrupt, r.line, "object id %s out of sequence (expected %d)", quoteFragment(f[1]), len(r.objects))
	}
	space, ok := parseUint32(f[2])
	if !ok {
		return r.fail(ErrCorrupt, r.line, "bad tablespace id %s", quoteFragment(f[2]))
	}
	var names [5]string
	for i := range names {
		s, err := parseField(f[3+i])
		if err != nil {
			return r.fail(ErrCorrupt, r.line, "object %d field %d: %v", id, 3+i, err)
		}
		names[i] = s
	}
	o := Object{SpaceID: space, PageType: names[0], Schema: names[1], Table: names[2], Partition: names[3], Index: names[4]}
	var cols keys.Columns
	if want == 9 && string(f[8]) != unknownBound {
		var err error
		if cols, err = keys.ParseColumns(f[8]); err != nil {
			return r.fail(ErrCorrupt, r.line, "object %d key columns: %v", id, err)
		}
		if r.header.FormatVersion < 4 {
			for _, c := range cols {
				if c.Desc {
					return r.fail(ErrCorrupt, r.line, "object %d key columns: descending key field %s in a version %d file (version 4 added them)", id, c.Name, r.header.FormatVersion)
				}
			}
		}
		o.KeyColumns = string(f[8])
	}
	if prev, dup := r.known[o]; dup {
		return r.fail(ErrCorrupt, r.line, "object %d repeats object %d", id, prev)
	}
	r.known[o] = id
	r.objects = append(r.objects, o)
	r.columns = append(r.columns, cols)
	return nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (r *Reader) parseTrailer(line []byte) error {
	r.inTrailer = true
	var (
		entries, objects int64
		keyed            int64 = -1
		duration         time.Duration
		checksum         string
		seen             = map[string]bool{}
	)
	// The checksum covers everything before its own field, which must be the last one.
	at := bytes.LastIndex(line, []byte(" sha256="))
	if at < 0 {
		return r.fail(ErrCorrupt, r.line, "the trailer has no sha256")
	}
	if bytes.IndexByte(line[at+1:], ' ') >= 0 {
		return r.fail(ErrCorrupt, r.line, "sha256 is not the trailer's last field")
	}
	r.sum.Write(line[:at])
	for _, kv := range bytes.Split(line[len(trailerPrefix):], []byte(" ")) {
		key, value, ok := bytes.Cut(kv, []byte("="))
		if !ok || !headerKey.Match(key) {
			return r.fail(ErrCorrupt, r.line, "malformed trailer field %s (want: KEY=VALUE)", quoteFragment(kv))
		}
		if seen[string(key)] {
			return r.fail(ErrCorrupt, r.line, "trailer field %s given twice", key)
		}
		seen[string(key)] = true
		var err error
		switch string(key) {
		case "entries":
			entries, err = strconv.ParseInt(string(value), 10, 64)
		case "objects":
			objects, err = strconv.ParseInt(string(value), 10, 64)
		case "keyed":
			keyed, err = strconv.ParseInt(string(value), 10, 64)
		case "capture_duration":
			duration, err = time.ParseDuration(string(value))
			if err == nil && duration < 0 {
				err = errors.New("negative")
			}
		case "sha256":
			checksum = string(value)
			if !sha256Hex.MatchString(checksum) {
				err = errors.New("not 64 lowercase hex digits")
			}
		}
		if err != nil {
			return r.fail(ErrCorrupt, r.line, "trailer field %s: bad value %s", key, quoteFragment(value))
		}
	}
	for _, key := range []string{"entries", "objects", "sha256"} {
		if !seen[key] {
			return r.fail(ErrCorrupt, r.line, "the trailer has no %s", key)
		}
	}
	// The checksum first: when the content is not what was written, the counts that do not
	// add up are a symptom of the damage, not the news.
	if got := hex.EncodeToString(r.sum.Sum(nil)); got != checksum {
		r.explained = true // this is the verdict explain would look for
		return r.fail(ErrCorrupt, 0, "the %s is damaged: checksum mismatch: the content hashes to sha256 %s..., the trailer says %s...", r.what(), got[:12], checksum[:12])
	}
	if entries > r.entries {
		return r.fail(ErrTruncated, r.line, "the trailer says %d entries but only %d precede it", entries, r.entries)
	}
	if entries != r.entries {
		return r.fail(ErrCorrupt, r.line, "the trailer says %d entries but %d precede it", entries, r.entries)
	}
	if objects != int64(len(r.objects)) {
		return r.fail(ErrCorrupt, r.line, "the trailer says %d objects but %d are defined", objects, len(r.objects))
	}
	if keyed >= 0 && keyed != r.keyed {
		return r.fail(ErrCorrupt, r.line, "the trailer says %d entries with keys but %d precede it", keyed, r.keyed)
	}
	// Nothing may follow the trailer. Reading to the end also makes gzip verify its own CRC.
	if _, err := r.br.ReadByte(); err == nil {
		return r.fail(ErrCorrupt, r.line+1, "data after the trailer")
	} else if err != io.EOF {
		return r.readError(err)
	}
	r.header.Entries, r.header.Objects, r.header.KeyedEntries = entries, objects, r.keyed
	r.header.CaptureDuration, r.header.SHA256 = duration, checksum
	r.done = true
	return nil
}

// wholeUint32 is cutUint32 for the last field of a line: no allocation, once per page.
func wholeUint32(b []byte) (uint32, bool) {
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v = v*10 + uint64(c-'0'); v > math.MaxUint32 {
			return 0, false
		}
	}
	return uint32(v), len(b) > 0
}

// parseUint32 reads a whole field as a decimal number.
func parseUint32(b []byte) (uint32, bool) {
	if !isDigits(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 32)
	return uint32(n), err == nil
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
