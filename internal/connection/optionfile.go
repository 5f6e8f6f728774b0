package connection

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// OptionGroups are the option-file groups innowarm reads, in the mysql client's manner:
// [client] is shared with every MySQL program, [innowarm] is ours.
var OptionGroups = []string{"client", "innowarm"}

// OptionValue is one setting from an option file, with where it came from.
type OptionValue struct {
	Group string
	Key   string // normalized: lower case, '-' for '_', "loose-" removed
	Value string
	Bare  bool
	Loose bool
	File  string
}

// DefaultOptionFiles are read in this order (later files override earlier ones), as the
// mysql client does on Unix; ~/.mylogin.cnf is encrypted and not read.
func DefaultOptionFiles(home string) []string {
	files := []string{"/etc/my.cnf", "/etc/mysql/my.cnf"}
	if mh := os.Getenv("MYSQL_HOME"); mh != "" {
		files = append(files, filepath.Join(mh, "my.cnf"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".my.cnf"))
	}
	return files
}

// OptionFileSet says which files to read, following --no-defaults, --defaults-file and
// --defaults-extra-file.
type OptionFileSet struct {
	NoDefaults   bool
	DefaultsFile string
	ExtraFile    string
	Home         string
}

// Files lists the option files to read and whether each must exist.
func (s OptionFileSet) Files() (files []string, required map[string]bool) {
	required = map[string]bool{}
	if s.NoDefaults {
		return nil, required
	}
	if s.DefaultsFile != "" {
		required[s.DefaultsFile] = true
		return []string{s.DefaultsFile}, required
	}
	defaults := DefaultOptionFiles(s.Home)
	if s.ExtraFile == "" {
		return defaults, required
	}
	// The extra file comes after the global files and before the user's own ~/.my.cnf.
	required[s.ExtraFile] = true
	n := len(defaults)
	if s.Home != "" {
		n--
	}
	files = append(append(append([]string{}, defaults[:n]...), s.ExtraFile), defaults[n:]...)
	return files, required
}

// ReadOptionFiles returns the values of the wanted groups from every file, in reading order.
// A missing default file is skipped; a missing or unreadable file the user named, or any
// malformed file, is a usage error naming the file.
func ReadOptionFiles(set OptionFileSet, groups []string) ([]OptionValue, error) {
	files, required := set.Files()
	var out []OptionValue
	for _, f := range files {
		vals, err := readOptionFile(f, groups, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && !required[f] {
				continue
			}
			return nil, err
		}
		out = append(out, vals...)
	}
	return out, nil
}

func readOptionFile(path string, groups []string, depth int) ([]OptionValue, error) {
	if depth > 10 {
		return nil, exitcode.UsageError(fmt.Errorf("option file %s: !include nested more than 10 deep", path))
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, exitcode.UsageError(fmt.Errorf("option file %s does not exist: check --defaults-file/--defaults-extra-file: %w", path, err))
		}
		return nil, exitcode.UsageError(fmt.Errorf("cannot read option file %s: %w (check its permissions)", path, err))
	}
	want := map[string]bool{}
	for _, g := range groups {
		want[strings.ToLower(g)] = true
	}
	entries, err := parseOptionText(path, raw)
	if err != nil {
		return nil, err
	}
	// An included file's settings go where its directive stands, as in the clients: a
	// setting after "!include" overrides the included one, a setting before it is
	// overridden.
	var out []OptionValue
	for _, e := range entries {
		if e.include == "" {
			if want[e.value.Group] {
				out = append(out, e.value)
			}
			continue
		}
		vals, err := readOptionFile(e.include, groups, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, vals...)
	}
	return out, nil
}

// optionEntry is one setting of an option file, or one file that a !include or
// !includedir directive reads at that point.
type optionEntry struct {
	value   OptionValue
	include string
}

