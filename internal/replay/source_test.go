package replay_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/replay"
)

type stmt struct{ schema, sql string }

func readAll(t *testing.T, name string, o replay.FileOptions) ([]replay.Statement, replay.Format) {
	t.Helper()
	src, format, err := replay.OpenFile(name, o)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out []replay.Statement
	for {
		st, err := src.Next()
		if err == io.EOF {
			return out, format
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, st)
	}
}

func check(t *testing.T, name string, got []replay.Statement, want []stmt) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w stmt
		if i < len(got) {
			g = stmt{got[i].Schema, got[i].SQL}
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s statement %d: got [%s] %q, want [%s] %q", name, i+1, g.schema, g.sql, w.schema, w.sql)
		}
	}
}

// mariadbLogged is what the MariaDB logs in testdata recorded: three connections, two schemas
// (one with a space), a multi-line statement with a ';' in a string.
var mariadbLogged = []stmt{
	{"shop", "INSERT INTO orders (note) VALUES ('a;b'), ('c')"},
	{"shop", "SELECT id,\n       note\n  FROM orders\n WHERE note <> 'x\n;y'"},
	{"shop", "SELECT * FROM orders FOR UPDATE"},
	{"shop", "SELECT DATABASE()"},
	{"odd db", "SELECT COUNT(*) FROM t"},
	{"odd db", "SELECT 1 /*!FOR UPDATE*/"},
	{"", "SELECT COUNT(*) FROM shop.orders"},
	{"", "SELECT DATABASE()"},
	{"shop", "select note from orders where id = 1"},
}

// The MariaDB logs were written by MariaDB 10.11 (the sandbox server), the MySQL 8.0 and
// Percona ones follow the layout of their servers' log.cc.
func TestSlowLogs(t *testing.T) {
	got, format := readAll(t, "testdata/mariadb-10.11-slow.log", replay.FileOptions{})
	if format != replay.FormatSlow {
		t.Errorf("format %s", format)
	}
	check(t, "mariadb slow", got, mariadbLogged)
	if got[1].Line != 17 {
		t.Errorf("line of the multi-line statement: %d", got[1].Line)
	}

	got, _ = readAll(t, "testdata/mysql-8.0-slow.log", replay.FileOptions{})
	check(t, "mysql slow", got, []stmt{
		{"shop", "select * from orders where id = 5"},
		{"shop", "insert into orders (note) values ('x')"},
		{"billing", "SELECT i.id,\n       i.total\n  FROM invoices i\n WHERE i.note = 'a;\n# not a header'\n   AND i.id IN (1, 2, 3)"},
		{"billing", "SELECT * FROM invoices WHERE id = 3 FOR UPDATE"},
		{"", "select @@version_comment limit 1"}, // after a restart of the server
	})

	got, _ = readAll(t, "testdata/percona-8.0-slow.log", replay.FileOptions{})
	check(t, "percona slow", got, []stmt{{"test_jfg", "select * from t"}, {"", "select database()"}})
}

func TestGeneralLogs(t *testing.T) {
	got, format := readAll(t, "testdata/mariadb-10.11-general.log", replay.FileOptions{})
	if format != replay.FormatGeneral {
		t.Errorf("format %s", format)
	}
	check(t, "mariadb general", got, append(mariadbLogged, stmt{"", "SET GLOBAL slow_query_log=OFF, general_log=OFF"}))

	got, _ = readAll(t, "testdata/mysql-8.0-general.log", replay.FileOptions{})
	check(t, "mysql general", got, []stmt{
		{"shop", "select * from orders where id = 5"},
		{"billing", "SELECT i.id,\n       i.total\n  FROM invoices i\n\n WHERE i.id IN (1, 2, 3)"},
		{"", "SELECT COUNT(*) FROM shop.orders"},
		{"billing", "SELECT * FROM invoices WHERE id = 7"}, // Execute, with its values
		{"shop", "UPDATE orders SET note = 'y' WHERE id = 7"},
		{"shop", "select note from orders where id = 7"},
		{"shop", "SELECT GET_LOCK('job', 0)"},
		{"", "SELECT 1"}, // a thread whose Connect is not in the log
	})
}

