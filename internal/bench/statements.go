package bench

import (
	"errors"
	"fmt"
	"github.com/innowarm/innowarm/internal/replay"
	"io/fs"
	"os"
	"strings"
	"unicode"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// DefaultDelimiter is mysqlslap's: without --delimiter every line is a statement.
const DefaultDelimiter = "\n"

// SplitStatements splits script into statements the way mysqlslap does: at each delimiter,
// skipping one whitespace character after it, the text after the last delimiter being a
// statement of its own. Two differences, both where mysqlslap misbehaves silently: a
// delimiter of several characters is matched whole (mysqlslap uses only its first
// character), and empty or blank statements are dropped and counted in skipped (mysqlslap
// stops running a client's list at the first one).
func SplitStatements(script, delim string) (stmts []string, skipped int) {
	if delim == "" {
		delim = DefaultDelimiter
	}
	add := func(s string) {
		if strings.TrimSpace(s) == "" {
			skipped++
			return
		}
		stmts = append(stmts, s)
	}
	rest := script
	for {
		i := strings.Index(rest, delim)
		if i < 0 {
			break
		}
		add(rest[:i])
		rest = rest[i+len(delim):]
		if rest != "" && isCSpace(rest[0]) {
			rest = rest[1:]
		}
	}
	if rest != "" {
		add(rest)
	}
	return stmts, skipped
}

// isCSpace is C's isspace in the C locale.
func isCSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r'
}

// LoadSQL reads a mysqlslap "string or file" option (--query, --create, --pre-query,
// --post-query): a value naming an existing file is read from it, anything else is SQL.
// Unlike mysqlslap, a value that can only be a file name (no blank in it, and a '/' or a
// .sql/.txt ending) must exist: mysqlslap would send a mistyped file name to the server as
// SQL and report a syntax error.
func LoadSQL(flag, value string) (text string, file string, err error) {
	if value == "" {
		return "", "", exitcode.UsageError(fmt.Errorf("--%s is empty: give SQL text or a file of statements", flag))
	}
	fi, statErr := os.Stat(value)
	switch {
	case statErr == nil && fi.IsDir():
		return "", "", exitcode.UsageError(fmt.Errorf("--%s %s is a directory, not a file of statements", flag, value))
	case statErr == nil:
		b, err := os.ReadFile(value)
		if err != nil {
			return "", "", exitcode.UsageError(fmt.Errorf("--%s: cannot read %s: %w", flag, value, err))
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", "", exitcode.UsageError(fmt.Errorf("--%s file %s is empty", flag, value))
		}
		return string(b), value, nil
	case looksLikePath(value):
		if errors.Is(statErr, fs.ErrNotExist) {
			return "", "", exitcode.UsageError(fmt.Errorf("--%s file %s does not exist", flag, value))
		}
		return "", "", exitcode.UsageError(fmt.Errorf("--%s file %s: %w", flag, value, statErr))
	}
	return value, "", nil
}

func looksLikePath(v string) bool {
	if strings.IndexFunc(v, unicode.IsSpace) >= 0 {
		return false
	}
	lower := strings.ToLower(v)
	return strings.Contains(v, "/") || strings.HasSuffix(lower, ".sql") || strings.HasSuffix(lower, ".txt")
}

// readOnlyVerbs are the statements that change no table. Everything else (including CALL,
// whose procedure may write) counts as a write for the schema safety rules.
var readOnlyVerbs = map[string]bool{
	"SELECT": true, "WITH": true, "SHOW": true, "DESC": true, "DESCRIBE": true, "EXPLAIN": true,
	"SET": true, "DO": true, "BEGIN": true, "START": true, "COMMIT": true, "ROLLBACK": true,
	"USE": true, "HELP": true, "CHECKSUM": true, "VALUES": true, "TABLE": true,
	"SAVEPOINT": true, "RELEASE": true,
}

// IsWrite reports whether a statement may change data or schema objects: whether any
// statement the text holds, lexed as the server lexes it (replay.StatementVerbs: several
// statements, executable comments, WITH ... DELETE), has a verb that is not read-only.
// Judged by its first keyword alone, "SELECT 1; DELETE FROM t", "/*!50000 DELETE FROM t */"
// and MySQL's "WITH x AS (...) DELETE ..." ran in a schema innowarm did not create without
// --allow-writes-in-existing-schema. The text is lexed with and without backslash escapes
// (the session's sql_mode is not known here): a write under either is a write. A text that
// does not lex is taken for a write.
func IsWrite(stmt string) bool {
	if firstKeyword(stmt) == "" && !strings.Contains(stmt, "/*") {
		return false // blank or only comments
	}
	for _, m := range []replay.Mode{{}, {NoBackslashEscapes: true}, {ANSIQuotes: true}} {
		verbs, err := replay.StatementVerbs(stmt, m)
		if err != nil {
			return true
		}
		for _, v := range verbs {
			if v == "" || !readOnlyVerbs[v] {
				return true
			}
		}
	}
	return false
}

func firstKeyword(s string) string {
	for {
		s = strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
		switch {
		case strings.HasPrefix(s, "/*"):
			end := strings.Index(s[2:], "*/")
			if end < 0 {
				return ""
			}
			s = s[2+end+2:]
			continue
		case strings.HasPrefix(s, "-- "), strings.HasPrefix(s, "--\t"), strings.HasPrefix(s, "#"):
			end := strings.IndexByte(s, '\n')
			if end < 0 {
				return ""
			}
			s = s[end+1:]
			continue
		}
		break
	}
	end := strings.IndexFunc(s, func(r rune) bool { return !(unicode.IsLetter(r) || r == '_') })
	if end < 0 {
		end = len(s)
	}
	return strings.ToUpper(s[:end])
}
