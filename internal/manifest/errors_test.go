package manifest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTruncatedAtEveryOffset(t *testing.T) {
	data := smallManifest(t)
	for cut := 0; cut < len(data); cut++ {
		_, err := Read(bytes.NewReader(data[:cut]), "cut.manifest")
		checkFormatError(t, err, "cut.manifest", ErrTruncated)
	}
	if _, err := Read(bytes.NewReader(data), "whole"); err != nil {
		t.Fatalf("the uncut file: %v", err)
	}
}

func TestTruncatedGzipAtEveryOffset(t *testing.T) {
	data := gzipBytes(t, smallManifest(t))
	for cut := 0; cut < len(data); cut++ {
		_, err := Read(bytes.NewReader(data[:cut]), "cut.gz")
		checkFormatError(t, err, "cut.gz", ErrTruncated)
	}
	if _, err := Read(bytes.NewReader(data), "whole.gz"); err != nil {
		t.Fatalf("the uncut file: %v", err)
	}
}

// Every single-bit flip anywhere in a file is caught, with a one-line usage error.
func TestEveryBitFlipIsRefused(t *testing.T) {
	data := smallManifest(t)
	for i := range data {
		for bit := range 8 {
			damaged := bytes.Clone(data)
			damaged[i] ^= 1 << bit
			_, err := Read(bytes.NewReader(damaged), "flip")
			if err == nil {
				t.Fatalf("byte %d bit %d flipped (%q -> %q): accepted", i, bit, data[i], damaged[i])
			}
			if errorKind(err) == nil || exitcode.Of(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
				t.Fatalf("byte %d bit %d: unclassified error %q", i, bit, err)
			}
		}
	}
}

func TestFlippedDigitIsAChecksumError(t *testing.T) {
	data := smallManifest(t)
	i := bytes.Index(data, []byte("\n0 1000 0 y 1 0 0\n"))
	if i < 0 {
		t.Fatal("no first entry line")
	}
	data[i+3] = '7' // page 1000 -> 1700: still well formed
	_, err := Read(bytes.NewReader(data), "flip")
	checkFormatError(t, err, "flip", ErrCorrupt, "checksum mismatch")
}

func TestFlippedGzipByteIsCorrupt(t *testing.T) {
	data := gzipBytes(t, smallManifest(t))
	for _, i := range []int{len(data) / 2, len(data) - 6} { // deflate data, gzip CRC
		damaged := bytes.Clone(data)
		damaged[i] ^= 0x10
		_, err := Read(bytes.NewReader(damaged), "flip.gz")
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
			t.Errorf("byte %d: %v", i, err)
		}
	}
}

