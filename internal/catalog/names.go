package catalog

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// filenameSafe are the characters InnoDB keeps as they are in its internal names; every
// other character is written as '@' and a code (the server's "filename" character set).
func filenameSafe(r rune) bool {
	return r < 128 && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
}

// lettersWithShortCode are the code-point ranges where the filename character set may use a
// 3-character code ('@' + two characters) instead of '@' + 4 hex digits. Which letters get a
// short code is table-driven in the server; without that table both forms are accepted. The
// code's two characters are '0' + code/80 and '0' + code%80 (my_wc_mb_filename), each from
// '0' to DEL: "@1o" for ü, "@ob" for ǆ, "@r9" for ⅻ.
func lettersWithShortCode(r rune) bool {
	return r >= 0x00C0 && r <= 0x05FF || r >= 0x1E00 && r <= 0x1FFF || r >= 0x2160 && r <= 0x217F ||
		r >= 0x24B0 && r <= 0x24EF || r >= 0xFF20 && r <= 0xFF5F
}

// filenamePattern is a regular expression matching name as InnoDB writes it in
// INNODB_SYS_TABLES.NAME ("db/t#P#p0"): exact for ASCII, and for letters that may have a
// short code, either form.
func filenamePattern(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case filenameSafe(r):
			b.WriteString(regexp.QuoteMeta(string(r)))
		case r > 0xFFFF:
			// Outside the BMP the server cannot store the name in a file name at all.
			b.WriteString(`@[0-9a-f]{4}`)
		case lettersWithShortCode(r):
			fmt.Fprintf(&b, `(?:@%04x|@[\x30-\x7f]{2})`, r)
		default:
			fmt.Fprintf(&b, `@%04x`, r)
		}
	}
	return b.String()
}

// Pattern selects tables: "db.t*", "db.*", "*.orders", or "t*" (any selected schema).
type Pattern struct {
	Schema string // glob; "" means any selected schema
	Table  string // glob
	Raw    string
}

// ParsePattern reads "schema.table" with shell-style globs (* ? [..]); a backslash escapes
// a literal '.', '*' or '?' in names that contain them. Either part may also be written
// quoted as SQL quotes it, `name` with a backtick doubled, as innowarm prints names: it is
// then the name itself, with no glob.
func ParsePattern(s string) (Pattern, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return Pattern{}, fmt.Errorf("empty table pattern")
	}
	if strings.HasPrefix(raw, "`") || strings.Contains(raw, ".`") {
		// Quoted, or else a name with backticks of its own, read as before.
		if p, err := parseQuotedPattern(s, raw); err == nil {
			return p, nil
		}
	}
	dot := -1
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' {
			i++
			continue
		}
		if raw[i] == '.' {
			dot = i
			break
		}
	}
	p := Pattern{Raw: raw, Table: raw}
	if dot >= 0 {
		p.Schema, p.Table = raw[:dot], raw[dot+1:]
	}
	if err := p.check(s); err != nil {
		return Pattern{}, err
	}
	return p, nil
}

// ParsePatterns reads one value of --tables or --exclude: patterns (ParsePattern) separated
// by commas. A comma inside a backtick-quoted name, or after a backslash, is part of the
// name: a list is split as innowarm prints names, not as CSV, whose quotes would refuse a
// name with a '"' in it. An empty value is no pattern, as an empty list.
func ParsePatterns(list string) ([]Pattern, error) {
	if list == "" {
		return nil, nil
	}
	var out []Pattern
	for _, item := range splitList(list, true) {
		p, err := ParsePattern(item)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// SchemaNames reads -D's list of schemas. Each name is taken as given, spaces and all, as
// the mysql client's -D takes it (a schema may begin with a space); the commas that
// separate names are those outside backtick-quoted names, and an item that is one whole
// quoted name (spaces around it aside) is that name, so `a,b` names the schema a,b. Empty
// items are dropped.
func SchemaNames(list string) []string {
	var out []string
	for _, item := range splitList(list, false) {
		if name, ok := unquoteName(strings.TrimSpace(item)); ok {
			item = name
		}
		if item != "" {
			out = append(out, item)
		}
	}
	return out
}

// splitList splits s on the commas outside backtick-quoted names: a backtick opens a quoted
// name that the next backtick closes (a doubled backtick inside a name closes and reopens
// it, so its commas stay inside). A backtick that no later one closes is a character of a
// name. With escapes, a backslash outside quotes keeps the next character, a comma too, in
// the item (the glob reads "\," as a comma).
func splitList(s string, escapes bool) []string {
	var items []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if escapes {
				i++
			}
		case '`':
			if end := strings.IndexByte(s[i+1:], '`'); end >= 0 {
				i += end + 1
			}
		case ',':
			items = append(items, s[start:i])
			start = i + 1
		}
	}
	return append(items, s[start:])
}

