package pagekey_test

import (
	"context"
	"fmt"
	"github.com/innowarm/innowarm/internal/connection"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/keys"
	"github.com/innowarm/innowarm/internal/pagekey"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandboxtest.Options{PoolSize: 128 << 20}) }

// execSession runs statements on one connection, so that session settings (sql_mode,
// time_zone) hold for the statements after them.
func execSession(t *testing.T, c *connection.Conn, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	sess, err := c.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, s := range stmts {
		if _, err := sess.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// typeTable is a table whose indexes key on the types under test, and how to fill it.
type typeTable struct {
	name   string
	create string // columns and keys, without CREATE TABLE name ( ... ) ROW_FORMAT
	fill   func(srv flavor.Server, db, tbl string) []string
	// minLeaves is the fewest leaf pages its clustered index must have, so that node
	// pointers are read (a tree of at least two levels).
	minLeaves int
}

// series is a FROM clause with rows seq = 1 ... n, signed (MariaDB's sequence engine gives
// unsigned numbers, which the expressions below would overflow).
func series(srv flavor.Server, db string, n int64) string {
	return "(SELECT CAST(seq AS SIGNED) AS seq FROM " + srv.Series(db, 1, n) + ") AS sq"
}

var typeTables = []typeTable{
	{
		name: "ints",
		create: `id BIGINT NOT NULL PRIMARY KEY, t TINYINT, tu TINYINT UNSIGNED, s SMALLINT, su SMALLINT UNSIGNED,
			m MEDIUMINT, mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bu BIGINT UNSIGNED, pad CHAR(200) NOT NULL DEFAULT '',
			KEY (t), KEY (tu), KEY (s), KEY (su), KEY (m), KEY (mu), KEY (i), KEY (iu), KEY (bu)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{
				"INSERT INTO " + tbl + " (id, t, tu, s, su, m, mu, i, iu, bu) SELECT (seq * 7919) % 100003 - 50001, IF(seq % 17 = 0, NULL, seq % 256 - 128), seq % 256," +
					" (seq * 31) % 65536 - 32768, (seq * 31) % 65536, (seq * 977) % 16777216 - 8388608, (seq * 977) % 16777216," +
					" (seq * 2654435761) % 4294967296 - 2147483648, (seq * 2654435761) % 4294967296, CAST(seq AS UNSIGNED) * 3000000000000000" +
					" FROM " + series(srv, db, 6000),
				"INSERT INTO " + tbl + " (id, t, tu, s, su, m, mu, i, iu, bu) VALUES (-9223372036854775808, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, 0)," +
					" (9223372036854775807, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 18446744073709551615), (0, 0, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL)",
			}
		},
		minLeaves: 2,
	},
	{
		name: "decimals",
		create: `d1 DECIMAL(65,30) NOT NULL PRIMARY KEY, d2 DECIMAL(10,2), d3 DECIMAL(5,0), d4 DECIMAL(20,9), d5 DECIMAL(38,0), d6 DECIMAL(9,9),
			pad CHAR(200) NOT NULL DEFAULT '', KEY (d2), KEY (d3), KEY (d4), KEY (d5), KEY (d6)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{
				"INSERT INTO " + tbl + " (d1, d2, d3, d4, d5, d6) SELECT (seq - 3000) * 123456789012345678901234.123456789012345678901234567891 / 7," +
					" IF(seq % 13 = 0, NULL, (seq - 3000) * 1234.57), (seq * 37) % 199999 - 99999, (seq - 3000) * 31415926.535897932," +
					" (seq - 3000) * 99999999999999999999999999999, ((seq * 7919) % 1999999999 - 999999999) * 0.000000001 FROM " + series(srv, db, 6000),
				"INSERT INTO " + tbl + " (d1, d2, d3, d4, d5, d6) VALUES (99999999999999999999999999999999999.999999999999999999999999999999, 99999999.99, 99999, 99999999999.999999999, 99999999999999999999999999999999999999, 0.999999999)," +
					" (-99999999999999999999999999999999999.999999999999999999999999999999, -99999999.99, -99999, -99999999999.999999999, -99999999999999999999999999999999999999, -0.999999999), (0.000000000000000000000000000001, 0, 0, 0, 0, 0)",
			}
		},
		minLeaves: 2,
	},
	{
		name: "temporal",
		create: `id INT NOT NULL PRIMARY KEY, d DATE, dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6), ts0 TIMESTAMP NULL, ts2 TIMESTAMP(2) NULL,
			ts6 TIMESTAMP(6) NULL, t0 TIME, t1 TIME(1), t4 TIME(4), t6 TIME(6), y YEAR, pad CHAR(200) NOT NULL DEFAULT '',
			KEY (d), KEY (dt0), KEY (dt3), KEY (dt6), KEY (ts0), KEY (ts2), KEY (ts6), KEY (t0), KEY (t1), KEY (t4), KEY (t6), KEY (y)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{
				"SET time_zone = '+00:00'",
				"SET sql_mode = ''",
				"INSERT INTO " + tbl + " (id, d, dt0, dt3, dt6, ts0, ts2, ts6, t0, t1, t4, t6, y) SELECT seq," +
					" IF(seq % 11 = 0, NULL, DATE '1000-01-01' + INTERVAL seq * 1213 DAY)," +
					" TIMESTAMP '1000-01-01 00:00:00' + INTERVAL seq * 1213 DAY + INTERVAL seq * 3719 SECOND," +
					" TIMESTAMP '2024-02-29 23:59:59.999' - INTERVAL seq * 86413 SECOND - INTERVAL seq * 7 * 1000 MICROSECOND," +
					" TIMESTAMP '9999-12-31 23:59:59.999999' - INTERVAL seq * 993331 SECOND - INTERVAL seq MICROSECOND," +
					" FROM_UNIXTIME(1 + seq * 654321), FROM_UNIXTIME(100000 + seq * 654321 + (seq % 100) / 100), FROM_UNIXTIME(2147483647 - seq * 654321 - seq / 1000000)," +
					" SEC_TO_TIME((seq - 3000) * 997), SEC_TO_TIME((seq - 3000) * 997 + (seq % 10) / 10), SEC_TO_TIME((seq - 3000) * 997.1234)," +
					" SEC_TO_TIME((seq - 3000) * 1000.123457), IF(seq % 7 = 0, NULL, 1901 + seq % 255) FROM " + series(srv, db, 6000),
				"INSERT INTO " + tbl + " (id, d, dt0, dt3, dt6, ts0, ts2, ts6, t0, t1, t4, t6, y) VALUES" +
					" (-1, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '-838:59:59', '-838:59:59.9', '-00:00:00.0001', '-00:00:00.000001', 0)," +
					" (-2, '9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07', '2038-01-19 03:14:07.99', '2038-01-19 03:14:07.999999', '838:59:59', '838:59:59.9', '838:59:59.9999', '838:59:59.999999', 2155)," +
					" (-3, '2024-02-29', '2024-02-29 12:00:00', '2024-02-29 12:00:00.5', '2024-02-29 12:00:00.000001', '1970-01-01 00:00:01', '1970-01-01 00:00:01.01', '1970-01-01 00:00:01.000001', '00:00:00', '-00:00:00.5', '-00:00:01.5', '-01:00:00.999999', 1901)",
			}
		},
		minLeaves: 2,
	},
	{
		name: "strings",
		create: `id INT NOT NULL PRIMARY KEY, v VARCHAR(40) CHARACTER SET utf8mb4, vb VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
			c CHAR(10) CHARACTER SET latin1, cu CHAR(10) CHARACTER SET utf8mb4, c2 CHAR(8) CHARACTER SET ucs2, v32 VARCHAR(10) CHARACTER SET utf32,
			b BINARY(6), vbn VARBINARY(300), tx TEXT CHARACTER SET utf8mb4, bl BLOB, vlong VARCHAR(300) CHARACTER SET latin1, pad CHAR(100) NOT NULL DEFAULT '',
			KEY (v), KEY (vb), KEY (c), KEY (cu), KEY (c2), KEY (v32), KEY (b), KEY (vbn), KEY ktx (tx(10)), KEY kbl (bl(8)), KEY (vlong), KEY kpv (v(5))`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{
				"INSERT INTO " + tbl + " (id, v, vb, c, cu, c2, v32, b, vbn, tx, bl, vlong) SELECT seq," +
					" IF(seq % 9 = 0, NULL, CONCAT(ELT(1 + seq % 6, 'Müller', '日本語', '😀x', 'a', 'Straße ', 'zz'), seq))," +
					" CONCAT(ELT(1 + seq % 4, 'A', 'a', 'é', 'E'), seq % 500, IF(seq % 3 = 0, '  ', ''))," +
					" CONCAT(ELT(1 + seq % 3, 'é', 'e', 'ß'), seq % 1000, IF(seq % 5 = 0, '   ', ''))," +
					" CONCAT(ELT(1 + seq % 3, 'ü', '中', 'x'), seq % 777)," +
					" CONCAT(ELT(1 + seq % 2, 'Ω', 'w'), seq % 99)," +
					" CONCAT('𝄞', seq % 50)," +
					" IF(seq % 8 = 0, NULL, UNHEX(LPAD(HEX(seq * 2654435761), 8, '0')))," +
					" UNHEX(REPEAT(LPAD(HEX(seq % 251), 2, '0'), 1 + seq % 140))," +
					" CONCAT(REPEAT('t', seq % 20), seq), UNHEX(CONCAT('00', HEX(seq))), CONCAT(REPEAT('é', 100 + seq % 150), seq)" +
					" FROM " + series(srv, db, 6000),
				"INSERT INTO " + tbl + " (id, v, vb, c, cu, c2, v32, b, vbn, tx, bl, vlong) VALUES (-1, '', '', '', '', '', '', '', '', '', '', '')," +
					" (-2, 'a\\tb', 'a\\t', 'a\\t', ' ', ' x', ' ', UNHEX('000000000000'), UNHEX('00'), '\\0', UNHEX('FFFF'), '%')",
			}
		},
		minLeaves: 2,
	},
	{
		name: "misc",
		create: `id INT NOT NULL PRIMARY KEY, e ENUM('x','y','z'), s SET('a','b','c','d','e','f','g','h','i'), bt BIT(10), f FLOAT, db DOUBLE,
			pad CHAR(200) NOT NULL DEFAULT '', KEY (e), KEY (s), KEY (bt), KEY (f), KEY (db)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{
				"INSERT INTO " + tbl + " (id, e, s, bt, f, db) SELECT seq, IF(seq % 10 = 0, NULL, 1 + seq % 3), seq % 512, seq % 1024," +
					" (seq - 3000) / 7.3, (seq - 3000) * 1.000001e100 / 3 FROM " + series(srv, db, 6000),
				"INSERT INTO " + tbl + " (id, e, s, bt, f, db) VALUES (-1, 'z', 'a,i', b'1111111111', -3.4e38, -1.7976931348623157e308), (-2, 'x', '', 0, 0, 0)",
			}
		},
		minLeaves: 2,
	},
	{
		name: "composite",
		create: `a INT NOT NULL, b VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL, c DATETIME(2) NOT NULL, x INT, y VARCHAR(10), pad CHAR(200) NOT NULL DEFAULT '',
			PRIMARY KEY (a, b, c), KEY kxy (x, y), UNIQUE KEY uy (y, x), KEY kc (c)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{
				"INSERT INTO " + tbl + " (a, b, c, x, y) SELECT seq % 50 - 25, CONCAT('ü', seq % 7), TIMESTAMP '2020-01-01 00:00:00' + INTERVAL seq * 1013 SECOND + INTERVAL seq * 10000 MICROSECOND," +
					" IF(seq % 5 = 0, NULL, seq % 300 - 150), IF(seq % 7 = 0, NULL, CONCAT('y', seq)) FROM " + series(srv, db, 6000),
			}
		},
		minLeaves: 2,
	},
	{
		// Descending key parts (MariaDB 10.8+, MySQL 8.0+): stored as ascending ones,
		// ordered the other way, NULL last; the secondary indexes' appended primary key
		// keeps its own order (a DESC, b ASC).
		name: "descending",
		create: `a INT NOT NULL, b VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL, x INT, d DATETIME(3), s VARCHAR(12) CHARACTER SET utf8mb4,
			pad CHAR(200) NOT NULL DEFAULT '', PRIMARY KEY (a DESC, b), KEY kx (x DESC), KEY kds (d, s DESC), KEY ks (s DESC)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{
				"INSERT INTO " + tbl + " (a, b, x, d, s) SELECT (seq * 7919) % 4001 - 2000, CONCAT(ELT(1 + seq % 3, 'ü', '日本', 'z'), seq % 5)," +
					" IF(seq % 6 = 0, NULL, (seq * 104729) % 20011 - 10005), IF(seq % 9 = 0, NULL, TIMESTAMP '2024-02-29 12:00:00' + INTERVAL (seq % 400) * 3599 SECOND + INTERVAL seq % 1000 * 1000 MICROSECOND)," +
					" IF(seq % 4 = 0, NULL, CONCAT(ELT(1 + seq % 4, 'Straße', '名前', 'a', 'A'), seq % 97)) FROM " + series(srv, db, 6000),
			}
		},
		minLeaves: 2,
	},
	{
		name:   "nopk",
		create: `x INT, y VARCHAR(30), pad CHAR(200) NOT NULL DEFAULT '', KEY ky (y)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{"INSERT INTO " + tbl + " (x, y) SELECT seq, IF(seq % 6 = 0, NULL, CONCAT('v', (seq * 7919) % 6007)) FROM " + series(srv, db, 6000)}
		},
		minLeaves: 2,
	},
	{
		name:   "uniq_nn",
		create: `u VARCHAR(20) NOT NULL, v INT, pad CHAR(200) NOT NULL DEFAULT '', UNIQUE KEY ku (u), KEY kv (v)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{"INSERT INTO " + tbl + " (u, v) SELECT CONCAT('u', (seq * 7919) % 100003), IF(seq % 4 = 0, NULL, seq % 100) FROM " + series(srv, db, 6000)}
		},
		minLeaves: 2,
	},
	{
		name:   "prefix_pk",
		create: `s VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL, n INT NOT NULL, pad CHAR(200) NOT NULL DEFAULT '', PRIMARY KEY (s(10), n), KEY kn (n)`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{"INSERT INTO " + tbl + " (s, n) SELECT CONCAT(ELT(1 + seq % 3, 'Ärger', 'abc', '名前'), seq % 40, '-tail-', seq), seq FROM " + series(srv, db, 6000)}
		},
		minLeaves: 2,
	},
	{
		name:   "wide",
		create: `k VARCHAR(700) CHARACTER SET latin1 NOT NULL PRIMARY KEY, pad CHAR(100) NOT NULL DEFAULT ''`,
		fill: func(srv flavor.Server, db, tbl string) []string {
			return []string{"INSERT INTO " + tbl + " (k) SELECT CONCAT(LPAD((seq * 7919) % 20011, 6, '0'), REPEAT('k', 600 + seq % 90)) FROM " + series(srv, db, 5000)}
		},
		minLeaves: 100,
	},
}

