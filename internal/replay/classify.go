package replay

import "strings"

// Skip reasons. Each skipped statement is counted under one of these stable strings; a
// denied function or a statement verb is named in the reason ("not a SELECT: UPDATE",
// "denied function GET_LOCK: takes a named lock").
const (
	ReasonNotSelect      = "not a SELECT"
	ReasonLockingRead    = "locking read (FOR UPDATE/FOR SHARE/LOCK IN SHARE MODE)"
	ReasonInto           = "SELECT ... INTO"
	ReasonStoredFunction = "possible stored function"
	ReasonDenied         = "denied function"
	ReasonAssignment     = "assigns a variable (:=)"
	ReasonProcedure      = "PROCEDURE clause"
	ReasonMultiple       = "several statements"
	ReasonPlaceholders   = "placeholders (?) without values"
	ReasonUnparsable     = "cannot be parsed"
	ReasonTooLong        = "too long"
	ReasonTruncated      = "truncated by performance_schema"
	ReasonOwn            = "innowarm's own statement"
	// ReasonEmpty is a text without any token (only comments): it is not counted at all.
	ReasonEmpty = "empty"
)

// verbs are the statement types named in "not a SELECT: VERB" reasons; any other first word
// counts as plain "not a SELECT", so that garbage cannot make up reasons without end.
var verbs = setOf(`
ALTER ANALYZE BACKUP BEGIN BINLOG CACHE CALL CHANGE CHECK CHECKSUM COMMIT CREATE DEALLOCATE
DELETE DESC DESCRIBE DO DROP EXECUTE EXPLAIN FLUSH GET GRANT HANDLER HELP INSERT INSTALL KILL
LOAD LOCK OPTIMIZE PREPARE PURGE RELEASE RENAME REPAIR REPLACE RESET RESIGNAL REVOKE ROLLBACK
SAVEPOINT SET SHOW SHUTDOWN SIGNAL START STOP TABLE TRUNCATE UNINSTALL UNLOCK UPDATE USE VALUES
XA
`)

// Classify says whether a statement may be replayed: "" when it is a read-only SELECT, else
// the reason to skip it. mode must be the sql_mode of the session that would run it.
func Classify(sql string, mode Mode) string {
	toks, err := lex(sql, mode)
	if err != nil {
		return ReasonUnparsable
	}
	return classifyTokens(toks)
}

func classifyTokens(toks []token) string {
	for len(toks) > 0 && toks[len(toks)-1].text == ";" && toks[len(toks)-1].kind == tPunct {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return ReasonEmpty
	}
	match, ok := matchParens(toks)
	if !ok {
		return ReasonUnparsable
	}
	// The kind first: a stored program's body has semicolons of its own.
	if r := statementKind(toks, match); r != "" {
		return r
	}
	for _, t := range toks {
		if t.kind == tPunct && t.text == ";" {
			return ReasonMultiple
		}
	}
	for i, t := range toks {
		next := func(k int) token {
			if i+k < len(toks) {
				return toks[i+k]
			}
			return token{}
		}
		switch t.kind {
		case tParam:
			return ReasonPlaceholders
		case tPunct:
			if t.text == ":=" {
				return ReasonAssignment
			}
			continue
		case tWord:
			switch t.up {
			case "INTO":
				return ReasonInto
			case "PROCEDURE":
				return ReasonProcedure
			case "FOR":
				if n := next(1); n.kind == tWord && (n.up == "UPDATE" || n.up == "SHARE") {
					return ReasonLockingRead
				}
			case "LOCK":
				if n := next(1); n.kind == tWord && n.up == "IN" {
					return ReasonLockingRead
				}
			case "NEXT", "PREVIOUS":
				if n, f := next(1), next(2); n.kind == tWord && n.up == "VALUE" && f.kind == tWord && f.up == "FOR" {
					if t.up == "NEXT" {
						return denied("NEXTVAL")
					}
					return denied("LASTVAL")
				}
			case "NEXTVAL", "CURRVAL", "LASTVAL":
				// seq.nextval (sql_mode=ORACLE)
				if i > 0 && toks[i-1].kind == tPunct && toks[i-1].text == "." {
					return denied("NEXTVAL")
				}
			}
		case tQuoted:
		default:
			continue
		}
		if n := next(1); n.kind != tPunct || n.text != "(" {
			continue
		}
		if r := checkCall(toks, i, match); r != "" {
			return r
		}
	}
	return ""
}