func TestSQLFile(t *testing.T) {
	got, format := readAll(t, "testdata/statements.sql", replay.FileOptions{})
	if format != replay.FormatSQL {
		t.Errorf("format %s", format)
	}
	check(t, "sql file", got, []stmt{
		{"", "-- A SQL file as an application or mysqldump writes it.\n/*!40101 SET NAMES utf8mb4 */"},
		{"shop", "SELECT * FROM orders WHERE note = 'a;b' AND id > 0"},
		{"shop", "SELECT \"x;y\", `we;ird` FROM orders # comment; with a semicolon"},
		{"shop", "select 1 -- trailing; comment"},
		{"shop", `INSERT INTO orders (note) VALUES ('it''s; fine'), ('back\\slash\'; still string')`},
		{"shop", "CREATE FUNCTION bump() RETURNS INT MODIFIES SQL DATA\nBEGIN\n  UPDATE counters SET n = n + 1;\n  RETURN 1;\nEND"},
		{"odd db", "SELECT COUNT(*) FROM t"},
		{"odd db", "/* block ; comment */ SELECT 2"},
		{"odd db", "SELECT /*!50000 SQL_NO_CACHE */ 3"},
		{"odd db", "select 4"},
	})
	if got[1].Line != 4 || got[6].Line != 18 {
		t.Errorf("lines: %d, %d", got[1].Line, got[6].Line)
	}
	want := []string{"not a SELECT: SET", "", "", "", "not a SELECT: INSERT", "not a SELECT: CREATE", "", "", "", ""}
	for i, st := range got {
		if r := replay.Classify(st.SQL, replay.Mode{}); i < len(want) && r != want[i] {
			t.Errorf("statement %d %q: %q, want %q", i+1, st.SQL, r, want[i])
		}
	}

	// USE's argument quoted as the mysql client takes it: a delimiter inside backticks
	// (USE `we;ird` took the rest of the file as its argument), and double or single
	// quotes, which are not part of the name (every statement ran in "shop", quotes kept).
	dir := t.TempDir()
	use := filepath.Join(dir, "use.sql")
	os.WriteFile(use, []byte("USE `we;ird`;\nSELECT 1;\nUSE \"shop\";\nSELECT 2;\nUSE 'a b';\nSELECT 3;\n"), 0o644)
	got, _ = readAll(t, use, replay.FileOptions{})
	check(t, "quoted use", got, []stmt{{"we;ird", "SELECT 1"}, {"shop", "SELECT 2"}, {"a b", "SELECT 3"}})

	// With NO_BACKSLASH_ESCAPES, a backslash ends no string: the splitter follows the server.
	p := filepath.Join(dir, "nb.sql")
	os.WriteFile(p, []byte(`SELECT 'a\'; SELECT 2;`), 0o644)
	got, _ = readAll(t, p, replay.FileOptions{Mode: replay.Mode{NoBackslashEscapes: true}})
	check(t, "no backslash escapes", got, []stmt{{"", `SELECT 'a\'`}, {"", "SELECT 2"}})
}

func TestSniffGzipStdin(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"mariadb-10.11-slow.log", "mysql-8.0-general.log", "statements.sql"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		plain, wantFormat := readAll(t, filepath.Join("testdata", name), replay.FileOptions{})
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(raw)
		zw.Close()
		gz := filepath.Join(dir, name+".gz")
		if err := os.WriteFile(gz, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		fromGz, format := readAll(t, gz, replay.FileOptions{})
		if format != wantFormat || len(fromGz) != len(plain) || fromGz[len(fromGz)-1].SQL != plain[len(plain)-1].SQL {
			t.Errorf("%s.gz: %s, %d statements; want %s, %d", name, format, len(fromGz), wantFormat, len(plain))
		}
		fromStdin, format := readAll(t, "-", replay.FileOptions{Stdin: bytes.NewReader(raw)})
		if format != wantFormat || len(fromStdin) != len(plain) {
			t.Errorf("%s on stdin: %s, %d statements; want %s, %d", name, format, len(fromStdin), wantFormat, len(plain))
		}
	}
	// An explicit format wins over the sniffing.
	got, format := readAll(t, "testdata/mysql-8.0-slow.log", replay.FileOptions{Format: replay.FormatSQL})
	if format != replay.FormatSQL || len(got) == 0 {
		t.Errorf("forced sql: %s, %d", format, len(got))
	}
}