// TestKeysEqualTheServer: for every type under test, every row format, every index, each
// record decoded from the file equals the row the server returns in the same place of the
// index's order, and the non-leaf pages give each leaf page the range from its first key
// to the next leaf's.
func TestKeysEqualTheServer(t *testing.T) {
	srv, c := sandboxtest.Flavor(t), sandboxtest.Conn(t)
	for _, format := range []string{"DYNAMIC", "COMPACT", "REDUNDANT", "COMPRESSED KEY_BLOCK_SIZE=8"} {
		t.Run(format, func(t *testing.T) {
			db := sandboxtest.Schema(t)
			for _, tt := range typeTables {
				t.Run(tt.name, func(t *testing.T) {
					tbl := sqltext.Table(db, tt.name)
					execSession(t, c, "CREATE TABLE "+tbl+" ("+tt.create+") ROW_FORMAT="+format)
					execSession(t, c, tt.fill(srv, db, tbl)...)
					reports := checkTable(t, c, db, tt.name)
					var summary []string
					for name, r := range reports {
						if r.layout.Clustered && r.leaves < tt.minLeaves {
							t.Errorf("clustered index %s has %d leaves, the test wants %d", name, r.leaves, tt.minLeaves)
						}
						if r.leaves > 1 && r.tree.Height < 2 {
							t.Errorf("index %s: %d leaves under a tree of height %d", name, r.leaves, r.tree.Height)
						}
						summary = append(summary, fmt.Sprintf("%s %d/%d/h%d", name, r.records, r.leaves, r.tree.Height))
					}
					if len(reports) == 0 {
						t.Fatal("no index decoded")
					}
					t.Logf("%s %s: %s", srv, format, strings.Join(summary, ", "))
				})
			}
		})
	}
}

