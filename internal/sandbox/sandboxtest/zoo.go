package sandboxtest

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/innowarm/innowarm/internal/sqltext"
)

// ZooSchema is the name of the schema Zoo creates: hostile on purpose (a backtick, quotes,
// a space and non-ASCII letters), so every statement must quote it right.
const ZooSchema = "zoo `db` \"q\" 'ü'"

// Zoo tables with what makes each of them hard to warm.
const (
	ZooCompositePK = "composite pk"                        // PRIMARY (a, b), UNIQUE (c), KEY (b, c)
	ZooNoPK        = "nopk"                                // hidden GEN_CLUST_INDEX, KEY (y)
	ZooUniqueNN    = "uniq_nn"                             // no PK: UNIQUE NOT NULL (u) is the clustered index
	ZooPrefixed    = "prefixed"                            // prefix indexes s(12), t(20)
	ZooParts       = "parts"                               // RANGE partitions x HASH subpartitions, a DATE-first key
	ZooHashParts   = "hparts"                              // HASH partitions
	ZooLOBs        = "lobs"                                // rows with off-page LONGTEXT/LONGBLOB
	ZooFulltext    = "ft"                                  // FULLTEXT index
	ZooSpatial     = "sp"                                  // SPATIAL index
	ZooWeird       = "we`ird \"name\" 'quoted' spaces ünï" // hostile table, column and index names
	ZooReserved    = "select"                              // reserved words as names
	ZooEmpty       = "empty_t"                             // no rows at all
	ZooMyISAM      = "my"                                  // not InnoDB
	ZooView        = "v"                                   // a view
	ZooIgnored     = "ignored_ix"                          // an IGNORED (MariaDB 10.6+) or INVISIBLE (MySQL 8) index
	ZooVersioned   = "versioned"                           // system-versioned, with history rows (MariaDB only)
)

// ZooInnoDBTables are the zoo's InnoDB tables on the test server: MySQL has no
// system-versioned tables.
func ZooInnoDBTables(t testing.TB) []string {
	t.Helper()
	tables := []string{ZooCompositePK, ZooNoPK, ZooUniqueNN, ZooPrefixed, ZooParts, ZooHashParts, ZooLOBs, ZooFulltext, ZooSpatial, ZooWeird, ZooReserved, ZooEmpty, ZooIgnored}
	if Flavor(t).SystemVersioning() {
		tables = append(tables, ZooVersioned)
	}
	return tables
}

var zooOnce sync.Once

// Zoo creates ZooSchema, once per test binary, with every kind of table and index innowarm
// must handle (about 20 MB in all) and analyzes it. Tests must only read it. It returns the
// schema name.
func Zoo(t testing.TB) string {
	t.Helper()
	zooOnce.Do(func() { createZoo(t) })
	return ZooSchema
}

