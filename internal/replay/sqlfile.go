package replay

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// sqlFile splits a file of SQL statements as the mysql client does: statements end at the
// delimiter (';', or what a DELIMITER line sets) or at \G / \g, outside strings, quoted
// identifiers and comments. "USE db" sets the schema of the statements after it, and
// "DELIMITER x" changes the delimiter; neither is a statement.
type sqlFile struct {
	r     *bufio.Reader
	delim string
	mode  Mode
	max   int
	line  int // current line (1-based)
	close func() error

	schema string
}

func (s *sqlFile) Close() error { return s.close() }

type splitState uint8

const (
	stNormal       splitState = iota
	stSingle                  // '...'
	stDouble                  // "..."
	stBacktick                // `...`
	stLineComment             // # or -- to the end of the line
	stBlockComment            // /* ... */
)

func (s *sqlFile) Next() (Statement, error) {
	for {
		st, err := s.next()
		if err != nil {
			return st, err
		}
		if strings.TrimSpace(st.SQL) == "" && !st.TooLong {
			continue
		}
		if name, ok := useStatement(st.SQL); ok {
			s.schema = name
			continue
		}
		return st, nil
	}
}

// next reads one piece up to a delimiter; client commands (USE, DELIMITER) at the start of
// a statement are applied and give an empty piece.
func (s *sqlFile) next() (Statement, error) {
	var buf []byte
	tooLong := false
	state := stNormal
	start := 0
	blank := true   // nothing but white space so far
	var tail []byte // the last bytes read in normal state, to find a delimiter after the limit
	add := func(c byte) {
		if len(buf) < s.max {
			buf = append(buf, c)
		} else {
			tooLong = true
		}
	}
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			if blank {
				return Statement{}, io.EOF
			}
			return s.piece(buf, start, tooLong), nil
		}
		if err != nil {
			return Statement{}, err
		}
		if blank && !isSpace(c) {
			_ = s.r.UnreadByte()
			if done, err := s.clientCommand(); err != nil {
				return Statement{}, err
			} else if done {
				return Statement{}, nil
			}
			c, _ = s.r.ReadByte()
			blank, start = false, s.line
		}
		if c == '\n' {
			s.line++
		}
		switch state {
		case stNormal:
			switch {
			case c == '\'':
				state = stSingle
			case c == '"':
				state = stDouble
			case c == '`':
				state = stBacktick
			case c == '#':
				state = stLineComment
			case c == '-' && s.peekIs("-") && s.dashCommentFollows():
				state = stLineComment
			case c == '/' && s.peekIs("*"):
				add(c)
				c, _ = s.r.ReadByte()
				state = stBlockComment
			case c == '\\' && (s.peekIs("G") || s.peekIs("g")):
				_, _ = s.r.ReadByte()
				return s.piece(buf, start, tooLong), nil
			}
			add(c)
			if state != stNormal {
				tail = tail[:0]
				continue
			}
			tail = append(tail, c)
			if len(tail) > len(s.delim) {
				tail = tail[len(tail)-len(s.delim):]
			}
			if string(tail) == s.delim {
				if !tooLong {
					buf = buf[:len(buf)-len(s.delim)]
				}
				return s.piece(buf, start, tooLong), nil
			}
			continue
		case stSingle, stDouble:
			q := byte('\'')
			if state == stDouble {
				q = '"'
			}
			backslash := !s.mode.NoBackslashEscapes && (state == stSingle || !s.mode.ANSIQuotes)
			switch {
			case c == '\\' && backslash:
				add(c)
				if n, err := s.r.ReadByte(); err == nil {
					if n == '\n' {
						s.line++
					}
					add(n)
				}
				continue
			case c == q && s.peekIs(string(q)):
				add(c)
				c, _ = s.r.ReadByte()
			case c == q:
				state = stNormal
			}
		case stBacktick:
			if c == '`' {
				if s.peekIs("`") {
					add(c)
					c, _ = s.r.ReadByte()
				} else {
					state = stNormal
				}
			}
		case stLineComment:
			if c == '\n' {
				state = stNormal
			}
		case stBlockComment:
			if c == '*' && s.peekIs("/") {
				add(c)
				c, _ = s.r.ReadByte()
				state = stNormal
			}
		}
		add(c)
	}
}

func (s *sqlFile) peekIs(want string) bool {
	b, err := s.r.Peek(len(want))
	return err == nil && string(b) == want
}

// dashCommentFollows is called on the first '-' of "--": a comment needs white space or a
// control character (or the end) after the second dash.
func (s *sqlFile) dashCommentFollows() bool {
	b, err := s.r.Peek(2)
	if err != nil {
		return len(b) == 1 // "--" at the end of the input
	}
	return b[1] <= ' '
}

// clientCommand applies a DELIMITER or USE command at the start of a statement, as the
// mysql client does, and reports whether it consumed one. DELIMITER takes its whole line;
// USE ends at the delimiter or the end of the line.
func (s *sqlFile) clientCommand() (bool, error) {
	head, _ := s.r.Peek(10)
	lower := strings.ToLower(string(head))
	isDelim := strings.HasPrefix(lower, "delimiter ") || strings.HasPrefix(lower, "delimiter\t") || strings.HasPrefix(lower, "\\d ")
	isUse := strings.HasPrefix(lower, "use ") || strings.HasPrefix(lower, "use\t") || strings.HasPrefix(lower, "use`")
	if !isDelim && !isUse {
		return false, nil
	}
	peek, _ := s.r.Peek(4096)
	line := peek
	if i := bytes.IndexByte(peek, '\n'); i >= 0 {
		line = peek[:i]
	}
	consume := len(line)
	if consume < len(peek) {
		consume++ // the line end
	}
	var arg string
	if isDelim {
		if f := strings.Fields(string(line)); len(f) >= 2 {
			s.delim = f[1]
		}
	} else {
		cmd := line
		if i := indexOutsideQuotes(line, []byte(s.delim)); i >= 0 {
			cmd, consume = line[:i], i+len(s.delim)
		}
		arg = string(cmd[3:])
	}
	s.line += bytes.Count(peek[:consume], []byte("\n"))
	if _, err := s.r.Discard(consume); err != nil {
		return false, err
	}
	if isUse {
		if name, ok := useArg(arg); ok {
			s.schema = name
		}
	}
	return true, nil
}

// indexOutsideQuotes is the first place of sep in line outside a quoted name or string
// (backticks, double or single quotes; a doubled quote stays inside), -1 for none: USE
// `we;ird` took the rest of the file as its argument, cut at the quoted ';'.
func indexOutsideQuotes(line, sep []byte) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote opens again at the next byte
			}
		case c == '`' || c == '"' || c == '\'':
			quote = c
		case bytes.HasPrefix(line[i:], sep):
			return i
		}
	}
	return -1
}

func (s *sqlFile) piece(buf []byte, start int, tooLong bool) Statement {
	return Statement{SQL: strings.TrimSpace(string(buf)), Schema: s.schema, Line: start, TooLong: tooLong}
}