// compressedTable has the key types a compressed page must give back: a composite
// primary key (INT, multi-byte VARCHAR, DATETIME(6)), DECIMAL and a nullable composite
// secondary key, and a TEXT column some rows store off the page (BLOB pointers, which
// the stream leaves out of the clustered index's leaf records).
const compressedTable = `a INT NOT NULL, b VARCHAR(20) CHARACTER SET utf8mb4 NOT NULL, c DATETIME(6) NOT NULL, d DECIMAL(20,6),
	s VARCHAR(30) CHARACTER SET utf8mb4, x INT, doc TEXT CHARACTER SET latin1, pad VARCHAR(60) CHARACTER SET latin1 NOT NULL DEFAULT '',
	PRIMARY KEY (a, b, c), KEY kd (d), KEY ksx (s, x), KEY kc (c)`

// compressedRows inserts rows from to to (their c is unique by seq).
func compressedRows(srv flavor.Server, db, tbl string, from, to int64) string {
	return "INSERT INTO " + tbl + " (a, b, c, d, s, x, doc, pad) SELECT seq % 50 - 25, CONCAT(ELT(1 + seq % 4, 'ü', '日本', '😀', 'a'), seq % 7)," +
		" TIMESTAMP '2020-01-01 00:00:00' + INTERVAL seq * 1013 SECOND + INTERVAL seq * 7 MICROSECOND," +
		" IF(seq % 9 = 0, NULL, (seq - 3000) * 1.234567), IF(seq % 5 = 0, NULL, CONCAT(ELT(1 + seq % 3, 'Straße', '名前', 'x'), seq % 300))," +
		" IF(seq % 7 = 0, NULL, seq % 100), IF(seq % 40 = 0, REPEAT(CHAR(65 + seq % 26), 4000), 'short'), REPEAT('p', seq % 40)" +
		" FROM (SELECT CAST(seq AS SIGNED) AS seq FROM " + srv.Series(db, from, to) + ") AS sq"
}