func TestTooLong(t *testing.T) {
	dir := t.TempDir()
	long := "SELECT '" + strings.Repeat("x", 5000) + "'"
	files := map[string]string{
		"a.sql": long + ";\nSELECT 2;\n",
		"slow.log": "# User@Host: a[a] @ localhost []\n# Query_time: 0.1  Lock_time: 0.0 Rows_sent: 1  Rows_examined: 0\nSET timestamp=1;\n" + long + ";\n" +
			"# User@Host: a[a] @ localhost []\n# Query_time: 0.1  Lock_time: 0.0 Rows_sent: 1  Rows_examined: 0\nSET timestamp=1;\nSELECT 2;\n",
		"general.log": "2024-05-13T20:17:41.072665Z\t   14 Query\t" + long + "\n2024-05-13T20:17:41.072665Z\t   14 Query\tSELECT 2\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		got, _ := readAll(t, p, replay.FileOptions{MaxStatementBytes: 1000})
		if len(got) != 2 || !got[0].TooLong || len(got[0].SQL) > 1000 || got[1].TooLong || got[1].SQL != "SELECT 2" {
			t.Errorf("%s: %d statements: %+v", name, len(got), got)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	_, _, err := replay.OpenFile(filepath.Join(t.TempDir(), "nope.log"), replay.FileOptions{})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v (exit %d)", err, exitcode.Of(err))
	}
	_, _, err = replay.OpenFile(t.TempDir(), replay.FileOptions{})
	if exitcode.Of(err) != exitcode.Usage {
		t.Errorf("directory: %v", err)
	}
	p := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(p, []byte{0x1f, 0x8b, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0o644)
	_, _, err = replay.OpenFile(p, replay.FileOptions{})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("bad gzip: %v", err)
	}
	if _, err := replay.ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) accepted")
	}
}

// TestCompressionByContent: whether a source is compressed is read from its first bytes, as
// zcat -f does, not from its name: a log gzip'd under its own name is decompressed, a plain
// file named .gz is read as it is, and a format innowarm cannot read says how to feed it.
func TestCompressionByContent(t *testing.T) {
	dir := t.TempDir()
	gzipped := func(name string) []byte {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(raw)
		zw.Close()
		return z.Bytes()
	}
	for _, name := range []string{"mariadb-10.11-slow.log", "mysql-8.0-general.log", "statements.sql"} {
		plain, wantFormat := readAll(t, filepath.Join("testdata", name), replay.FileOptions{})
		same := func(what string, got []replay.Statement, format replay.Format) {
			t.Helper()
			if format != wantFormat || len(got) != len(plain) || got[len(got)-1].SQL != plain[len(plain)-1].SQL {
				t.Errorf("%s: %s, %d statements; want %s, %d", what, format, len(got), wantFormat, len(plain))
			}
		}
		// gzip'd in place: the name is the log's own.
		p := filepath.Join(dir, name)
		os.WriteFile(p, gzipped(name), 0o644)
		got, format := readAll(t, p, replay.FileOptions{})
		same(name+" gzip'd, no .gz", got, format)
		got, format = readAll(t, "-", replay.FileOptions{Stdin: bytes.NewReader(gzipped(name))})
		same(name+" gzip'd on stdin", got, format)
		// A plain file named .gz.
		raw, _ := os.ReadFile(filepath.Join("testdata", name))
		p = filepath.Join(dir, name+".gz")
		os.WriteFile(p, raw, 0o644)
		got, format = readAll(t, p, replay.FileOptions{})
		same(name+" plain, named .gz", got, format)
	}
	// Two gzip members, as cat a.gz b.gz makes them: both are read.
	two := append(gzipped("statements.sql"), gzipped("statements.sql")...)
	one, _ := readAll(t, "testdata/statements.sql", replay.FileOptions{})
	raw, _ := os.ReadFile("testdata/statements.sql")
	both, _ := readAll(t, "-", replay.FileOptions{Stdin: bytes.NewReader(append(raw, raw...))})
	got, _ := readAll(t, "-", replay.FileOptions{Stdin: bytes.NewReader(two)})
	if len(got) != len(both) || len(got) <= len(one) {
		t.Errorf("two gzip members: %d statements, want %d", len(got), len(both))
	}
	// bzip2 (made by bzip2 -c statements.sql).
	got, format := readAll(t, "testdata/statements.sql.bz2", replay.FileOptions{})
	if format != replay.FormatSQL || len(got) != len(one) || got[len(got)-1].SQL != one[len(one)-1].SQL {
		t.Errorf("bzip2: %s, %d statements; want sql, %d", format, len(got), len(one))
	}
	// A text that only starts like bzip2 is text.
	p := filepath.Join(dir, "bzh.sql")
	os.WriteFile(p, []byte("BZh9 is not a statement;\nSELECT 1;\n"), 0o644)
	got, _ = readAll(t, p, replay.FileOptions{})
	if len(got) != 2 {
		t.Errorf("text starting BZh: %d statements", len(got))
	}
	// zstd: refused with the way to feed it.
	p = filepath.Join(dir, "slow.log.zst")
	os.WriteFile(p, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x04, 0x21, 0, 0, 0}, 0o644)
	_, _, err := replay.OpenFile(p, replay.FileOptions{})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "zstd -dc") {
		t.Errorf("zstd: %v (exit %d)", err, exitcode.Of(err))
	}
}
