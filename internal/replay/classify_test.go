package replay_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/replay"
)

var acceptCases = []string{
	"SELECT 1",
	"select * from t where id = 5;",
	"  \n SELECT 1 ;;",
	"SELECT * FROM t WHERE a = 'FOR UPDATE' AND b = 'x INTO @y'",
	"SELECT `into`, `for`, `update` FROM `lock` WHERE `procedure` = 1",
	"SELECT 'x;y', \"a;b\" FROM t",
	"SELECT 'it''s', 'a\\'b', \"q\\\"q\" FROM t",
	"(SELECT 1) UNION (SELECT 2)",
	"((SELECT a FROM t)) ORDER BY 1",
	"SELECT a FROM t1 UNION ALL SELECT b FROM t2 UNION DISTINCT SELECT c FROM t3",
	"WITH c AS (SELECT 1 AS x) SELECT * FROM c",
	"WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c",
	"WITH a AS (SELECT 1), `b` (x) AS (SELECT 2) (SELECT * FROM a, b)",
	"SELECT COUNT(*), SUM(x), AVG(x), GROUP_CONCAT(y ORDER BY y SEPARATOR ',') FROM t GROUP BY z HAVING COUNT(*) > 1",
	"SELECT CAST(a AS CHAR(10)), CONVERT(b, DECIMAL(10,2)), CAST(c AS UNSIGNED), CAST(d AS DATETIME(6)) FROM t",
	"SELECT * FROM (SELECT 1, 2) AS dt (a, b)",
	"SELECT * FROM (SELECT 1, 2) dt (a, b)",
	"SELECT * FROM t1 JOIN t2 USING (id) LEFT JOIN t3 ON (t3.a = t1.a) WHERE t1.x IN (1,2,3) AND (a OR b) AND NOT (c)",
	"SELECT * FROM t FORCE INDEX (ix) USE INDEX FOR ORDER BY (iy) WHERE EXISTS (SELECT 1 FROM u)",
	"SELECT * FROM t PARTITION (p0, p1) WHERE a = ANY (SELECT b FROM u) OR a = ALL (SELECT c FROM v)",
	"SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b), LAG(x, 1) OVER w FROM t WINDOW w AS (ORDER BY c)",
	"SELECT MATCH (a) AGAINST ('x' IN BOOLEAN MODE) FROM t",
	"SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (x INT PATH '$', y VARCHAR(10) PATH '$.y', NESTED PATH '$.z' COLUMNS (z INT PATH '$'))) AS jt",
	"SELECT LAST_INSERT_ID(), FOUND_ROWS(), ROW_COUNT(), CONNECTION_ID(), DATABASE(), USER(), VERSION()",
	"SELECT 1 -- FOR UPDATE",
	"SELECT 1 --\tINTO @x",
	"SELECT 1 # INTO @x",
	"SELECT /* FOR UPDATE */ 1",
	"SELECT /*+ MAX_EXECUTION_TIME(1000) BKA(t) */ a FROM t",
	"SELECT a FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2020-01-01 00:00:00'",
	"SELECT get_lock, sleep, `benchmark` FROM t",
	"SELECT @a, @@global.max_connections, @@session.sql_mode, @`q`, @'p'",
	"SELECT DATE_ADD(NOW(), INTERVAL 1 DAY), IF(a, b, c), IFNULL(a, 0), LEFT(s, 2), INSERT(s, 1, 2, 'x'), REPLACE(s, 'a', 'b'), MOD(a, 2)",
	"SELECT SQL_NO_CACHE (a) FROM t",
	"SELECT DISTINCT (a), STRAIGHT_JOIN (b) FROM t",
	"SELECT x MEMBER OF ('[1, 2]') FROM t",
	"select substring(s from 2 for 3), trim(leading 'x' from s), extract(year from d), position('a' in s) from t",
	"SELECT a FROM t LIMIT 10 OFFSET 5",
	"SELECT _utf8mb4'x' COLLATE utf8mb4_bin, N'y', X'1F', 0x1F, 0b101, 1e5, .5, -1.5e-3",
	"SELECT JSON_EXTRACT(j, '$.a'), j->'$.b', j->>'$.c' FROM t",
	"SELECT ST_AsText(ST_GeomFromText('POINT(1 1)')), UUID(), RAND(), MD5('x'), SHA2('x', 256)",
	"SELECT CASE WHEN (a > 1) THEN (b) ELSE (c) END FROM t",
	"SELECT 1 FROM dual WHERE 1 = 1",
	"/* leading comment */ SELECT 1",
	"SELECT `t`.`a` FROM `db`.`t` WHERE `t`.`a` <=> NULL",
	"SELECT COUNT(*) FROM seq_1_to_10",
	"SELECT 1 /*!50000 + 1 */",
	"SELECT a FROM t WHERE b = 1 /*!LIMIT 1*/",
	"SELECT `GET_LOCK` FROM t",
	"SELECT a FROM t WHERE 'GET_LOCK(1)' = a",
	"SELECT NEXT_DAY FROM t",
	"SELECT ABS(-1), CEIL(1.5), FLOOR(1.5), ROUND(1.55, 1), TRUNCATE(1.55, 1), GREATEST(1, 2), COALESCE(NULL, 1)",
}