func createZoo(t testing.TB) {
	t.Helper()
	db := sqltext.Ident(ZooSchema)
	tbl := func(name string) string { return db + "." + sqltext.Ident(name) }
	srv := Flavor(t)
	seq := func(n string) string {
		to, _ := strconv.ParseInt(n, 10, 64)
		return srv.Series(ZooSchema, 1, to) + " ORDER BY seq"
	}
	// MySQL 9.7 has no MD5(): 32 hex digits, as the tables were sized for.
	md5 := srv.Hex32
	hidden := "IGNORED"
	if !srv.IsMariaDB() {
		hidden = "INVISIBLE"
	}
	Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	Exec(t,
		"CREATE TABLE "+tbl(ZooCompositePK)+" (a INT NOT NULL, b VARCHAR(20) NOT NULL, c INT, payload CHAR(100), PRIMARY KEY (a, b), UNIQUE KEY uc (c), KEY kb_c (b, c))",
		"INSERT INTO "+tbl(ZooCompositePK)+" SELECT seq DIV 3, CONCAT('b', seq MOD 3, '-', seq), seq, REPEAT('p', 100) FROM "+seq("40000"),

		"CREATE TABLE "+tbl(ZooNoPK)+" (x INT, y VARCHAR(50), KEY ky (y))",
		"INSERT INTO "+tbl(ZooNoPK)+" SELECT seq, "+md5("seq")+" FROM "+seq("20000"),

		"CREATE TABLE "+tbl(ZooUniqueNN)+" (u INT NOT NULL, v INT, UNIQUE KEY uu (u), KEY kv (v))",
		"INSERT INTO "+tbl(ZooUniqueNN)+" SELECT seq, seq MOD 97 FROM "+seq("20000"),

		"CREATE TABLE "+tbl(ZooPrefixed)+" (id INT PRIMARY KEY, s VARCHAR(500), t TEXT, KEY ks (s(12)), KEY kt (t(20)))",
		"INSERT INTO "+tbl(ZooPrefixed)+" SELECT seq, REPEAT("+md5("seq")+", 4), REPEAT("+md5("seq + 1")+", 3) FROM "+seq("15000"),

		"CREATE TABLE "+tbl(ZooParts)+" (id INT NOT NULL, d DATE NOT NULL, v INT, PRIMARY KEY (id, d), KEY kv (v), KEY kd (d, v)) "+
			"PARTITION BY RANGE (YEAR(d)) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 "+
			"(PARTITION p2023 VALUES LESS THAN (2024), PARTITION pmax VALUES LESS THAN MAXVALUE)",
		"INSERT INTO "+tbl(ZooParts)+" SELECT seq, DATE_ADD('2023-06-01', INTERVAL seq MOD 400 DAY), seq MOD 1000 FROM "+seq("30000"),

		"CREATE TABLE "+tbl(ZooHashParts)+" (id INT PRIMARY KEY, w INT, KEY kw (w)) PARTITION BY HASH (id) PARTITIONS 3",
		"INSERT INTO "+tbl(ZooHashParts)+" SELECT seq, seq * 7 MOD 1000 FROM "+seq("15000"),

		"CREATE TABLE "+tbl(ZooLOBs)+" (id INT PRIMARY KEY, body LONGTEXT, bin LONGBLOB, small VARCHAR(1000)) ROW_FORMAT=DYNAMIC",
		"INSERT INTO "+tbl(ZooLOBs)+" SELECT seq, REPEAT("+md5("seq")+", 1500), REPEAT(UNHEX("+md5("seq")+"), 1000), "+md5("seq")+" FROM "+seq("120"),

		"CREATE TABLE "+tbl(ZooFulltext)+" (id INT PRIMARY KEY, doc TEXT, FULLTEXT KEY fdoc (doc))",
		"INSERT INTO "+tbl(ZooFulltext)+" SELECT seq, CONCAT('word', seq, ' other', seq MOD 10) FROM "+seq("2000"),

		"CREATE TABLE "+tbl(ZooSpatial)+" (id INT PRIMARY KEY, g GEOMETRY NOT NULL, SPATIAL KEY sg (g))",
		"INSERT INTO "+tbl(ZooSpatial)+" SELECT seq, POINT(seq, seq) FROM "+seq("2000"),

		"CREATE TABLE "+tbl(ZooWeird)+" ("+sqltext.Ident("sel`ect")+" INT PRIMARY KEY, "+sqltext.Ident("from")+" VARCHAR(30), KEY "+sqltext.Ident("in dex ü")+" ("+sqltext.Ident("from")+"))",
		"INSERT INTO "+tbl(ZooWeird)+" SELECT seq, CONCAT('f', seq) FROM "+seq("5000"),

		"CREATE TABLE "+tbl(ZooReserved)+" ("+sqltext.Ident("order")+" INT PRIMARY KEY, "+sqltext.Ident("group")+" INT, KEY "+sqltext.Ident("key")+" ("+sqltext.Ident("group")+"))",
		"INSERT INTO "+tbl(ZooReserved)+" SELECT seq, seq MOD 50 FROM "+seq("5000"),

		"CREATE TABLE "+tbl(ZooEmpty)+" (id INT PRIMARY KEY, z INT, KEY kz (z))",
		"CREATE TABLE "+tbl(ZooMyISAM)+" (id INT PRIMARY KEY) ENGINE=MyISAM",
		"INSERT INTO "+tbl(ZooMyISAM)+" SELECT seq FROM "+seq("100"),
		"CREATE VIEW "+tbl(ZooView)+" AS SELECT * FROM "+tbl(ZooReserved),

		"CREATE TABLE "+tbl(ZooIgnored)+" (id INT PRIMARY KEY, qq INT, KEY kq (qq) "+hidden+")",
		"INSERT INTO "+tbl(ZooIgnored)+" SELECT seq, seq FROM "+seq("3000"),
	)
	if srv.SystemVersioning() {
		Exec(t,
			"CREATE TABLE "+tbl(ZooVersioned)+" (id INT PRIMARY KEY, v INT, KEY kv (v)) WITH SYSTEM VERSIONING",
			"INSERT INTO "+tbl(ZooVersioned)+" SELECT seq, seq FROM "+seq("5000"),
			"UPDATE "+tbl(ZooVersioned)+" SET v = v + 1 WHERE id MOD 2 = 0",
			// The update freed index pages (purge merges them); rebuilding leaves files with no
			// freed pages, so that counting the pages of a file counts live pages only.
			"SET STATEMENT system_versioning_alter_history = KEEP FOR ALTER TABLE "+tbl(ZooVersioned)+" FORCE",
		)
	}
	var tables []string
	for _, name := range ZooInnoDBTables(t) {
		tables = append(tables, tbl(name))
	}
	// Every page written to the files, the tablespace headers and descriptors too: until a
	// flush a new file may not say what it holds (MariaDB writes its header page at the
	// first flush), and sizes read from the files (catalog) would change with the page
	// cleaner's timing.
	Exec(t, "ANALYZE TABLE "+strings.Join(tables, ", "), "FLUSH TABLES "+strings.Join(tables, ", ")+" FOR EXPORT", "UNLOCK TABLES")
}