// TestCompressed: ROW_FORMAT=COMPRESSED tables of every KEY_BLOCK_SIZE, loaded, then
// changed (updates in place and of keys, inserts into full pages, deletes that purge
// clears), so that their pages carry a modification log: every record of every index,
// leaf and non-leaf, decodes to the server's row in the index's order, and the trees
// give each leaf its range.
func TestCompressed(t *testing.T) {
	srv, c := sandboxtest.Flavor(t), sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	for _, kbs := range []int{1, 2, 4, 8, 16} {
		t.Run(fmt.Sprintf("KEY_BLOCK_SIZE=%d", kbs), func(t *testing.T) {
			name := fmt.Sprintf("z%d", kbs)
			tbl := sqltext.Table(db, name)
			execSession(t, c, fmt.Sprintf("CREATE TABLE %s (%s) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=%d", tbl, compressedTable, kbs))
			execSession(t, c, compressedRows(srv, db, tbl, 1, 6000))
			// Pages compressed by the load change: their changes go to the log until it
			// fills and the page is compressed again.
			execSession(t, c,
				"UPDATE "+tbl+" SET pad = CONCAT(pad, 'u') WHERE x % 3 = 0",
				"UPDATE "+tbl+" SET s = CONCAT('n', s) WHERE a % 4 = 0",
				"UPDATE "+tbl+" SET d = d + 1 WHERE x % 10 = 1",
				compressedRows(srv, db, tbl, 6001, 6600),
				"DELETE FROM "+tbl+" WHERE x = 13 OR x = 42")
			reports := checkTable(t, c, db, name)
			if len(reports) != 4 {
				t.Fatalf("%d indexes decoded, want 4", len(reports))
			}
			unlock := flush(t, c, db, name)
			o := open(t, c, db, name)
			if zipped, size := o.src.Compressed(); !zipped || size != kbs<<10 {
				t.Fatalf("the file reads as compressed %v with %d-byte pages, want %d", zipped, size, kbs<<10)
			}
			var summary []string
			for ix, r := range reports {
				if r.tree.Height < 2 {
					t.Errorf("index %s: a tree of height %d, the test wants node pointers", ix, r.tree.Height)
				}
				logged, pages := 0, 0
				for n := range r.tree.Spans {
					k, err := pagekey.ZipLogEntries(o.src, n)
					if err != nil {
						t.Fatalf("index %s page %d: %v", ix, n, err)
					}
					logged += k
					if k > 0 {
						pages++
					}
				}
				if ix == "PRIMARY" || ix == "ksx" {
					if logged == 0 {
						t.Errorf("index %s: no page has a modification log, the test wants some", ix)
					}
				}
				summary = append(summary, fmt.Sprintf("%s %d recs/%d leaves/h%d, log %d records on %d pages", ix, r.records, r.leaves, r.tree.Height, logged, pages))
			}
			t.Logf("%s KEY_BLOCK_SIZE=%d: %s", srv, kbs, strings.Join(summary, "; "))
			unlock()
			// Neither server changes a compressed table's columns instantly (their record
			// headers have no room for it); should one, its records must still decode.
			if _, err := c.DB.Exec("ALTER TABLE " + tbl + " ADD COLUMN late INT, ALGORITHM=INSTANT"); err != nil {
				t.Logf("instant ADD COLUMN: %v", err)
				return
			}
			execSession(t, c, compressedRows(srv, db, tbl, 6601, 7000))
			if r := checkTable(t, c, db, name)["PRIMARY"]; r.records != 6887 {
				t.Errorf("after an instant ADD COLUMN: %d records decoded, want 6887", r.records)
			}
		})
	}
}