var rejectCases = []struct{ sql, reason string }{
	{"INSERT INTO t VALUES (1)", "not a SELECT: INSERT"},
	{"insert into t select * from u", "not a SELECT: INSERT"},
	{"UPDATE t SET a = 1", "not a SELECT: UPDATE"},
	{"DELETE FROM t", "not a SELECT: DELETE"},
	{"REPLACE INTO t VALUES (1)", "not a SELECT: REPLACE"},
	{"CALL p()", "not a SELECT: CALL"},
	{"DO SLEEP(1)", "not a SELECT: DO"},
	{"SET @a = 1", "not a SELECT: SET"},
	{"SET STATEMENT max_statement_time = 1 FOR SELECT 1", "not a SELECT: SET"},
	{"SHOW TABLES", "not a SELECT: SHOW"},
	{"EXPLAIN SELECT 1", "not a SELECT: EXPLAIN"},
	{"HANDLER t READ FIRST", "not a SELECT: HANDLER"},
	{"LOCK TABLES t READ", "not a SELECT: LOCK"},
	{"TABLE t", "not a SELECT: TABLE"},
	{"VALUES ROW(1)", "not a SELECT: VALUES"},
	{"CREATE TABLE t (a INT)", "not a SELECT: CREATE"},
	{"LOAD DATA INFILE '/tmp/x' INTO TABLE t", "not a SELECT: LOAD"},
	{"frobnicate the server", "not a SELECT"},
	{"'SELECT 1'", "not a SELECT"},
	{"/*!40101 SET NAMES utf8 */", "not a SELECT: SET"},
	{"/*!SELECT 1*/; DELETE FROM t", "several statements"},
	{"WITH c AS (SELECT 1) DELETE FROM t", "not a SELECT: WITH ... DELETE"},
	{"WITH c AS (SELECT 1) UPDATE t SET a = 1", "not a SELECT: WITH ... UPDATE"},
	{"WITH c (x) AS (SELECT 1) INSERT INTO t SELECT * FROM c", "not a SELECT: WITH ... INSERT"},
	{"SELECT * FROM t FOR UPDATE", replay.ReasonLockingRead},
	{"SELECT * FROM t FOR SHARE", replay.ReasonLockingRead},
	{"SELECT * FROM t LOCK IN SHARE MODE", replay.ReasonLockingRead},
	{"select * from t for update skip locked", replay.ReasonLockingRead},
	{"SELECT * FROM t FOR UPDATE NOWAIT", replay.ReasonLockingRead},
	{"SELECT * FROM t WHERE a IN (SELECT b FROM u FOR UPDATE)", replay.ReasonLockingRead},
	{"(SELECT 1) UNION (SELECT a FROM t FOR UPDATE)", replay.ReasonLockingRead},
	{"SELECT 1 /*!FOR UPDATE*/", replay.ReasonLockingRead},
	{"SELECT 1 /*!50000 FOR UPDATE */", replay.ReasonLockingRead},
	{"SELECT 1 /*M!100000 FOR UPDATE */", replay.ReasonLockingRead},
	{"SELECT 1 /*!50000 /* inner */ FOR UPDATE */", replay.ReasonLockingRead},
	{"SELECT 1--1 FOR UPDATE", replay.ReasonLockingRead},
	{"SELECT 1 # comment\n FOR UPDATE", replay.ReasonLockingRead},
	{"SELECT 1 -- comment\nFOR UPDATE", replay.ReasonLockingRead},
	{"SELECT '/*' FOR UPDATE, '*/'", replay.ReasonLockingRead},
	{"SELECT a INTO @x FROM t", replay.ReasonInto},
	{"SELECT a FROM t INTO OUTFILE '/tmp/x'", replay.ReasonInto},
	{"SELECT a FROM t INTO DUMPFILE '/tmp/x'", replay.ReasonInto},
	{"SELECT a INTO x FROM t", replay.ReasonInto},
	{"SELECT 1 /*!INTO @x*/", replay.ReasonInto},
	{"SELECT GET_LOCK('x', 0)", "denied function GET_LOCK: takes a named lock"},
	{"SELECT get_lock ('x', 0)", "denied function GET_LOCK: takes a named lock"},
	{"SELECT get_lock/**/('x', 0)", "denied function GET_LOCK: takes a named lock"},
	{"SELECT `GET_LOCK`('x', 0)", "denied function GET_LOCK: takes a named lock"},
	{"SELECT a FROM t WHERE GET_LOCK(a, 0) = 1", "denied function GET_LOCK: takes a named lock"},
	{"SELECT RELEASE_LOCK('x')", "denied function RELEASE_LOCK: releases a named lock"},
	{"SELECT RELEASE_ALL_LOCKS()", "denied function RELEASE_ALL_LOCKS: releases named locks"},
	{"SELECT IS_USED_LOCK('x')", "denied function IS_USED_LOCK: named locks"},
	{"SELECT IS_FREE_LOCK('x')", "denied function IS_FREE_LOCK: named locks"},
	{"SELECT SLEEP(1)", "denied function SLEEP: waits"},
	{"SELECT * FROM t WHERE SLEEP(1) = 0", "denied function SLEEP: waits"},
	{"SELECT BENCHMARK(1000000, MD5('x'))", "denied function BENCHMARK: burns CPU"},
	{"SELECT NEXTVAL(s)", "denied function NEXTVAL: advances a sequence"},
	{"SELECT SETVAL(s, 10)", "denied function SETVAL: sets a sequence"},
	{"SELECT LASTVAL(s)", "denied function LASTVAL: sequence state of the session"},
	{"SELECT NEXT VALUE FOR s", "denied function NEXTVAL: advances a sequence"},
	{"SELECT PREVIOUS VALUE FOR s", "denied function LASTVAL: sequence state of the session"},
	{"SELECT s.nextval", "denied function NEXTVAL: advances a sequence"},
	{"SELECT LAST_INSERT_ID(5)", "denied function LAST_INSERT_ID: sets a session value"},
	{"SELECT LOAD_FILE('/etc/passwd')", "denied function LOAD_FILE: reads a server file"},
	{"SELECT MASTER_POS_WAIT('f', 4)", "denied function MASTER_POS_WAIT: waits for replication"},
	{"SELECT MASTER_GTID_WAIT('0-1-1')", "denied function MASTER_GTID_WAIT: waits for replication"},
	{"SELECT WAIT_FOR_EXECUTED_GTID_SET('x')", "denied function WAIT_FOR_EXECUTED_GTID_SET: waits for replication"},
	{"SELECT my_func(1)", replay.ReasonStoredFunction},
	{"SELECT db.f(1)", replay.ReasonStoredFunction},
	{"SELECT `db`.`f`(1)", replay.ReasonStoredFunction},
	{"SELECT sys.format_bytes(1)", replay.ReasonStoredFunction},
	{"SELECT * FROM t WHERE audit_log(id)", replay.ReasonStoredFunction},
	{"SELECT `weird name`(1)", replay.ReasonStoredFunction},
	{"SELECT a FROM t WHERE b = (SELECT bump())", replay.ReasonStoredFunction},
	{"SELECT 1 /*!50000 UNION SELECT bump() */", replay.ReasonStoredFunction},
	{"SELECT @a := 1", replay.ReasonAssignment},
	{"SELECT @a := a FROM t", replay.ReasonAssignment},
	{"SELECT * FROM t PROCEDURE ANALYSE()", replay.ReasonProcedure},
	{"SELECT 1; DELETE FROM t", replay.ReasonMultiple},
	{"SELECT 1; SELECT 2", replay.ReasonMultiple},
	{"SELECT * FROM t WHERE id = ?", replay.ReasonPlaceholders},
	{"SELECT 'unterminated", replay.ReasonUnparsable},
	{"SELECT \"unterminated", replay.ReasonUnparsable},
	{"SELECT `unterminated", replay.ReasonUnparsable},
	{"SELECT (1", replay.ReasonUnparsable},
	{"SELECT 1)", replay.ReasonUnparsable},
	{"SELECT 1 /* open", replay.ReasonUnparsable},
	{"SELECT 1 /*! FOR UPDATE", replay.ReasonUnparsable},
	{"SELECT 1 /*! # */ FOR UPDATE", replay.ReasonUnparsable},
	{"WITH c AS SELECT 1", replay.ReasonUnparsable},
	{"", replay.ReasonEmpty},
	{";", replay.ReasonEmpty},
	{"-- only a comment", replay.ReasonEmpty},
	{"/* only */ # comments", replay.ReasonEmpty},
}

