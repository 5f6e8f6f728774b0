package replay

import (
	"errors"
	"strings"
)

// Mode is what changes how the server splits a statement into tokens: the session's
// sql_mode. The classifier must see the same tokens the server will, or a string could hide
// a clause from it.
type Mode struct {
	NoBackslashEscapes bool // sql_mode NO_BACKSLASH_ESCAPES: '\' is an ordinary character in strings
	ANSIQuotes         bool // sql_mode ANSI_QUOTES: "x" is an identifier, not a string
}

// ModeFromSQLMode reads the flags that matter from a @@sql_mode value.
func ModeFromSQLMode(sqlMode string) Mode {
	var m Mode
	for _, f := range strings.Split(strings.ToUpper(sqlMode), ",") {
		switch strings.TrimSpace(f) {
		case "NO_BACKSLASH_ESCAPES":
			m.NoBackslashEscapes = true
		case "ANSI_QUOTES", "ANSI", "ORACLE", "POSTGRESQL", "DB2", "MSSQL", "MAXDB":
			m.ANSIQuotes = true
		}
	}
	return m
}

type tokKind uint8

const (
	tWord   tokKind = iota // unquoted identifier or keyword
	tNumber                // 12, 1.5e3, 0x1F, 0b01
	tString                // '...' (or "..." without ANSI_QUOTES)
	tQuoted                // `...` (or "..." with ANSI_QUOTES)
	tVar                   // @v, @'v', @@global.v
	tParam                 // ?
	tPunct                 // ( ) , ; . and operators
)

type token struct {
	kind tokKind
	text string // as written
	up   string // words: upper case; quoted identifiers: the name, unquoted
	// glued: no space or comment between this token and the previous one.
	glued bool
}

var (
	errUnterminatedString  = errors.New("unterminated string")
	errUnterminatedQuote   = errors.New("unterminated quoted identifier")
	errUnterminatedComment = errors.New("unterminated comment")
)

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// lex splits a statement as the server's lexer does. Comments are dropped, except the
// executable kind (/*! ... */, /*M! ... */), whose content the server runs: it is lexed as
// part of the statement. Optimizer hints (/*+ ... */) are comments here.
func lex(sql string, m Mode) ([]token, error) {
	var toks []token
	i, n := 0, len(sql)
	inExec := 0 // depth of executable comments
	glued := false
	emit := func(k tokKind, text, up string) {
		toks = append(toks, token{kind: k, text: text, up: up, glued: glued})
		glued = true
	}
	for i < n {
		c := sql[i]
		switch {
		case isSpace(c):
			i++
			glued = false
		case c == '#':
			for i < n && sql[i] != '\n' {
				i++
			}
			glued = false
		case c == '-' && i+1 < n && sql[i+1] == '-' && (i+2 == n || sql[i+2] <= ' '):
			for i < n && sql[i] != '\n' {
				i++
			}
			glued = false
		case c == '/' && i+1 < n && sql[i+1] == '*':
			j := i + 2
			exec := false
			switch {
			case j < n && sql[j] == '!':
				exec, j = true, j+1
			case j+1 < n && (sql[j] == 'M' || sql[j] == 'm') && sql[j+1] == '!':
				exec, j = true, j+2
			}
			if exec {
				for j < n && isDigit(sql[j]) {
					j++
				}
				inExec++
				i = j
				glued = false
				continue
			}
			end := strings.Index(sql[j:], "*/")
			if end < 0 {
				return toks, errUnterminatedComment
			}
			i = j + end + 2
			glued = false
		case c == '*' && inExec > 0 && i+1 < n && sql[i+1] == '/':
			inExec--
			i += 2
			glued = false
		case c == '\'' || c == '"' && !m.ANSIQuotes:
			j, err := scanString(sql, i, c, !m.NoBackslashEscapes)
			if err != nil {
				return toks, err
			}
			emit(tString, sql[i:j], "")
			i = j
		case c == '`' || c == '"' && m.ANSIQuotes:
			j, name, err := scanQuoted(sql, i, c)
			if err != nil {
				return toks, err
			}
			emit(tQuoted, sql[i:j], name)
			i = j
		case c == '@':
			j := i + 1
			if j < n && sql[j] == '@' {
				j++
			}
			switch {
			case j < n && (sql[j] == '\'' || sql[j] == '"'):
				k, err := scanString(sql, j, sql[j], !m.NoBackslashEscapes)
				if err != nil {
					return toks, err
				}
				j = k
			case j < n && sql[j] == '`':
				k, _, err := scanQuoted(sql, j, '`')
				if err != nil {
					return toks, err
				}
				j = k
			default:
				for j < n && (isWordByte(sql[j]) || sql[j] == '.') {
					j++
				}
			}
			emit(tVar, sql[i:j], strings.ToUpper(sql[i:j]))
			i = j
		case c == '?':
			emit(tParam, "?", "?")
			i++
		case isDigit(c) || c == '.' && i+1 < n && isDigit(sql[i+1]) && !afterName(toks, glued):
			j := scanNumber(sql, i)
			if j < n && isWordByte(sql[j]) && c != '.' {
				// 1abc is an identifier: identifiers may begin with digits.
				k := j
				for k < n && isWordByte(sql[k]) {
					k++
				}
				emit(tWord, sql[i:k], strings.ToUpper(sql[i:k]))
				i = k
				continue
			}
			emit(tNumber, sql[i:j], "")
			i = j
		case isWordByte(c):
			j := i
			for j < n && isWordByte(sql[j]) {
				j++
			}
			emit(tWord, sql[i:j], strings.ToUpper(sql[i:j]))
			i = j
		default:
			j := i + 1
			for _, op := range operators {
				if strings.HasPrefix(sql[i:], op) {
					j = i + len(op)
					break
				}
			}
			emit(tPunct, sql[i:j], sql[i:j])
			i = j
		}
	}
	if inExec > 0 {
		return toks, errUnterminatedComment
	}
	return toks, nil
}

