// Package replay warms the buffer pool by running an application's own reads again: it
// reads statements from a slow log, a general log, a file of SQL statements or
// performance_schema, keeps only read-only SELECTs (everything else is counted as skipped,
// with a reason), and runs them on parallel read-only sessions in the schema they first ran
// in, discarding their results as they stream.
package replay

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// Statement is one statement read from a source.
type Statement struct {
	SQL    string
	Schema string // the schema it ran in; "" when none or unknown
	Line   int    // where it starts in the file (1-based); 0 for performance_schema
	// TooLong is set when the text was cut at FileOptions.MaxStatementBytes.
	TooLong bool
	// Truncated is set when performance_schema kept only the start of the text.
	Truncated bool
	// Own is set when the statement came from one of innowarm's own sessions (a log or
	// performance_schema written to while innowarm ran): it is not the application's.
	Own bool
}

// Source yields statements in order; Next returns io.EOF after the last one.
type Source interface {
	Next() (Statement, error)
	Close() error
}

// Format is a source's layout.
type Format string

const (
	FormatAuto       Format = "auto"
	FormatSlow       Format = "slow"    // slow query log (MariaDB or MySQL)
	FormatGeneral    Format = "general" // general query log (MariaDB or MySQL)
	FormatSQL        Format = "sql"     // statements separated by ';' (DELIMITER honoured)
	FormatPerfSchema Format = "performance_schema"
)

// Formats are the values --replay-format takes.
var Formats = []Format{FormatAuto, FormatSlow, FormatGeneral, FormatSQL}

// ParseFormat checks a --replay-format value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q: use one of auto, slow, general, sql", s)
}

// PerfSchemaSource is the SOURCE name that reads performance_schema instead of a file.
const PerfSchemaSource = "performance_schema"

// DefaultMaxStatementBytes bounds the text kept of one statement (a bulk INSERT in a log
// can be huge); a longer statement is skipped as "too long".
const DefaultMaxStatementBytes = 16 << 20

// FileOptions shape how a file is read.
type FileOptions struct {
	Format            Format
	Mode              Mode      // how the SQL-file splitter treats backslashes and double quotes
	MaxStatementBytes int       // default DefaultMaxStatementBytes
	Stdin             io.Reader // for the name "-"; default os.Stdin
}

// OpenFile opens a log or SQL file ("-" is standard input; gzip or bzip2 data, whatever
// the name, is decompressed as it is read) and returns its source and the format it was read as.
// Missing or unreadable files are usage errors.
func OpenFile(name string, o FileOptions) (Source, Format, error) {
	if o.MaxStatementBytes <= 0 {
		o.MaxStatementBytes = DefaultMaxStatementBytes
	}
	var rc io.ReadCloser
	if name == "-" {
		in := o.Stdin
		if in == nil {
			in = os.Stdin
		}
		rc = io.NopCloser(in)
	} else {
		f, err := os.Open(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil, "", exitcode.BadValue("Replay", "%s: %w", name, unwrapPath(err))
			}
			return nil, "", fmt.Errorf("--replay %s: %w", name, err)
		}
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, "", exitcode.BadValue("Replay", "%s is a directory: name a log or SQL file", name)
		}
		rc = f
	}
	// The content, not the name, says whether the file is compressed, as zcat -f and
	// pt-query-digest see it: a rotated log keeps its name when gzip'd by hand, and a file
	// named .gz may hold plain text.
	raw := bufio.NewReaderSize(rc, 64<<10)
	var r io.Reader = raw
	closers := []io.Closer{rc}
	magic, _ := raw.Peek(10)
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		zr, err := gzip.NewReader(raw)
		if err != nil {
			rc.Close()
			return nil, "", exitcode.BadValue("Replay", "%s: damaged gzip data: %w", name, err)
		}
		r = zr
		closers = append([]io.Closer{zr}, closers...)
	case isBzip2(magic):
		r = bzip2.NewReader(raw)
	default:
		if tool := otherCompression(magic); tool != "" {
			rc.Close()
			return nil, "", exitcode.BadValue("Replay", "%s is compressed with %s, which innowarm does not read: decompress it into the replay, e.g. %s -dc FILE | innowarm warm --replay - ...", name, tool, tool)
		}
	}
	br := bufio.NewReaderSize(r, 256<<10)
	format := o.Format
	if format == "" || format == FormatAuto {
		format = sniff(br)
	}
	lr := &lineReader{r: br, max: o.MaxStatementBytes}
	closeAll := func() error {
		var first error
		for _, c := range closers {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	switch format {
	case FormatSlow:
		return &slowLog{lr: lr, close: closeAll, own: ownThreads{}}, format, nil
	case FormatGeneral:
		return &generalLog{lr: lr, close: closeAll, schemas: map[string]string{}, own: ownThreads{}}, format, nil
	case FormatSQL:
		return &sqlFile{r: br, delim: ";", mode: o.Mode, max: o.MaxStatementBytes, line: 1, close: closeAll}, format, nil
	}
	_ = closeAll()
	return nil, "", exitcode.BadValue("ReplayFormat", "%q: use one of auto, slow, general, sql", format)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
)

// isBzip2 reads bzip2's header: "BZh", the block size 1-9, then the magic of a first block
// or of the end of an empty stream, so that a text file starting "BZh" is not taken for one.
func isBzip2(magic []byte) bool {
	return len(magic) == 10 && bytes.HasPrefix(magic, []byte("BZh")) && magic[3] >= '1' && magic[3] <= '9' &&
		(bytes.Equal(magic[4:], []byte{0x31, 0x41, 0x59, 0x26, 0x53, 0x59}) || bytes.Equal(magic[4:], []byte{0x17, 0x72, 0x45, 0x38, 0x50, 0x90}))
}

// otherCompression names the tool of a compressed format innowarm does not decompress
// itself, from the file's first bytes; "" for none.
func otherCompression(magic []byte) string {
	switch {
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "zstd"
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return "xz"
	case bytes.HasPrefix(magic, []byte{0x04, 0x22, 0x4d, 0x18}):
		return "lz4"
	}
	return ""
}

var (
	slowMarkerRe = regexp.MustCompile(`(?m)^# (User@Host|Query_time|Time): `)
	// generalEventRe is one event of a general log: an optional time (MariaDB's "YYMMDD
	// H:MM:SS", or MySQL's ISO 8601), the thread id, the command and its argument.
	// Without a time, the line starts with tabs.
	generalEventRe = regexp.MustCompile(`^(?:(?:\d{6}\s+\d{1,2}:\d\d:\d\d|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)[\t ]+|\t+ *)(\d+) ([A-Za-z][A-Za-z _]*?)\t(.*)$`)
)

// sniff guesses the format from the first 64 KiB: slow-log header lines, general-log events,
// or else SQL.
func sniff(br *bufio.Reader) Format {
	head, _ := br.Peek(64 << 10)
	if slowMarkerRe.Match(head) {
		return FormatSlow
	}
	for _, line := range bytes.Split(head, []byte("\n")) {
		if generalEventRe.Match(bytes.TrimRight(line, "\r")) {
			return FormatGeneral
		}
	}
	return FormatSQL
}

// lineReader reads lines of any length, keeping at most max bytes of each, with one line of
// push-back.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line int // number of the last line returned

	pushed    bool
	last      string
	lastShort bool
}