func TestClassifyAccepts(t *testing.T) {
	for _, sql := range acceptCases {
		t.Run(fmt.Sprintf("%q", sql), func(t *testing.T) {
			if r := replay.Classify(sql, replay.Mode{}); r != "" {
				t.Errorf("Classify(%q) = %q, want it accepted", sql, r)
			}
		})
	}
}

func TestClassifyRejects(t *testing.T) {
	for _, c := range rejectCases {
		t.Run(fmt.Sprintf("%q", c.sql), func(t *testing.T) {
			if r := replay.Classify(c.sql, replay.Mode{}); r != c.reason {
				t.Errorf("Classify(%q) = %q, want %q", c.sql, r, c.reason)
			}
		})
	}
}

// TestClassifyFollowsSQLMode: the classifier must split strings as the server will, or a
// string could hide a clause.
func TestClassifyFollowsSQLMode(t *testing.T) {
	hidden := `SELECT 'a\' FOR UPDATE -- '`
	if r := replay.Classify(hidden, replay.Mode{}); r != "" {
		t.Errorf("default mode: %q", r)
	}
	if r := replay.Classify(hidden, replay.Mode{NoBackslashEscapes: true}); r != replay.ReasonLockingRead {
		t.Errorf("NO_BACKSLASH_ESCAPES: %q", r)
	}
	ansi := `SELECT "sleep"(1)`
	if r := replay.Classify(ansi, replay.Mode{ANSIQuotes: true}); r != "denied function SLEEP: waits" {
		t.Errorf("ANSI_QUOTES: %q", r)
	}
	if r := replay.Classify(`SELECT "a" FROM "t" FOR UPDATE`, replay.Mode{ANSIQuotes: true}); r != replay.ReasonLockingRead {
		t.Errorf("ANSI_QUOTES locking: %q", r)
	}
	m := replay.ModeFromSQLMode("STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES,ANSI_QUOTES")
	if !m.NoBackslashEscapes || !m.ANSIQuotes {
		t.Errorf("ModeFromSQLMode: %+v", m)
	}
	if m := replay.ModeFromSQLMode("ANSI"); !m.ANSIQuotes || m.NoBackslashEscapes {
		t.Errorf("ModeFromSQLMode(ANSI): %+v", m)
	}
}