// parseOptionText reads an option file as the mysql and mariadb clients do
// (search_default_file_with_buffer in mysys/my_default.c), so that both read the same
// password from the same line; it returns every group's settings and the !include /
// !includedir targets, in file order.
func parseOptionText(path string, raw []byte) ([]optionEntry, error) {
	var out []optionEntry
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	group, inGroup := "", false
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimLeftFunc(sc.Text(), isOptionSpace)
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
		case t[0] == '!':
			fields := strings.Fields(t)
			if len(fields) != 2 || (fields[0] != "!include" && fields[0] != "!includedir") {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: unknown directive %q (expected !include FILE or !includedir DIR)", path, n, strings.TrimSpace(t)))
			}
			if fields[0] == "!include" {
				out = append(out, optionEntry{include: fields[1]})
				continue
			}
			entries, err := os.ReadDir(fields[1])
			if err != nil {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: cannot read %s: %w", path, n, fields[1], err))
			}
			// On Unix both clients read only *.cnf there (*.ini too only on Windows): a
			// my.ini left beside them is not theirs to read.
			var names []string
			for _, e := range entries {
				if !e.IsDir() && filepath.Ext(e.Name()) == ".cnf" {
					names = append(names, e.Name())
				}
			}
			sort.Strings(names)
			for _, name := range names {
				out = append(out, optionEntry{include: filepath.Join(fields[1], name)})
			}
		case t[0] == '[':
			// The client reads the name up to the first ']' and ignores the rest of the line.
			end := strings.IndexByte(t, ']')
			if end < 0 || strings.TrimSpace(t[1:end]) == "" {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: bad group header %q (expected [group])", path, n, strings.TrimSpace(t)))
			}
			group, inGroup = strings.ToLower(strings.TrimSpace(t[1:end])), true
		default:
			if !inGroup {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: %q is outside any [group]", path, n, strings.TrimSpace(t)))
			}
			key, value, hasValue := splitOptionLine(t)
			if !hasValue {
				if key == "" || strings.ContainsAny(key, " \t\"'") {
					return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: cannot read %q (expected key=value or a lone key)", path, n, strings.TrimSpace(t)))
				}
			} else if key == "" {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: value without a key: %q", path, n, strings.TrimSpace(t)))
			}
			v := OptionValue{Group: group, File: path, Value: value, Bare: !hasValue}
			v.Key, v.Loose = normalizeKey(key)
			out = append(out, optionEntry{value: v})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, exitcode.UsageError(fmt.Errorf("option file %s: %w", path, err))
	}
	return out, nil
}

// splitOptionLine splits an option line (leading space removed) into its key and value
// exactly as the client does: an end comment is cut first, the value is trimmed, one pair
// of matching quotes around it is removed, and its escapes are read.
func splitOptionLine(line string) (key, value string, hasValue bool) {
	line = removeEndComment(line)
	eq := strings.IndexByte(line, '=')
	if eq < 0 {
		return strings.TrimRightFunc(line, isOptionSpace), "", false
	}
	key = strings.TrimRightFunc(line[:eq], isOptionSpace)
	v := strings.TrimFunc(line[eq+1:], isOptionSpace)
	if len(v) > 1 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return key, unescapeOptionValue(v), true
}

// removeEndComment cuts line at the first '#' outside single or double quotes, as
// remove_end_comment in mysys/my_default.c does: unquoted, "password=Sec#ret" is "Sec"
// to the client whatever comes before the '#'. A backslash escapes a quote only inside
// quotes.
func removeEndComment(line string) string {
	var quote byte
	escape := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if (c == '\'' || c == '"') && !escape {
			if quote == 0 {
				quote = c
			} else if quote == c {
				quote = 0
			}
		}
		if quote == 0 && c == '#' {
			return line[:i]
		}
		escape = quote != 0 && c == '\\' && !escape
	}
	return line
}

// unescapeOptionValue reads the client's escapes: \n \t \r \b \s (space) \" \' \\; any
// other backslash, and one at the very end, stays as written.
func unescapeOptionValue(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i == len(v)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 's':
			b.WriteByte(' ')
		case '"', '\'', '\\':
			b.WriteByte(v[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// isOptionSpace is my_isspace for latin1, the set the client trims.
func isOptionSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

// normalizeKey applies the option-file spelling rules: '_' and '-' are the same, and a
// "loose-" prefix means "ignore if unknown".
func normalizeKey(k string) (key string, loose bool) {
	key = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(k), "_", "-"))
	if strings.HasPrefix(key, "loose-") {
		return strings.TrimPrefix(key, "loose-"), true
	}
	return key, false
}