// TestInstantAlter: after instant ADD COLUMN, DROP COLUMN and ADD COLUMN ... AFTER, the
// clustered index holds records of several layouts (MariaDB: REC_STATUS_INSTANT records
// and a metadata record; MySQL: row versions), whose null bitmaps differ in size. With a
// VARCHAR primary key the key's length sits after the bitmap: each layout must be read
// right, and the node pointers, which keep the first layout's bitmap, too.
func TestInstantAlter(t *testing.T) {
	srv, c := sandboxtest.Flavor(t), sandboxtest.Conn(t)
	for _, format := range []string{"DYNAMIC", "REDUNDANT"} {
		t.Run(format, func(t *testing.T) {
			db := sandboxtest.Schema(t)
			tbl := sqltext.Table(db, "inst")
			fill := func(from, to int64, cols string, vals string) {
				execSession(t, c, "INSERT INTO "+tbl+" (id, "+cols+") SELECT CONCAT('k', LPAD((seq * 7919) % 100003, 6, '0'), '-ü'), "+vals+
					" FROM (SELECT CAST(seq AS SIGNED) AS seq FROM "+srv.Series(db, from, to)+") AS sq")
			}
			// Eight nullable columns fill the null bitmap's first byte: adding one makes it two,
			// dropping one (which stays stored) does not make it one again.
			execSession(t, c, "CREATE TABLE "+tbl+" (id VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL PRIMARY KEY, n1 INT, n2 INT, n3 INT, n4 INT, n5 INT, n6 INT, n7 INT,"+
				" n8 INT, pad CHAR(100) NOT NULL DEFAULT '', KEY kn1 (n1)) ROW_FORMAT="+format)
			fill(1, 3000, "n1, n2, n7", "IF(seq % 3 = 0, NULL, seq), seq, seq")
			checkTable(t, c, db, "inst")

			steps := []struct{ alter, cols, vals string }{
				{"ADD COLUMN a1 INT", "n1, a1", "IF(seq % 4 = 0, NULL, seq), seq"},
				{"DROP COLUMN n3", "n1, a1", "seq, IF(seq % 2 = 0, NULL, seq)"},
				{"ADD COLUMN b1 INT AFTER id", "b1, n1", "seq, seq"},
			}
			for i, st := range steps {
				if _, err := c.DB.Exec("ALTER TABLE " + tbl + " " + st.alter + ", ALGORITHM=INSTANT"); err != nil {
					if format == "REDUNDANT" && i > 0 {
						t.Logf("%s on REDUNDANT: %v", st.alter, err)
						return
					}
					t.Fatalf("%s: %v", st.alter, err)
				}
				fill(int64(3000+i*2000+1), int64(3000+(i+1)*2000), st.cols, st.vals)
				execSession(t, c, "UPDATE "+tbl+" SET n1 = n1 + 1 WHERE n2 % 10 = "+fmt.Sprint(i))
				reports := checkTable(t, c, db, "inst")
				r := reports["PRIMARY"]
				if r.tree == nil || r.tree.Height < 2 {
					t.Fatalf("after %s the primary key has no tree of two levels: %+v", st.alter, r)
				}
				t.Logf("%s %s after %s: PRIMARY %d records on %d leaves, nulls %+v", srv, format, st.alter, r.records, r.leaves, r.layout.Nulls)
			}
		})
	}
}

