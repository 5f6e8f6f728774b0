package connection

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

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
// mysql client does on Unix; MySQL's login path file comes after them all (LoginFile). The
// directory after the global ones is $MARIADB_HOME's, else $MYSQL_HOME's, as MariaDB's
// clients read it (MySQL's know only MYSQL_HOME, and no one sets MARIADB_HOME for them).
func DefaultOptionFiles(home string) []string {
	files := []string{"/etc/my.cnf", "/etc/mysql/my.cnf"}
	mh, set := os.LookupEnv("MARIADB_HOME") // set but empty, it still hides MYSQL_HOME
	if !set {
		mh = os.Getenv("MYSQL_HOME")
	}
	if mh != "" {
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
	// LoginPath is a group of the login path file to read too (--login-path).
	LoginPath string
	// Warn receives what the clients warn about and skip; nil prints it on stderr.
	Warn func(msg string)
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
// malformed file, is a usage error naming the file. What the clients skip with a warning
// (a world-writable file, a missing !include, includes nested too deep) is skipped so
// here, with the warning on stderr (set.Warn).
func ReadOptionFiles(set OptionFileSet, groups []string) ([]OptionValue, error) {
	files, required := set.Files()
	r := optionReader{want: map[string]bool{}, warn: set.Warn}
	if r.warn == nil {
		r.warn = func(msg string) { fmt.Fprintln(os.Stderr, "innowarm: Warning: "+msg) }
	}
	for _, g := range groups {
		r.want[strings.ToLower(g)] = true
	}
	var out []OptionValue
	for _, f := range files {
		vals, err := r.read(f, 0)
		var oe *openError
		if errors.As(err, &oe) && oe.path == f && errors.Is(err, fs.ErrNotExist) && !required[f] {
			continue
		}
		if err != nil {
			return nil, exitcode.UsageError(err)
		}
		out = append(out, vals...)
	}
	// MySQL's client reads the login path file after every other, even under
	// --defaults-file and --no-defaults ("to give passwords in a safer way"); innowarm
	// keeps --no-defaults free of it unless --login-path asks for it.
	if set.NoDefaults && set.LoginPath == "" {
		return out, nil
	}
	if set.LoginPath != "" {
		r.want[strings.ToLower(set.LoginPath)] = true
	}
	vals, err := r.readLoginFile(LoginFile(set.Home))
	if err != nil {
		return nil, exitcode.UsageError(err)
	}
	return append(out, vals...), nil
}

// maxIncludeDepth is the clients' max_recursion_level: the directives of a file this deep
// in includes are skipped, with a warning.
const maxIncludeDepth = 10

// optionReader reads option files and the files they include.
type optionReader struct {
	want map[string]bool
	warn func(string)
}

// read returns the wanted groups' settings of the file at path and of the files it
// includes, in the order the clients apply them.
func (r optionReader) read(path string, depth int) ([]OptionValue, error) {
	raw, err := r.readFile(path)
	if err != nil || raw == nil {
		return nil, err
	}
	entries, err := parseOptionText(path, raw, r.want)
	if err != nil {
		return nil, err
	}
	// An included file's settings go where its directive stands, as in the clients: a
	// setting after "!include" overrides the included one, a setting before it is
	// overridden.
	var out []OptionValue
	for _, e := range entries {
		switch {
		case e.directive == "":
			if r.want[e.value.Group] {
				out = append(out, e.value)
			}
		case depth >= maxIncludeDepth:
			r.warn(fmt.Sprintf("option file %s line %d: skipped %q: includes nest more than %d deep (a file that includes itself?)", path, e.line, e.directive, maxIncludeDepth))
		case e.dir:
			names, err := cnfFiles(e.include)
			if err != nil {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: %s: cannot read the directory %q: %w", path, e.line, e.directive, e.include, err))
			}
			for _, name := range names {
				vals, err := r.readIncluded(path, e, name, depth)
				if err != nil {
					return nil, err
				}
				out = append(out, vals...)
			}
		default:
			vals, err := r.readIncluded(path, e, e.include, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, vals...)
		}
	}
	return out, nil
}

// readIncluded reads a file that an !include or !includedir names. One that cannot be
// opened is skipped, as both clients do (the mysql client with a warning, which innowarm
// gives too): a typo'd path does not stop the client, nor should it stop innowarm.
func (r optionReader) readIncluded(from string, e optionEntry, name string, depth int) ([]OptionValue, error) {
	vals, err := r.read(name, depth+1)
	var oe *openError
	if errors.As(err, &oe) && oe.path == name {
		hint := ""
		if strings.Contains(name, "#") {
			// MariaDB's clients take the rest of the line as the path, comment and all
			// (MySQL's cut the comment).
			hint = " (a '#' comment on an !include line is part of the path to MariaDB's clients)"
		}
		cause := oe.err
		var pe *fs.PathError
		if errors.As(cause, &pe) {
			cause = pe.Err // the path is in the message already
		}
		r.warn(fmt.Sprintf("option file %s line %d: %s: cannot read %q, skipped: %v%s", from, e.line, e.directive, name, cause, hint))
		return nil, nil
	}
	return vals, err
}

// openError is an option file that could not be opened: an error for a file the user
// named, a file skipped for a default file that does not exist or an included one.
type openError struct {
	path string
	err  error
}

func (e *openError) Error() string {
	if errors.Is(e.err, fs.ErrNotExist) {
		return fmt.Sprintf("option file %s does not exist: check --defaults-file/--defaults-extra-file: %v", e.path, e.err)
	}
	return fmt.Sprintf("cannot read option file %s: %v (check its permissions)", e.path, e.err)
}

func (e *openError) Unwrap() error { return e.err }

// readFile reads an option file; it returns nil and no error for a world-writable one,
// which the clients ignore (with a warning) because anyone could have put a server or
// a password in it.
func (r optionReader) readFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &openError{path, err}
	}
	if st.IsDir() {
		return nil, &openError{path, syscall.EISDIR}
	}
	// A world-writable device (--defaults-file=/dev/null) is not the clients' concern.
	if st.Mode().IsRegular() && st.Mode().Perm()&0o002 != 0 {
		r.warn(fmt.Sprintf("world-writable option file %s is ignored, as the mysql and mariadb clients ignore it (chmod o-w %s)", path, path))
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &openError{path, err}
	}
	return raw, nil
}