// next returns the next line without its line end, and whether it was cut at max.
func (lr *lineReader) next() (string, bool, error) {
	if lr.pushed {
		lr.pushed = false
		lr.line++
		return lr.last, lr.lastShort, nil
	}
	var buf []byte
	total := 0
	for {
		chunk, err := lr.r.ReadSlice('\n')
		total += len(chunk)
		if room := lr.max + 2 - len(buf); room > 0 {
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (total == 0 || !errors.Is(err, io.EOF)) {
			return "", false, err
		}
		break
	}
	cut := total > len(buf)
	s := strings.TrimSuffix(string(buf), "\n")
	s = strings.TrimSuffix(s, "\r")
	if len(s) > lr.max {
		s, cut = s[:lr.max], true
	}
	lr.line++
	lr.last, lr.lastShort = s, cut
	return s, cut, nil
}

// back pushes the last line back.
func (lr *lineReader) back() {
	lr.pushed = true
	lr.line--
}

// bodyBuilder collects the lines of one statement up to a byte limit.
type bodyBuilder struct {
	b       strings.Builder
	max     int
	tooLong bool
	lines   int
}

func (bb *bodyBuilder) add(line string, cut bool) {
	if cut {
		bb.tooLong = true
	}
	if bb.lines > 0 {
		if bb.b.Len()+1 > bb.max {
			bb.tooLong = true
		} else {
			bb.b.WriteByte('\n')
		}
	}
	bb.lines++
	if room := bb.max - bb.b.Len(); room < len(line) {
		bb.tooLong = true
		line = line[:max(room, 0)]
	}
	bb.b.WriteString(line)
}

func (bb *bodyBuilder) empty() bool { return bb.lines == 0 }

func (bb *bodyBuilder) reset() {
	bb.b.Reset()
	bb.tooLong = false
	bb.lines = 0
}

// isServerHeader reports the three lines a server writes at the top of a log file when it
// opens it (at start-up and after FLUSH LOGS).
func isServerHeader(line string) bool {
	return strings.HasSuffix(line, "started with:") && strings.Contains(line, ", Version: ") ||
		strings.HasPrefix(line, "Tcp port: ") ||
		strings.HasPrefix(line, "Time") && strings.Contains(line, "Id Command") && strings.HasSuffix(line, "Argument")
}

// useArg reads the schema of "use db;", "USE `my db`" or the argument of a client "use".
func useArg(s string) (string, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, "; \t")
	if s == "" {
		return "", false
	}
	if s[0] == '`' || s[0] == '"' || s[0] == '\'' {
		// The mysql client takes any of the three quotes around use's argument.
		_, name, err := scanQuoted(s, 0, s[0])
		return name, err == nil
	}
	if f := strings.Fields(s); len(f) > 0 {
		return f[0], true
	}
	return "", false
}
