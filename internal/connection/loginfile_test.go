package connection

import (
	"bytes"
	"crypto/aes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLoginFile writes text as mysql_config_editor does (decryptLoginFile's format), mode
// 0600, at dir/name.
func writeLoginFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	raw := make([]byte, 4, 4+loginKeyLen)
	for i := 0; i < loginKeyLen; i++ {
		raw = append(raw, byte(i*7+3)&0x1f)
	}
	var key [16]byte
	for i, b := range raw[4:] {
		key[i%16] ^= b
	}
	block, err := aes.NewCipher(key[:])
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		pad := aes.BlockSize - len(line)%aes.BlockSize
		plain := append([]byte(line), bytes.Repeat([]byte{byte(pad)}, pad)...)
		raw = binary.LittleEndian.AppendUint32(raw, uint32(len(plain)))
		for i := 0; i < len(plain); i += aes.BlockSize {
			out := make([]byte, aes.BlockSize)
			block.Encrypt(out, plain[i:i+aes.BlockSize])
			raw = append(raw, out...)
		}
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// mysqlPrintDefaults is MySQL's my_print_defaults (which reads login path files;
// MariaDB's does not), when a mysql-9.7 root is provisioned here.
func mysqlPrintDefaults(t *testing.T) []string {
	t.Helper()
	r, ok := clientReaders(t)["mysql-9.7 my_print_defaults"]
	if !ok {
		t.Log("MySQL's my_print_defaults is not here: checked against the expected lines only")
	}
	return r
}

// A login path that mysql_config_editor (MySQL 9.7.4) wrote: innowarm had no --login-path
// and never read ~/.mylogin.cnf, so a MySQL DBA's "mysql --login-path=prod" worked and
// innowarm connected as the OS user without a password.
func TestLoginPathOfMySQLConfigEditor(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "mylogin-9.7.cnf"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	login := filepath.Join(home, ".mylogin.cnf")
	// git keeps no read bits: the copy is the owner's alone, as mysql_config_editor's.
	if err := os.WriteFile(login, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	o, _, err := resolve(t, []string{"--no-defaults", "--login-path=prod"}, nil, home)
	if err != nil {
		t.Fatal(err)
	}
	if o.User != "produser" || o.Password != `se cret"pw#x` || o.Host != "db1" || o.Port != 3307 || o.Sources["password"] != login {
		t.Errorf("login path prod read as user %q password %q host %q port %d (password from %q)", o.User, o.Password, o.Host, o.Port, o.Sources["password"])
	}
	if r := mysqlPrintDefaults(t); r != nil {
		t.Setenv("MYSQL_TEST_LOGIN_FILE", login)
		want, stderr, ok := readWithClient(t, r, "/dev/null", []string{"prod"})
		vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: "/dev/null", LoginPath: "prod"}, nil)
		if !ok || err != nil || fmt.Sprintf("%q", optionLines(vals)) != fmt.Sprintf("%q", want) {
			t.Errorf("innowarm read %q (%v), MySQL's my_print_defaults %q (%s)", optionLines(vals), err, want, stderr)
		}
	}
}

// The login path file is read after every other option file, even under --defaults-file,
// as MySQL's client does; under --no-defaults only when --login-path asks for it. One that
// others may read is skipped with a warning, as the client skips it.
func TestLoginFileOrderAndPermissions(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home, ".my.cnf", "[client]\nuser=mycnf\npassword=mycnf-pw\nport=3301\n")
	login := writeLoginFile(t, home, ".mylogin.cnf", "[client]\npassword = \"login-pw\"\n[innowarm]\nport = 3302\n[other]\nport = 3303\n")
	extra := writeFile(t, home, "only.cnf", "[client]\nuser=only\n")
	for _, tc := range []struct {
		args              []string
		user, password    string
		port              int
		passwordFromLogin bool
	}{
		{nil, "mycnf", "login-pw", 3302, true},
		{[]string{"--defaults-file=" + extra}, "only", "login-pw", 3302, true},
		{[]string{"--no-defaults"}, "osuser", "", 3306, false},
		{[]string{"--no-defaults", "--login-path=other"}, "osuser", "login-pw", 3303, true},
		{[]string{"--login-path=other", "-P", "3304"}, "mycnf", "login-pw", 3304, true},
	} {
		o, _, err := resolve(t, tc.args, nil, home)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if o.User != tc.user || o.Password != tc.password || o.Port != tc.port || (o.Sources["password"] == login) != tc.passwordFromLogin {
			t.Errorf("%v: user %q password %q port %d (password from %q), want %q %q %d", tc.args, o.User, o.Password, o.Port, o.Sources["password"], tc.user, tc.password, tc.port)
		}
	}
	if r := mysqlPrintDefaults(t); r != nil {
		t.Setenv("MYSQL_TEST_LOGIN_FILE", login)
		want, stderr, ok := readWithClient(t, r, extra, []string{"client", "innowarm", "other"})
		vals, err := ReadOptionFiles(OptionFileSet{DefaultsFile: extra, LoginPath: "other"}, OptionGroups)
		if !ok || err != nil || fmt.Sprintf("%q", optionLines(vals)) != fmt.Sprintf("%q", want) {
			t.Errorf("innowarm read %q (%v), MySQL's my_print_defaults %q (%s)", optionLines(vals), err, want, stderr)
		}
		t.Setenv("MYSQL_TEST_LOGIN_FILE", "")
	}

	if err := os.Chmod(login, 0o640); err != nil {
		t.Fatal(err)
	}
	var warned []string
	vals, err := ReadOptionFiles(OptionFileSet{Home: home, DefaultsFile: extra, Warn: func(m string) { warned = append(warned, m) }}, OptionGroups)
	if err != nil || fmt.Sprintf("%q", optionLines(vals)) != fmt.Sprintf("%q", []string{"--user=only"}) || len(warned) != 1 || !strings.Contains(warned[0], "chmod 600") {
		t.Errorf("a login file others may read: read %q (%v), warnings %q; want it skipped with a warning", optionLines(vals), err, warned)
	}
	if r := mysqlPrintDefaults(t); r != nil {
		t.Setenv("MYSQL_TEST_LOGIN_FILE", login)
		if want, _, ok := readWithClient(t, r, extra, OptionGroups); !ok || fmt.Sprintf("%q", want) != fmt.Sprintf("%q", optionLines(vals)) {
			t.Errorf("MySQL's my_print_defaults read %q (ok %v) from a login file others may read, innowarm %q", want, ok, optionLines(vals))
		}
	}
}

// A login path file that is not one (or another key's) is skipped with a warning, not
// read as garbage or a crash.
func TestLoginFileCorrupt(t *testing.T) {
	for _, raw := range [][]byte{nil, make([]byte, 10), append(make([]byte, 24), 16, 0, 0, 0, 1, 2, 3), append(make([]byte, 24), bytes.Repeat([]byte{7}, 20)...)} {
		if _, err := decryptLoginFile(raw); err == nil {
			t.Errorf("%x: decrypted", raw)
		}
	}
}