func TestReadErrors(t *testing.T) {
	good := string(smallManifest(t))
	header, body, _ := strings.Cut(good, "object 0")
	body = "object 0" + body
	for _, tc := range []struct {
		name      string
		data      string
		kind      error
		fragments []string
	}{
		{"empty", "", ErrTruncated, []string{"empty"}},
		{"wrong magic", "hello world\n", ErrNotManifest, []string{`"hello world"`}},
		{"binary", "\x00\x01\x02\x03", ErrNotManifest, nil},
		{"ib_buffer_pool", "0,3\n0,4\n5,77\n", ErrNotManifest, []string{"ib_buffer_pool"}},
		{"future version", strings.Replace(good, "innowarm-manifest 3", "innowarm-manifest 5", 1), ErrVersion, []string{"version 5", "upgrade innowarm"}},
		{"far future version", "innowarm-manifest 99\nwhatever the future holds\n", ErrVersion, []string{"version 99"}},
		{"bad version", "innowarm-manifest one\n", ErrCorrupt, []string{"line 1", "format version"}},
		{"missing trailer", good[:strings.Index(good, "end ")], ErrTruncated, []string{"no trailer after 20 entries"}},
		{"header only", header, ErrTruncated, []string{"inside the header"}},
		{"bad object reference", strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n7 1001 1 y 1 0 0\n", 1), ErrCorrupt, []string{"line 15", "object reference 7 out of range (2 objects defined before it)"}},
		{"reference before definition", header + "0 1 2 y 1 0 0\n" + body, ErrCorrupt, []string{"line 12", "object reference 0 out of range (0 objects"}},
		{"malformed entry", strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n1 1001 1 young 1 0 0\n", 1), ErrCorrupt, []string{"line 15", "malformed entry"}},
		{"page number too large", strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n1 4294967296 1 y 1 0 0\n", 1), ErrCorrupt, []string{"line 15", "malformed entry"}},
		{"crlf", strings.ReplaceAll(good, "\n", "\r\n"), ErrCorrupt, []string{"line 1", "Windows line ends (CR LF)"}},
		{"unknown line", strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\nhello\n1 1001 1 y 1 0 0\n", 1), ErrCorrupt, []string{"line 15", "unexpected line"}},
		{"object out of sequence", strings.Replace(good, "object 1 ", "object 2 ", 1), ErrCorrupt, []string{"out of sequence"}},
		{"object repeated", strings.Replace(good, "object 1 5 BLOB shop orders - -", "object 1 5 INDEX shop orders - PRIMARY", 1), ErrCorrupt, []string{"object 1 repeats object 0"}},
		{"bad escape", strings.Replace(good, "shop orders - PRIMARY", "shop or%zzders - PRIMARY", 1), ErrCorrupt, []string{"bad %-escape"}},
		{"duplicate header", strings.Replace(good, "page_size 16384\n", "page_size 16384\npage_size 8192\n", 1), ErrCorrupt, []string{"given twice"}},
		{"no page size", strings.Replace(good, "page_size 16384\n", "", 1), ErrCorrupt, []string{"no page_size"}},
		{"odd page size", strings.Replace(good, "page_size 16384\n", "page_size 12288\n", 1), ErrCorrupt, []string{"not an InnoDB page size"}},
		{"bad time", strings.Replace(good, "captured_at 2026-03-01T10:00:05Z", "captured_at yesterday", 1), ErrCorrupt, []string{"RFC 3339"}},
		{"data after trailer", good + "0 1 2 y 1 0 0\n", ErrCorrupt, []string{"data after the trailer"}},
		{"trailer without checksum", good[:strings.Index(good, " sha256=")] + "\n", ErrCorrupt, []string{"no sha256"}},
		// Re-signed: a file written so, not damaged after (that is checked first).
		{"entry removed", string(resign(t, []byte(strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n", 1)))), ErrTruncated, []string{"says 20 entries but only 19"}},
		{"entry added", string(resign(t, []byte(strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n1 1001 1 y 1 0 0\n1 1001 1 y 1 0 0\n", 1)))), ErrCorrupt, []string{"says 20 entries but 21"}},
		{"entry lost", strings.Replace(good, "\n1 1001 1 y 1 0 0\n", "\n", 1), ErrCorrupt, []string{"the file is damaged: checksum mismatch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.data), "in.manifest")
			checkFormatError(t, err, "in.manifest", tc.kind, tc.fragments...)
			// The gzip version of the same bytes fails the same way.
			if tc.data != "" {
				_, gzErr := Read(bytes.NewReader(gzipBytes(t, []byte(tc.data))), "in.manifest")
				if errorKind(gzErr) != tc.kind {
					t.Errorf("gzip: %v, plain: %v", gzErr, err)
				}
			}
		})
	}
}

func TestUnknownHeaderFieldsAreIgnored(t *testing.T) {
	// A later version may add header fields that older readers skip; the checksum still
	// covers them, so one added by hand is refused.
	good := string(smallManifest(t))
	withExtra := strings.Replace(good, "tool_version", "future_field some%20value\ntool_version", 1)
	_, err := Read(strings.NewReader(withExtra), "x")
	checkFormatError(t, err, "x", ErrCorrupt, "checksum mismatch")

	m, err := Read(bytes.NewReader(resign(t, []byte(withExtra))), "x")
	if err != nil {
		t.Fatalf("an unknown header field was refused: %v", err)
	}
	if m.Header.ToolVersion != testHeader().ToolVersion || len(m.Entries) != 20 {
		t.Error("fields after the unknown one were lost")
	}
	bad := strings.Replace(good, "tool_version", "Future-Field x\ntool_version", 1)
	_, err = Read(bytes.NewReader(resign(t, []byte(bad))), "x")
	checkFormatError(t, err, "x", ErrCorrupt, "malformed header line")
}

func TestPageSizeCheck(t *testing.T) {
	m := &Manifest{}
	m.Header = testHeader()
	m.Header.PageSize = 8 << 10
	got, err := Read(bytes.NewReader(encode(t, m)), "/var/lib/innowarm/hot.manifest")
	if err != nil {
		t.Fatal(err)
	}
	if err := got.CheckPageSize(8 << 10); err != nil {
		t.Errorf("same page size refused: %v", err)
	}
	err = got.CheckPageSize(16 << 10)
	checkFormatError(t, err, "/var/lib/innowarm/hot.manifest", ErrPageSize,
		"manifest was captured with 8 KiB pages, this server uses 16 KiB")

	r, err := NewReader(bytes.NewReader(encode(t, m)), "stream")
	if err != nil {
		t.Fatal(err)
	}
	checkFormatError(t, r.CheckPageSize(4<<10), "stream", ErrPageSize, "8 KiB pages, this server uses 4 KiB")
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.manifest")
	_, err := Open(missing)
	if err == nil || exitcode.Of(err) != exitcode.Usage || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if want := "manifest " + missing + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("missing file: %q, want %q", err, want)
	}
	if _, err := Load(dir); err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
}

func TestErrorsAreSticky(t *testing.T) {
	data := smallManifest(t)
	data = bytes.Replace(data, []byte("\n1 1001 1 y 1 0 0\n"), []byte("\n1 1001 1 ?\n"), 1)
	r, err := NewReader(bytes.NewReader(data), "s")
	if err != nil {
		t.Fatal(err)
	}
	var first error
	for range 100 {
		if _, err := r.Next(); err != nil {
			if first == nil {
				first = err
			} else if err != first {
				t.Fatalf("second error %v differs from first %v", err, first)
			}
		}
	}
	if first == nil || errors.Is(first, io.EOF) {
		t.Fatalf("no error: %v", first)
	}
}