// TestOtherPageSizes: the same decoding on servers created with 4 KiB and 64 KiB pages
// (record offsets, extent sizes and the SDI's place in page 0 depend on the page size).
func TestOtherPageSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two more servers")
	}
	for _, size := range []string{"4k", "64k"} {
		t.Run(size, func(t *testing.T) {
			sb := sandboxtest.SecondServer(t, 128<<20, "--innodb-page-size="+size)
			c, err := sb.Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			srv := c.Server
			if want := map[string]int{"4k": 4096, "64k": 65536}[size]; srv.PageSize != want {
				t.Fatalf("the server runs with %d-byte pages, want %d", srv.PageSize, want)
			}
			db := "pages_" + size
			execSession(t, c, "CREATE DATABASE "+sqltext.Ident(db))
			for _, format := range []string{"DYNAMIC", "REDUNDANT"} {
				for _, tt := range typeTables {
					if tt.name == "wide" || tt.name == "strings" && size == "4k" && format == "REDUNDANT" {
						continue // keys or rows longer than such a page allows
					}
					name := tt.name + "_" + strings.ToLower(format)
					tbl := sqltext.Table(db, name)
					execSession(t, c, "CREATE TABLE "+tbl+" ("+tt.create+") ROW_FORMAT="+format)
					execSession(t, c, tt.fill(srv, db, tbl)...)
					reports := checkTable(t, c, db, name)
					if r := reports[o0(reports)]; len(reports) == 0 || r.records == 0 {
						t.Fatalf("%s: nothing decoded", name)
					}
				}
			}
			// Instant ADD/DROP, whose history MySQL keeps in the SDI (found in page 0 at an
			// offset that depends on the page size).
			tbl := sqltext.Table(db, "inst")
			execSession(t, c, "CREATE TABLE "+tbl+" (id VARCHAR(30) NOT NULL PRIMARY KEY, n1 INT, n2 INT, n3 INT, n4 INT, n5 INT, n6 INT, n7 INT)",
				"INSERT INTO "+tbl+" (id, n1) SELECT CONCAT('k', seq), seq FROM "+series(srv, db, 2000),
				"ALTER TABLE "+tbl+" ADD COLUMN a1 INT, ADD COLUMN a2 INT, ALGORITHM=INSTANT",
				"ALTER TABLE "+tbl+" DROP COLUMN n2, ALGORITHM=INSTANT",
				"INSERT INTO "+tbl+" (id, a1) SELECT CONCAT('j', seq), seq FROM "+series(srv, db, 2000))
			if r := checkTable(t, c, db, "inst")["PRIMARY"]; r.records != 4000 {
				t.Errorf("instant table: %d records decoded", r.records)
			}
		})
	}
}

