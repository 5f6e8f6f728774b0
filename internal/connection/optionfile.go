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

	"gopkg.in/ini.v1"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// OptionGroups are the option-file groups innowarm reads, in the mysql client's manner:
// [client] is shared with every MySQL program, [innowarm] is ours.
var OptionGroups = []string{"client", "innowarm"}

// bareValue marks a key written without "=value" (e.g. a lone "password" line, which makes
// the mysql client prompt). ini cannot tell "password" from "password=true", so bare keys are
// rewritten to carry this marker before parsing.
const bareValue = "\x00bare"

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
	text, includes, err := prepareOptionText(path, raw)
	if err != nil {
		return nil, err
	}
	f, err := ini.LoadSources(ini.LoadOptions{
		AllowBooleanKeys:          true,
		SpaceBeforeInlineComment:  true,
		UnescapeValueDoubleQuotes: true,
		IgnoreContinuation:        true,
		AllowNonUniqueSections:    true,
		InsensitiveSections:       true,
		KeyValueDelimiters:        "=",
	}, text)
	if err != nil {
		return nil, exitcode.UsageError(fmt.Errorf("option file %s is malformed: %w", path, err))
	}
	want := map[string]bool{}
	for _, g := range groups {
		want[strings.ToLower(g)] = true
	}
	var out []OptionValue
	for _, sec := range f.Sections() {
		name := strings.ToLower(strings.TrimSpace(sec.Name()))
		if !want[name] {
			continue
		}
		for _, k := range sec.Keys() {
			v := OptionValue{Group: name, File: path}
			v.Key, v.Loose = normalizeKey(k.Name())
			v.Value = k.Value()
			if v.Value == bareValue {
				v.Value, v.Bare = "", true
			}
			out = append(out, v)
		}
	}
	for _, inc := range includes {
		vals, err := readOptionFile(inc, groups, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, vals...)
	}
	return out, nil
}

// prepareOptionText validates the lines ini would silently misread, marks bare keys, and
// collects !include / !includedir targets (read after the including file, as mysql does).
func prepareOptionText(path string, raw []byte) ([]byte, []string, error) {
	var out bytes.Buffer
	var includes []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	inSection := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
		case t[0] == '!':
			fields := strings.Fields(t)
			if len(fields) != 2 || (fields[0] != "!include" && fields[0] != "!includedir") {
				return nil, nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: unknown directive %q (expected !include FILE or !includedir DIR)", path, n, t))
			}
			if fields[0] == "!include" {
				includes = append(includes, fields[1])
			} else {
				entries, err := os.ReadDir(fields[1])
				if err != nil {
					return nil, nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: cannot read %s: %w", path, n, fields[1], err))
				}
				var names []string
				for _, e := range entries {
					if !e.IsDir() && (strings.HasSuffix(e.Name(), ".cnf") || strings.HasSuffix(e.Name(), ".ini")) {
						names = append(names, filepath.Join(fields[1], e.Name()))
					}
				}
				sort.Strings(names)
				includes = append(includes, names...)
			}
			line = ""
		case t[0] == '[':
			if !strings.HasSuffix(t, "]") || len(t) < 3 {
				return nil, nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: bad group header %q (expected [group])", path, n, t))
			}
			inSection = true
		default:
			if !inSection {
				return nil, nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: %q is outside any [group]", path, n, t))
			}
			if !strings.Contains(t, "=") {
				if strings.ContainsAny(t, " \t\"'") {
					return nil, nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: cannot read %q (expected key=value or a lone key)", path, n, t))
				}
				line = t + "=" + bareValue
			} else if strings.HasPrefix(t, "=") {
				return nil, nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: value without a key: %q", path, n, t))
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, nil, exitcode.UsageError(fmt.Errorf("option file %s: %w", path, err))
	}
	return out.Bytes(), includes, nil
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
