package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/innowarm/innowarm/internal/sqltext"
)

// keywords are upper-cased in fingerprints; any other word is an identifier and is kept as
// written (table names are case-sensitive on most servers), in backticks.
var keywords = setOf(`
ACCESSIBLE ADD ALL ALTER ANALYZE AND AS ASC ASENSITIVE BEFORE BETWEEN BIGINT BINARY BLOB BOTH
BY CALL CASCADE CASE CHANGE CHAR CHARACTER CHECK COLLATE COLUMN CONDITION CONSTRAINT CONTINUE
CONVERT CREATE CROSS CUBE CURRENT_DATE CURRENT_ROLE CURRENT_TIME CURRENT_TIMESTAMP
CURRENT_USER CURSOR DATABASE DATABASES DAY_HOUR DAY_MICROSECOND DAY_MINUTE DAY_SECOND DEC
DECIMAL DECLARE DEFAULT DELAYED DELETE DESC DESCRIBE DETERMINISTIC DISTINCT DISTINCTROW DIV
DOUBLE DROP DUAL EACH ELSE ELSEIF EMPTY ENCLOSED END ESCAPED EXCEPT EXISTS EXIT EXPLAIN FALSE
FETCH FIRST_VALUE FLOAT FOR FORCE FOREIGN FROM FULLTEXT FUNCTION GENERATED GET GRANT GROUP
GROUPING GROUPS HAVING HIGH_PRIORITY HOUR_MICROSECOND HOUR_MINUTE HOUR_SECOND IF IGNORE IN
INDEX INFILE INNER INOUT INSENSITIVE INSERT INT INTEGER INTERSECT INTERVAL INTO IS ITERATE
JOIN JSON_TABLE KEY KEYS KILL LAG LAST_VALUE LATERAL LEAD LEADING LEAVE LEFT LIKE LIMIT LINEAR
LINES LOAD LOCALTIME LOCALTIMESTAMP LOCK LONG LOOP LOW_PRIORITY MATCH MAXVALUE MEMBER MINUS
MINUTE_MICROSECOND MINUTE_SECOND MOD MODIFIES NATURAL NOT NTH_VALUE NTILE NULL NUMERIC OF
OFFSET ON OPTIMIZE OPTION OPTIONALLY OR ORDER OUT OUTER OUTFILE OVER PARTITION PRECISION
PRIMARY PROCEDURE RANGE RANK READ READS REAL RECURSIVE REFERENCES REGEXP RELEASE RENAME
REPEAT REPLACE REQUIRE RESIGNAL RESTRICT RETURN RETURNING REVOKE RIGHT RLIKE ROW ROWS
ROW_NUMBER SCHEMA SCHEMAS SELECT SENSITIVE SEPARATOR SET SHARE SHOW SIGNAL SMALLINT SOME
SPATIAL SPECIFIC SQL SQL_BIG_RESULT SQL_CALC_FOUND_ROWS SQL_SMALL_RESULT SQL_NO_CACHE
SQL_CACHE SQL_BUFFER_RESULT SSL STARTING STRAIGHT_JOIN SYSTEM_TIME TABLE TERMINATED THEN TO
TRAILING TRIGGER TRUE UNDO UNION UNIQUE UNLOCK UNSIGNED UPDATE USAGE USE USING UTC_DATE
UTC_TIME UTC_TIMESTAMP VALUE VALUES VARBINARY VARCHAR VARYING WHEN WHERE WHILE WINDOW WITH
WRITE XOR YEAR_MONTH ZEROFILL COUNT SUM AVG MIN MAX ANY ESCAPE MODE BOOLEAN NATURAL
`)

// Fingerprint is the statement's shape: comments dropped (executable ones kept), literals
// replaced by '?', lists of literals (IN (...), VALUES (...), (...)) folded to one '(...)',
// keywords in upper case, identifiers in backticks, single spaces. Statements that differ
// only in their values share a fingerprint.
func Fingerprint(sql string, mode Mode) string {
	toks, _ := lex(sql, mode)
	return fingerprintTokens(toks)
}

// Digest is a short hash of the fingerprint (32 hex digits).
func Digest(sql string, mode Mode) string {
	sum := sha256.Sum256([]byte(Fingerprint(sql, mode)))
	return hex.EncodeToString(sum[:16])
}

func fingerprintTokens(toks []token) string {
	for len(toks) > 0 && toks[len(toks)-1].kind == tPunct && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	out := make([]string, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case tString, tNumber:
			out = append(out, "?")
		case tWord:
			switch {
			case t.up == "NULL" || t.up == "TRUE" || t.up == "FALSE":
				out = append(out, "?")
			case i+1 < len(toks) && toks[i+1].kind == tString && toks[i+1].glued && isIntroducer(t.up):
				// _utf8mb4'x', N'x', X'1F', B'01': the literal with its introducer is one value.
				out = append(out, "?")
				i++
			case keywords[t.up] || builtinFunctions[t.up] || notCalls[t.up] || verbs[t.up]:
				out = append(out, t.up)
			default:
				out = append(out, sqltext.Ident(t.text))
			}
		case tQuoted:
			out = append(out, sqltext.Ident(t.up))
		case tPunct:
			if t.text == "-" && len(out) > 0 && isOperatorPosition(out[len(out)-1]) && i+1 < len(toks) && toks[i+1].kind == tNumber {
				continue // a negative number is one value
			}
			out = append(out, t.text)
		default:
			out = append(out, t.text)
		}
	}
	return strings.Join(foldLists(out), " ")
}

func isIntroducer(up string) bool {
	return up == "N" || up == "X" || up == "B" || strings.HasPrefix(up, "_")
}

// isOperatorPosition reports whether a '-' after this token is a sign, not a subtraction.
func isOperatorPosition(prev string) bool {
	switch prev {
	case "(", ",", "=", "<", ">", "<=", ">=", "<>", "!=", "<=>", "+", "-", "*", "/", "%", "IN", "BETWEEN", "AND", "OR", "SELECT", "WHERE", "THEN", "ELSE", "WHEN", "LIMIT":
		return true
	}
	return false
}

// foldLists turns "( ? , ? , ? )" into "(...)" and runs of "(...) , (...)" into one "(...)".
func foldLists(in []string) []string {
	out := make([]string, 0, len(in))
	for i := 0; i < len(in); i++ {
		if in[i] == "(" {
			j := i + 1
			for j+1 < len(in) && in[j] == "?" && in[j+1] == "," {
				j += 2
			}
			if j+1 < len(in) && in[j] == "?" && in[j+1] == ")" {
				if len(out) >= 2 && out[len(out)-1] == "," && out[len(out)-2] == "(...)" {
					out = out[:len(out)-1]
				} else {
					out = append(out, "(...)")
				}
				i = j + 1
				continue
			}
		}
		out = append(out, in[i])
	}
	return out
}