// o0 is any key of m.
func o0(m map[string]indexReport) string {
	for k := range m {
		return k
	}
	return ""
}

// TestSystemVersionedKeys (MariaDB): a system-versioned table's primary and unique keys end
// with its row_end, which InnoDB stores in them and STATISTICS does not show. Every index
// decodes to the server's rows in its order, with row_end read as a hidden field (no other
// copy shares it), and once updates have left history rows beside the current ones every
// record of them still decodes. Read without row_end, the node pointers' child page numbers
// were taken from its bytes ("node pointer to page 2147483647, past the file's end") and the
// table had no keys.
func TestSystemVersionedKeys(t *testing.T) {
	srv, c := sandboxtest.Flavor(t), sandboxtest.Conn(t)
	if !srv.IsMariaDB() {
		t.Skip("system versioning is MariaDB's")
	}
	db := sandboxtest.Schema(t)
	for _, tc := range []struct{ name, rowEnd, period string }{
		{"vts", "", ""},
		{"vtrx", ", s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START INVISIBLE, e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END INVISIBLE", ", PERIOD FOR SYSTEM_TIME (s, e)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := sqltext.Table(db, tc.name)
			execSession(t, c,
				"CREATE TABLE "+tbl+" (id INT NOT NULL, u INT NOT NULL, v INT, pad CHAR(100) NOT NULL DEFAULT ''"+tc.rowEnd+
					", PRIMARY KEY (id), UNIQUE KEY uu (u), KEY kv (v)"+tc.period+") WITH SYSTEM VERSIONING",
				"INSERT INTO "+tbl+" (id, u, v) SELECT seq * 7919 % 20011, seq, IF(seq % 9 = 0, NULL, seq % 300) FROM "+srv.Series(db, 1, 8000)+" ORDER BY seq")
			reports := checkTable(t, c, db, tc.name)
			want := map[string]string{
				"PRIMARY": "id:int4,row_end:rowid", "uu": "u:int4,row_end:rowid,id:int4", "kv": "v:int4,id:int4,row_end:rowid"}
			if tc.rowEnd != "" { // row_end named by the table, and shown by STATISTICS
				want = map[string]string{"PRIMARY": "id:int4,e:uint8", "uu": "u:int4,e:uint8,id:int4", "kv": "v:int4,id:int4,e:uint8"}
			}
			for ix, cols := range want {
				r, ok := reports[ix]
				if !ok {
					t.Errorf("index %s not decoded", ix)
					continue
				}
				if got := string(keys.AppendColumns(nil, r.layout.Columns)); got != cols {
					t.Errorf("index %s: key columns %s, want %s", ix, got, cols)
				}
				if r.layout.Clustered && r.leaves < 10 {
					t.Errorf("PRIMARY has %d leaves, want 10 or more", r.leaves)
				}
			}
			// History rows: each update keeps the old row, with its row_end, beside the new.
			execSession(t, c, "UPDATE "+tbl+" SET v = v + 1, pad = 'x' WHERE id % 3 = 0", "DELETE FROM "+tbl+" WHERE id % 11 = 0")
			var all int
			if err := c.DB.QueryRow("SELECT COUNT(*) FROM " + tbl + " FOR SYSTEM_TIME ALL").Scan(&all); err != nil {
				t.Fatal(err)
			}
			defer flush(t, c, db, tc.name)()
			o := open(t, c, db, tc.name)
			for name, err := range o.errs {
				t.Errorf("index %s: %v", name, err)
			}
			for _, ix := range []string{"PRIMARY", "uu", "kv"} {
				l := o.layouts[ix]
				if l == nil {
					t.Fatalf("index %s: no layout", ix)
				}
				tree, err := pagekey.ReadTree(o.src, l, o.ids[ix], o.roots[ix])
				if err != nil {
					t.Fatalf("index %s with history: read the tree: %v", ix, err)
				}
				n := 0
				for _, leaf := range tree.Leaves {
					p, err := o.src.Page(leaf)
					if err != nil {
						t.Fatal(err)
					}
					recs, err := l.Records(p)
					if err != nil {
						t.Fatalf("index %s with history, leaf %d: %v", ix, leaf, err)
					}
					for _, r := range recs {
						if !r.Deleted {
							n++
						}
					}
				}
				if n != all {
					t.Errorf("index %s with history: %d records decoded, the table has %d rows current and past", ix, n, all)
				}
			}
		})
	}
}