// unquoteName reads s as one whole quoted name, `name` with each backtick in it doubled.
func unquoteName(s string) (string, bool) {
	if len(s) < 3 || s[0] != '`' || s[len(s)-1] != '`' {
		return "", false
	}
	inner := s[1 : len(s)-1]
	if strings.Contains(strings.ReplaceAll(inner, "``", ""), "`") {
		return "", false
	}
	return strings.ReplaceAll(inner, "``", "`"), true
}

// parseQuotedPattern reads a pattern of which a part is quoted (`db`.`t`, `db`.t*, t_*).
func parseQuotedPattern(s, raw string) (Pattern, error) {
	literal := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	// part reads one part from rest: a quoted name (its glob escaped) or a glob up to an
	// unescaped '.'.
	part := func(rest string) (glob, after string, err error) {
		if strings.HasPrefix(rest, "`") {
			var name strings.Builder
			for i := 1; i < len(rest); i++ {
				if rest[i] != '`' {
					name.WriteByte(rest[i])
					continue
				}
				if i+1 < len(rest) && rest[i+1] == '`' {
					name.WriteByte('`')
					i++
					continue
				}
				if name.Len() == 0 {
					return "", "", fmt.Errorf("bad table pattern %q: an empty quoted name", s)
				}
				return literal.Replace(name.String()), rest[i+1:], nil
			}
			return "", "", fmt.Errorf("bad table pattern %q: a quoted name without its closing backtick", s)
		}
		for i := 0; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '.':
				return rest[:i], rest[i:], nil
			}
		}
		return rest, "", nil
	}
	first, rest, err := part(raw)
	if err != nil {
		return Pattern{}, err
	}
	p := Pattern{Raw: raw, Table: first}
	switch {
	case rest == "":
	case rest[0] != '.':
		return Pattern{}, fmt.Errorf("bad table pattern %q: expected '.' after the quoted name", s)
	default:
		second, after, err := part(rest[1:])
		if err != nil {
			return Pattern{}, err
		}
		if after != "" {
			return Pattern{}, fmt.Errorf("bad table pattern %q: more than schema.table", s)
		}
		p.Schema, p.Table = first, second
	}
	if err := p.check(s); err != nil {
		return Pattern{}, err
	}
	return p, nil
}

// check says what is wrong with a pattern read from s: a glob that does not parse, or no
// table part.
func (p Pattern) check(s string) error {
	for _, g := range []string{p.Schema, p.Table} {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("bad table pattern %q: %w", s, err)
		}
	}
	if p.Table == "" {
		return fmt.Errorf("bad table pattern %q: no table part (use %s.* for a whole schema)", s, p.Schema)
	}
	return nil
}

// Matches reports whether schema.table is selected by the pattern.
func (p Pattern) Matches(schema, table string) bool {
	if p.Schema != "" {
		if ok, _ := path.Match(p.Schema, schema); !ok {
			return false
		}
	}
	ok, _ := path.Match(p.Table, table)
	return ok
}

// literalSchema returns the schema a pattern names without wildcards, if any.
func (p Pattern) literalSchema() (string, bool) {
	if p.Schema == "" {
		return "", false
	}
	// Each backslash keeps the character after it: `we\\ird` is the schema we\ird, and
	// `a\*b` the schema a*b, not a glob.
	var b strings.Builder
	for i := 0; i < len(p.Schema); i++ {
		switch c := p.Schema[i]; {
		case c == '\\' && i+1 < len(p.Schema):
			i++
		case c == '*' || c == '?' || c == '[':
			return "", false
		}
		b.WriteByte(p.Schema[i])
	}
	return b.String(), true
}