// cnfFiles lists the files an !includedir reads, in name order: on Unix both clients read
// only *.cnf there (*.ini too only on Windows), so a my.ini left beside them is not theirs
// to read.
func cnfFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && filepath.Ext(e.Name()) == ".cnf" {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(names)
	return names, nil
}

// optionEntry is one setting of an option file, or one !include or !includedir directive,
// whose files are read at that point.
type optionEntry struct {
	value     OptionValue
	directive string // the directive as written, for messages; "" for a setting
	include   string // the file or directory it names
	dir       bool   // !includedir
	line      int
}

// parseDirective reads a line that starts with '!' as the clients do: '!' and blanks,
// then "includedir" or "include" and at least one blank, then the path, which is the rest
// of the line with the blanks around it trimmed: spaces inside it, quotes and any '#' are
// part of it. Any other directive is ignored, as both clients ignore it (ok false); a
// directive without a path is an error in both.
func parseDirective(t string) (include string, dir, ok bool, err error) {
	rest := strings.TrimLeftFunc(t[1:], isOptionSpace)
	for _, kw := range []string{"includedir", "include"} {
		arg, found := strings.CutPrefix(rest, kw)
		if !found || arg == "" || !isOptionSpace(rune(arg[0])) {
			continue
		}
		path := strings.TrimFunc(arg, isOptionSpace)
		if path == "" {
			return "", false, false, fmt.Errorf("'!%s' without a file or directory", kw)
		}
		return path, kw == "includedir", true, nil
	}
	return "", false, false, nil
}