// TestFunctionalKeyPartsSayWhy (MySQL): an index on an expression or a multi-valued index
// keys a hidden virtual column the dictionary names !hidden!...: its keys are not read,
// and the reason says it is a functional key part (the dictionary's fields, read since
// system-versioned tables needed them, had made it "no column of the table").
func TestFunctionalKeyPartsSayWhy(t *testing.T) {
	srv, c := sandboxtest.Flavor(t), sandboxtest.Conn(t)
	if srv.IsMariaDB() {
		t.Skip("functional key parts are MySQL's")
	}
	db := sandboxtest.Schema(t)
	execSession(t, c,
		"CREATE TABLE "+sqltext.Table(db, "fn")+" (id INT PRIMARY KEY, s VARCHAR(40), j JSON, KEY kf ((UPPER(s))), KEY kmv ((CAST(j->'$.z' AS UNSIGNED ARRAY))), KEY ks (s))",
		"INSERT INTO "+sqltext.Table(db, "fn")+" VALUES (1, 'a', '{\"z\": [1, 2]}'), (2, 'b', '{\"z\": [3]}')")
	defer flush(t, c, db, "fn")()
	o := open(t, c, db, "fn")
	for _, ix := range []string{"kf", "kmv"} {
		if err := o.errs[ix]; err == nil || !strings.Contains(err.Error(), "a functional key part") {
			t.Errorf("index %s: %v, want a functional key part", ix, err)
		}
	}
	if o.layouts["ks"] == nil || o.layouts["PRIMARY"] == nil {
		t.Errorf("the table's other indexes have no layout: %v", o.errs)
	}
}