func TestFingerprint(t *testing.T) {
	same := [][]string{
		{"SELECT * FROM t WHERE id = 5", "select *  from t\n where id=6;", "SELECT /* c */ * FROM `t` WHERE id = -7"},
		{"SELECT a FROM t WHERE b IN (1, 2, 3)", "SELECT a FROM t WHERE b IN ('x')", "select a from t where b in (1,2,3,4,5,6)"},
		{"INSERT INTO t VALUES (1, 'a'), (2, 'b')", "INSERT INTO t VALUES (3, 'c')"},
		{"SELECT _utf8mb4'x', N'y', 0x1F, 1.5e3, NULL", "SELECT 'a', 'b', 2, 3, 4"},
	}
	for _, group := range same {
		want := replay.Fingerprint(group[0], replay.Mode{})
		for _, s := range group[1:] {
			if got := replay.Fingerprint(s, replay.Mode{}); got != want {
				t.Errorf("Fingerprint(%q) = %q, want %q (as %q)", s, got, want, group[0])
			}
			if replay.Digest(s, replay.Mode{}) != replay.Digest(group[0], replay.Mode{}) {
				t.Errorf("Digest(%q) differs from Digest(%q)", s, group[0])
			}
		}
	}
	differ := [][2]string{
		{"SELECT * FROM t WHERE id = 5", "SELECT * FROM u WHERE id = 5"},
		{"SELECT a FROM t", "SELECT b FROM t"},
		{"SELECT a FROM t WHERE x = 1", "SELECT a FROM t WHERE x > 1"},
		{"SELECT 1 /*!FOR UPDATE*/", "SELECT 1"},
	}
	for _, d := range differ {
		if replay.Fingerprint(d[0], replay.Mode{}) == replay.Fingerprint(d[1], replay.Mode{}) {
			t.Errorf("%q and %q share fingerprint %q", d[0], d[1], replay.Fingerprint(d[0], replay.Mode{}))
		}
	}
	if got := replay.Fingerprint("select a from T where b in (1,2) and c = 'x'", replay.Mode{}); got != "SELECT `a` FROM `T` WHERE `b` IN (...) AND `c` = ?" {
		t.Errorf("fingerprint: %q", got)
	}
	if d := replay.Digest("SELECT 1", replay.Mode{}); len(d) != 32 || strings.Trim(d, "0123456789abcdef") != "" {
		t.Errorf("digest %q", d)
	}
}