func denied(name string) string {
	return ReasonDenied + " " + name + ": " + deniedFunctions[name]
}

// matchParens maps each '(' to its ')' and reports whether they balance.
func matchParens(toks []token) (map[int]int, bool) {
	match := map[int]int{}
	var stack []int
	for i, t := range toks {
		if t.kind != tPunct {
			continue
		}
		switch t.text {
		case "(":
			stack = append(stack, i)
		case ")":
			if len(stack) == 0 {
				return nil, false
			}
			match[stack[len(stack)-1]] = i
			stack = stack[:len(stack)-1]
		}
	}
	return match, len(stack) == 0
}

// statementKind accepts SELECT, (SELECT ...) and WITH ... SELECT; anything else is "not a
// SELECT". A WITH must lead to a SELECT: MySQL 8 also has WITH ... UPDATE/DELETE.
func statementKind(toks []token, match map[int]int) string {
	i := 0
	for i < len(toks) && toks[i].kind == tPunct && toks[i].text == "(" {
		i++
	}
	if i >= len(toks) || toks[i].kind != tWord {
		return ReasonNotSelect
	}
	switch toks[i].up {
	case "SELECT":
		return ""
	case "WITH":
		return withMain(toks, i, match)
	}
	if verbs[toks[i].up] {
		return ReasonNotSelect + ": " + toks[i].up
	}
	return ReasonNotSelect
}

// withMain walks "WITH [RECURSIVE] name [(cols)] AS (body) [, ...]" and checks the statement
// that follows.
func withMain(toks []token, i int, match map[int]int) string {
	isWord := func(i int, w string) bool { return i < len(toks) && toks[i].kind == tWord && toks[i].up == w }
	isOpen := func(i int) bool { return i < len(toks) && toks[i].kind == tPunct && toks[i].text == "(" }
	i++
	if isWord(i, "RECURSIVE") {
		i++
	}
	for {
		if i >= len(toks) || toks[i].kind != tWord && toks[i].kind != tQuoted {
			return ReasonUnparsable
		}
		i++
		if isOpen(i) {
			i = match[i] + 1
		}
		if !isWord(i, "AS") {
			return ReasonUnparsable
		}
		i++
		if !isOpen(i) {
			return ReasonUnparsable
		}
		i = match[i] + 1
		if i < len(toks) && toks[i].kind == tPunct && toks[i].text == "," {
			i++
			continue
		}
		break
	}
	for isOpen(i) {
		i++
	}
	if isWord(i, "SELECT") {
		return ""
	}
	if i < len(toks) && toks[i].kind == tWord && verbs[toks[i].up] {
		return ReasonNotSelect + ": WITH ... " + toks[i].up
	}
	return ReasonNotSelect
}

// checkCall judges toks[i] followed by '(': a function call unless the name is a keyword,
// an alias with a column list (AS dt (a, b), (subquery) dt (a, b)) or a CTE (name (a, b) AS).
func checkCall(toks []token, i int, match map[int]int) string {
	t := toks[i]
	name := t.up
	if t.kind == tQuoted {
		name = strings.ToUpper(t.up)
	} else if notCalls[name] {
		return ""
	}
	if i > 0 {
		prev := toks[i-1]
		switch {
		case prev.kind == tWord && prev.up == "AS":
			return ""
		case prev.kind == tPunct && prev.text == ")":
			return ""
		case prev.kind == tPunct && prev.text == ".":
			return ReasonStoredFunction
		}
	}
	closeAt := match[i+1]
	if closeAt+2 < len(toks) && toks[closeAt+1].kind == tWord && toks[closeAt+1].up == "AS" &&
		toks[closeAt+2].kind == tPunct && toks[closeAt+2].text == "(" {
		return "" // WITH name (cols) AS (...)
	}
	if name == "LAST_INSERT_ID" {
		if closeAt == i+2 {
			return "" // LAST_INSERT_ID() only reads
		}
		return denied(name)
	}
	if _, ok := deniedFunctions[name]; ok {
		return denied(name)
	}
	if builtinFunctions[name] {
		return ""
	}
	return ReasonStoredFunction
}
