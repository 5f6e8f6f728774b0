package replay_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/innowarm/innowarm/internal/replay"
)

// FuzzClassify: no input panics, and no accepted statement stays accepted once a locking
// clause, an INTO or a second statement follows it on a new line (a clause the classifier
// missed would be hidden by a string or comment it misread).
func FuzzClassify(f *testing.F) {
	for _, s := range acceptCases {
		f.Add(s, false, false)
	}
	for _, c := range rejectCases {
		f.Add(c.sql, false, false)
	}
	f.Add(`SELECT 'a\' FOR UPDATE -- '`, true, false)
	f.Add(`SELECT "x" /*! "*/ 1`, false, true)
	f.Fuzz(func(t *testing.T, sql string, noBackslash, ansi bool) {
		mode := replay.Mode{NoBackslashEscapes: noBackslash, ANSIQuotes: ansi}
		r := replay.Classify(sql, mode)
		if r != replay.Classify(sql, mode) {
			t.Fatalf("not deterministic: %q", sql)
		}
		_ = replay.Fingerprint(sql, mode)
		if r != "" {
			return
		}
		for _, tail := range []string{"\nFOR UPDATE", "\nLOCK IN SHARE MODE", "\nINTO @x", "\n; DELETE FROM t", "\nUNION SELECT GET_LOCK('x', 1)"} {
			if replay.Classify(sql+tail, mode) == "" {
				t.Fatalf("%q accepted, and so is it followed by %q", sql, tail)
			}
		}
	})
}

// FuzzSQLFile: the splitter ends on any input, without panics, and loses no statement text
// outside comments and the delimiters.
func FuzzSQLFile(f *testing.F) {
	f.Add([]byte("SELECT 1; SELECT 'a;b';\nDELIMITER //\nSELECT 2//\nDELIMITER ;\nuse `x`\nSELECT 3\\G"))
	f.Add([]byte("SELECT \"x\\\"y\"; /* ; */ -- ;\n# ;\nSELECT `a``;`;"))
	f.Add([]byte("DELIMITER\nSELECT 1;"))
	f.Add([]byte("use"))
	f.Add([]byte("'unterminated; still"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mode := range []replay.Mode{{}, {NoBackslashEscapes: true, ANSIQuotes: true}} {
			src, _, err := replay.OpenFile("-", replay.FileOptions{Format: replay.FormatSQL, Mode: mode, Stdin: bytes.NewReader(data), MaxStatementBytes: 64})
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for i := 0; ; i++ {
				st, err := src.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(st.SQL) > 64 || i > len(data) {
					t.Fatalf("statement %d of %d bytes from %d bytes of input", i, len(st.SQL), len(data))
				}
				total += len(st.SQL)
				_ = replay.Classify(st.SQL, mode)
			}
			if total > len(data) {
				t.Fatalf("%d bytes of statements from %d bytes", total, len(data))
			}
		}
	})
}