// parseOptionText reads an option file as the mysql and mariadb clients do
// (search_default_file_with_buffer in mysys/my_default.c), so that both read the same
// password from the same line; it returns every group's settings and the !include /
// !includedir directives, in file order. A setting the clients would refuse is an error
// only in the groups wanted: the client ignores another program's groups.
func parseOptionText(path string, raw []byte, want map[string]bool) ([]optionEntry, error) {
	var out []optionEntry
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	group, inGroup := "", false
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimLeftFunc(sc.Text(), isOptionSpace)
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
		case t[0] == '!':
			include, dir, ok, err := parseDirective(t)
			if err != nil {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: %w", path, n, err))
			}
			if ok {
				out = append(out, optionEntry{directive: strings.TrimRightFunc(t, isOptionSpace), include: include, dir: dir, line: n})
			}
		case t[0] == '[':
			// The client reads the name up to the first ']', trims the blanks before the
			// ']' only, and ignores the rest of the line: "[ client]" is not [client] to
			// it, and "[]" is a group no program reads.
			end := strings.IndexByte(t, ']')
			if end < 0 {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: bad group header %q (expected [group])", path, n, strings.TrimSpace(t)))
			}
			group, inGroup = strings.ToLower(strings.TrimRightFunc(t[1:end], isOptionSpace)), true
		default:
			if !inGroup {
				return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: %q is outside any [group]", path, n, strings.TrimSpace(t)))
			}
			key, value, hasValue := splitOptionLine(t)
			if want[group] {
				if !hasValue && (key == "" || strings.ContainsAny(key, " \t\"'")) {
					return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: cannot read %q (expected key=value or a lone key)", path, n, strings.TrimSpace(t)))
				} else if hasValue && key == "" {
					return nil, exitcode.UsageError(fmt.Errorf("option file %s line %d: value without a key: %q", path, n, strings.TrimSpace(t)))
				}
			}
			v := OptionValue{Group: group, File: path, Value: value, Bare: !hasValue}
			v.Key, v.Loose = normalizeKey(key)
			out = append(out, optionEntry{value: v, line: n})
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

// LoginFile is where MySQL's mysql_config_editor keeps login paths: $MYSQL_TEST_LOGIN_FILE,
// else ~/.mylogin.cnf ("" without a home).
func LoginFile(home string) string {
	if f := os.Getenv("MYSQL_TEST_LOGIN_FILE"); f != "" {
		return f
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".mylogin.cnf")
}

// loginKeyLen is the length of the key stored in the login path file, after 4 unused bytes.
const loginKeyLen = 20

// readLoginFile reads the wanted groups of a login path file: no file is no settings. The
// MySQL client skips, with a warning, one that anyone but its owner may read, or its owner
// execute (it holds passwords), and so does innowarm; and one it cannot decrypt.
func (r optionReader) readLoginFile(path string) ([]OptionValue, error) {
	if path == "" {
		return nil, nil
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &openError{path, err}
	}
	if st.IsDir() {
		r.warn(fmt.Sprintf("login path file %s is a directory, skipped", path))
		return nil, nil
	}
	if st.Mode().Perm()&0o177 != 0 {
		r.warn(fmt.Sprintf("login path file %s is ignored: it should be readable and writable by its owner only, as the mysql client requires (chmod 600 %s)", path, path))
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &openError{path, err}
	}
	text, err := decryptLoginFile(raw)
	if err != nil {
		r.warn(fmt.Sprintf("login path file %s is skipped: %v (mysql_config_editor print --all shows what it holds)", path, err))
		return nil, nil
	}
	entries, err := parseOptionText(path, text, r.want)
	if err != nil {
		return nil, err
	}
	var out []OptionValue
	for _, e := range entries {
		// mysql_config_editor writes settings only; a directive there is not the client's.
		if e.directive == "" && r.want[e.value.Group] {
			out = append(out, e.value)
		}
	}
	return out, nil
}

// decryptLoginFile reads mysql_config_editor's format (mysys/my_default.c,
// read_and_decrypt_mylogin_file): 4 unused bytes, a 20-byte key, then for each line of
// option-file text its encrypted length (4 bytes, little-endian) and the line, encrypted
// with AES-128 in ECB mode and PKCS#7 padding under the key folded to 16 bytes by XOR. The
// key is beside the data: this hides passwords from a glance, not from their owner.
func decryptLoginFile(raw []byte) ([]byte, error) {
	if len(raw) < 4+loginKeyLen {
		return nil, errors.New("too short for a login path file")
	}
	var key [16]byte
	for i, b := range raw[4 : 4+loginKeyLen] {
		key[i%16] ^= b
	}
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	var text []byte
	for rest := raw[4+loginKeyLen:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("truncated")
		}
		n := int(binary.LittleEndian.Uint32(rest))
		rest = rest[4:]
		if n == 0 || n%aes.BlockSize != 0 || n > len(rest) {
			return nil, errors.New("not a login path file (a chunk of a bad length)")
		}
		line := make([]byte, n)
		for i := 0; i < n; i += aes.BlockSize {
			block.Decrypt(line[i:i+aes.BlockSize], rest[i:i+aes.BlockSize])
		}
		pad := int(line[n-1])
		if pad == 0 || pad > aes.BlockSize || !bytes.Equal(line[n-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
			return nil, errors.New("not a login path file (bad padding: another key?)")
		}
		text = append(text, line[:n-pad]...)
		rest = rest[n:]
	}
	return text, nil
}