// operators are the multi-character operators, longest first.
var operators = []string{"<=>", "->>", ":=", "<=", ">=", "<>", "!=", "<<", ">>", "&&", "||", "->"}

// afterName reports whether a '.' here qualifies a name (t.5col) rather than starting a
// number (.5).
func afterName(toks []token, glued bool) bool {
	if len(toks) == 0 || !glued {
		return false
	}
	k := toks[len(toks)-1].kind
	return k == tWord || k == tQuoted
}

// scanString returns the end of the string starting at sql[i] (the quote q).
func scanString(sql string, i int, q byte, backslash bool) (int, error) {
	j := i + 1
	for j < len(sql) {
		switch c := sql[j]; {
		case c == '\\' && backslash:
			j += 2
		case c == q:
			if j+1 < len(sql) && sql[j+1] == q {
				j += 2
				continue
			}
			return j + 1, nil
		default:
			j++
		}
	}
	return len(sql), errUnterminatedString
}

// scanQuoted returns the end of the quoted identifier at sql[i] and its name.
func scanQuoted(sql string, i int, q byte) (int, string, error) {
	var b strings.Builder
	j := i + 1
	for j < len(sql) {
		if sql[j] == q {
			if j+1 < len(sql) && sql[j+1] == q {
				b.WriteByte(q)
				j += 2
				continue
			}
			return j + 1, b.String(), nil
		}
		b.WriteByte(sql[j])
		j++
	}
	return len(sql), "", errUnterminatedQuote
}

// scanNumber returns the end of the number at sql[i]: 12, 1.5, .5, 1e-3, 0x1F, 0b101.
func scanNumber(sql string, i int) int {
	n := len(sql)
	if sql[i] == '0' && i+2 < n && (sql[i+1] == 'x' || sql[i+1] == 'b') {
		j := i + 2
		for j < n && isWordByte(sql[j]) {
			j++
		}
		return j
	}
	j := i
	for j < n && isDigit(sql[j]) {
		j++
	}
	if j < n && sql[j] == '.' {
		j++
		for j < n && isDigit(sql[j]) {
			j++
		}
	}
	if j < n && (sql[j] == 'e' || sql[j] == 'E') {
		k := j + 1
		if k < n && (sql[k] == '+' || sql[k] == '-') {
			k++
		}
		if k < n && isDigit(sql[k]) {
			for k < n && isDigit(sql[k]) {
				k++
			}
			j = k
		}
	}
	return j
}
