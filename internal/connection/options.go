// Package connection turns mysql-client style options (flags, environment, option files)
// into a connection to a MariaDB or MySQL server, and gives pinned sessions whose running
// statement is stopped server-side (KILL QUERY) when their context is cancelled.
package connection

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// SSL modes, as the MySQL client names them.
const (
	SSLDisabled       = "DISABLED"
	SSLPreferred      = "PREFERRED"
	SSLRequired       = "REQUIRED"
	SSLVerifyCA       = "VERIFY_CA"
	SSLVerifyIdentity = "VERIFY_IDENTITY"
)

var sslModes = []string{SSLDisabled, SSLPreferred, SSLRequired, SSLVerifyCA, SSLVerifyIdentity}

// DefaultSocketPaths are tried, in order, when host is localhost and no socket was given.
var DefaultSocketPaths = []string{
	"/run/mysqld/mysqld.sock",
	"/var/run/mysqld/mysqld.sock",
	"/var/lib/mysql/mysql.sock",
	"/tmp/mysql.sock",
}

// DefaultSocketsEnv, when set, replaces DefaultSocketPaths: a colon-separated list of the
// sockets to try, or "none". Unlike MYSQL_UNIX_PORT it ranks below option files and flags:
// the test harness sets it so that a run that names no server of its own finds none,
// rather than the machine's.
const DefaultSocketsEnv = "INNOWARM_DEFAULT_SOCKETS"

// Options is a resolved connection request.
type Options struct {
	Host           string
	Port           int
	Socket         string
	Protocol       string // "", "TCP" or "SOCKET"
	User           string
	Password       string
	PasswordPrompt bool // -p without a value, or a lone "password" in an option file
	Database       string
	SSLMode        string
	// sslModeGiven: --ssl-mode (or an option file's ssl, skip-ssl, ssl-mode,
	// ssl-verify-server-cert) chose the mode; else a CA given implies VERIFY_CA.
	sslModeGiven   bool
	SSLCA          string
	SSLCert        string
	SSLKey         string
	ConnectTimeout time.Duration

	// portOnCommandLine makes host=localhost use TCP, as the MariaDB client does since 10.6:
	// the mysql client's silent fallback to the socket connects to the wrong server too often.
	// Only a socket (or --protocol) also on the command line keeps the socket: one from an
	// option file or MYSQL_UNIX_PORT is a standing default, and -P 3307 typed now names
	// another server.
	portOnCommandLine   bool
	socketOnCommandLine bool
	// protocolFromFile: --protocol came from an option file, which -P on the command line
	// overrides as it does the file's socket (as in the MariaDB client).
	protocolFromFile bool
	// defaultSockets replace DefaultSocketPaths when not nil (DefaultSocketsEnv).
	defaultSockets []string
	socketGiven    bool

	// Sources says where each setting came from ("flag", "env MYSQL_PWD", a file path),
	// for error messages; it never holds values.
	Sources map[string]string
}

// PasswordPromptSentinel is what a bare -p / --password leaves in the flag.
const PasswordPromptSentinel = "\x01prompt"

// Flags holds the raw mysql-style flags of one command, or of one end of a command that
// talks to two servers (prefixed flags).
type Flags struct {
	fs     *pflag.FlagSet
	prefix string   // "" or e.g. "source-"
	groups []string // option-file groups read, in order
	// commandGroups are the groups whose settings that are not connection options go to the
	// command's own flags (Resolve's second result): [innowarm], and those of ReadAlso.
	commandGroups  map[string]bool
	host           string
	port           int
	socket         string
	protocol       string
	user           string
	password       string
	database       string
	databaseShort  string
	sslMode        string
	ssl            bool // the mariadb client's spellings of a mode: --ssl[=0], --skip-ssl,
	skipSSL        bool // --ssl-verify-server-cert
	verifyServer   bool
	sslCA          string
	sslCert        string
	sslKey         string
	connectTimeout time.Duration
	noDefaults     bool
	defaultsFile   string
	extraFile      string
	loginPath      string
	groupSuffix    string
}

// BindFlags registers the mysql client's connection flags on fs.
func BindFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs, groups: OptionGroups, commandGroups: map[string]bool{"innowarm": true}}
	fs.StringVarP(&f.host, "host", "h", "localhost", "server host; localhost means the Unix socket, as in the mysql client")
	fs.IntVarP(&f.port, "port", "P", 3306, "TCP port (with host localhost, giving -P switches to TCP, as the MariaDB client does)")
	fs.StringVarP(&f.socket, "socket", "S", "", "Unix socket file (default: [client] socket=, $MYSQL_UNIX_PORT, else the first that exists of "+strings.Join(DefaultSocketPaths, ", ")+")")
	fs.StringVar(&f.protocol, "protocol", "", "TCP or SOCKET (default: SOCKET for localhost, else TCP)")
	fs.StringVarP(&f.user, "user", "u", "", "user name (default: your OS user)")
	fs.StringVarP(&f.password, "password", "p", "", "password; -p alone asks for it on the terminal without echo (or use MYSQL_PWD, ~/.my.cnf)")
	fs.Lookup("password").NoOptDefVal = PasswordPromptSentinel
	fs.StringVarP(&f.database, "database", "D", "", "database (schema) names, comma-separated where a command takes several")
	fs.StringVarP(&f.databaseShort, "db", "d", "", "same as -D (the 2017 mysql-warmup tool spelled it -d)")
	_ = fs.MarkHidden("db")
	f.bindTLSAndFiles()
	return f
}

// BindPrefixedFlags registers one end's connection flags of a command that talks to two
// servers: --END-host, --END-port, --END-socket, --END-user, --END-password, --END-ssl-*,
// with no short forms. Option files give [client] then [innowarm-END]; --no-defaults,
// --defaults-file and --defaults-extra-file are shared by both ends.
func BindPrefixedFlags(fs *pflag.FlagSet, end string) *Flags {
	f := &Flags{fs: fs, prefix: end + "-", groups: []string{"client", "innowarm-" + end}, commandGroups: map[string]bool{"innowarm": true}}
	fs.StringVar(&f.host, f.prefix+"host", "localhost", "the "+end+" server's host; localhost means the Unix socket")
	fs.IntVar(&f.port, f.prefix+"port", 3306, "the "+end+" server's TCP port")
	fs.StringVar(&f.socket, f.prefix+"socket", "", "the "+end+" server's Unix socket file")
	fs.StringVar(&f.protocol, f.prefix+"protocol", "", "TCP or SOCKET")
	fs.StringVar(&f.user, f.prefix+"user", "", "user name on the "+end+" server (default: your OS user)")
	fs.StringVar(&f.password, f.prefix+"password", "", "password on the "+end+" server; alone, asks for it on the terminal (or [innowarm-"+end+"] password= in ~/.my.cnf)")
	fs.Lookup(f.prefix + "password").NoOptDefVal = PasswordPromptSentinel
	f.bindTLSAndFiles()
	return f
}

// ReadAlso reads groups too, after [client] and before [innowarm] (a tool's own groups:
// mysqlslap's for bench, whose users keep [mysqlslap] settings): their connection options
// apply as [client]'s do, and their other settings go to the command's flags as
// [innowarm]'s.
func (f *Flags) ReadAlso(groups ...string) {
	out := make([]string, 0, len(f.groups)+len(groups))
	for _, g := range f.groups {
		if g == "innowarm" {
			out = append(out, groups...)
		}
		out = append(out, g)
	}
	f.groups = out
	for _, g := range groups {
		f.commandGroups[g] = true
	}
}

func (f *Flags) bindTLSAndFiles() {
	fs, p := f.fs, f.prefix
	fs.StringVar(&f.sslMode, p+"ssl-mode", "", "DISABLED, PREFERRED (default), REQUIRED, VERIFY_CA or VERIFY_IDENTITY")
	// The mariadb client has no --ssl-mode: its users type these, as in their option files.
	fs.BoolVar(&f.ssl, p+"ssl", false, "as --ssl-mode=REQUIRED (--ssl=0: DISABLED), the mariadb client's spelling")
	fs.BoolVar(&f.skipSSL, p+"skip-ssl", false, "as --ssl-mode=DISABLED, the mariadb client's spelling")
	fs.BoolVar(&f.verifyServer, p+"ssl-verify-server-cert", false, "as --ssl-mode=VERIFY_IDENTITY, the mariadb client's spelling")
	fs.StringVar(&f.sslCA, p+"ssl-ca", "", "CA certificate file (PEM) that signed the server's certificate")
	fs.StringVar(&f.sslCert, p+"ssl-cert", "", "client certificate file (PEM)")
	fs.StringVar(&f.sslKey, p+"ssl-key", "", "client private key file (PEM)")
	fs.DurationVar(&f.connectTimeout, p+"connect-timeout", 10*time.Second, "how long to wait for the server to answer a connection attempt")
	if fs.Lookup("no-defaults") != nil {
		return // the other end bound the shared option-file flags
	}
	fs.BoolVar(&f.noDefaults, "no-defaults", false, "read no option files")
	fs.StringVar(&f.defaultsFile, "defaults-file", "", "read only this option file")
	fs.StringVar(&f.extraFile, "defaults-extra-file", "", "read this option file after the global ones")
	fs.StringVar(&f.groupSuffix, "defaults-group-suffix", "", "read the groups with this suffix too ([client_SUFFIX] after [client]), as the clients do (default $MARIADB_GROUP_SUFFIX, else $MYSQL_GROUP_SUFFIX)")
	fs.StringVar(&f.loginPath, "login-path", "", "read this group too from MySQL's login path file (~/.mylogin.cnf, written by mysql_config_editor), which is read after the other option files")
}

// fileOptions reads the shared option-file flags, wherever they were bound.
func (f *Flags) fileOptions(home string) OptionFileSet {
	set := OptionFileSet{Home: home}
	set.NoDefaults, _ = f.fs.GetBool("no-defaults")
	set.DefaultsFile, _ = f.fs.GetString("defaults-file")
	set.ExtraFile, _ = f.fs.GetString("defaults-extra-file")
	set.LoginPath, _ = f.fs.GetString("login-path")
	return set
}

// withGroupSuffix returns the groups to read and those whose other settings go to the
// command's flags, each with its suffixed twin (--defaults-group-suffix=_replica reads
// [client_replica] and [innowarm_replica] too, as the clients do, a setting's place in
// the files deciding which wins). The flag beats $MARIADB_GROUP_SUFFIX, which beats
// $MYSQL_GROUP_SUFFIX, as in MariaDB's clients (MySQL's read the flag and the latter).
func (f *Flags) withGroupSuffix(env Env) (groups []string, commandGroups map[string]bool) {
	suffix, _ := f.fs.GetString("defaults-group-suffix")
	if suffix == "" {
		suffix = env("MARIADB_GROUP_SUFFIX")
	}
	if suffix == "" {
		suffix = env("MYSQL_GROUP_SUFFIX")
	}
	if suffix == "" {
		return f.groups, f.commandGroups
	}
	commandGroups = map[string]bool{}
	for g := range f.commandGroups {
		commandGroups[g], commandGroups[g+suffix] = true, true
	}
	for _, g := range f.groups {
		groups = append(groups, g, g+suffix)
	}
	return groups, commandGroups
}

// Env reads environment variables; tests pass their own.
type Env func(string) string

// Resolve merges defaults < option files < environment < flags, scrubs a password given on
// the command line from the process's arguments, and returns the result together with the
// [innowarm] settings that are not connection options (for the caller's own flags).
func (f *Flags) Resolve(env Env, home string) (Options, []OptionValue, error) {
	if env == nil {
		env = os.Getenv
	}
	o := Options{
		Host:           "localhost",
		Port:           3306,
		SSLMode:        SSLPreferred,
		ConnectTimeout: f.connectTimeout,
		Sources:        map[string]string{},
	}
	o.User = defaultUser(env)

	// The environment is the default the option files override, as in both clients (the
	// client library takes MYSQL_TCP_PORT and MYSQL_UNIX_PORT as its defaults, and
	// MYSQL_HOST and MYSQL_PWD only where nothing set a host or password): a stale
	// MYSQL_PWD beat a correct ~/.my.cnf, and innowarm was refused where mariadb connected.
	if v := env("MYSQL_HOST"); v != "" {
		o.Host, o.Sources["host"] = v, "env MYSQL_HOST"
	}
	if v := env("MYSQL_TCP_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return Options{}, nil, exitcode.UsageError(fmt.Errorf("MYSQL_TCP_PORT=%q is not a port number", v))
		}
		o.Port, o.Sources["port"] = p, "env MYSQL_TCP_PORT"
	}
	if v := env("MYSQL_UNIX_PORT"); v != "" {
		o.Socket, o.socketGiven, o.Sources["socket"] = v, true, "env MYSQL_UNIX_PORT"
	}
	if v := env("MYSQL_PWD"); v != "" {
		o.Password, o.PasswordPrompt, o.Sources["password"] = v, false, "env MYSQL_PWD"
	}

	groups, commandGroups := f.withGroupSuffix(env)
	vals, err := ReadOptionFiles(f.fileOptions(home), groups)
	if err != nil {
		return Options{}, nil, err
	}
	var rest []OptionValue
	for _, v := range vals {
		used, err := o.applyOptionFile(v)
		if err != nil {
			return Options{}, nil, err
		}
		if !used && commandGroups[v.Group] {
			rest = append(rest, v)
		}
	}

	if v := env(DefaultSocketsEnv); v != "" {
		o.defaultSockets = []string{}
		if v != "none" {
			o.defaultSockets = strings.Split(v, ":")
		}
	}
	// Before any flag value is read: this copies the passwords out of the arguments it
	// scrubs, this end's and the other end's.
	scrubbed := takePasswords(f.fs)
	changed := func(name string) bool { return f.fs.Changed(f.prefix + name) }
	if changed("host") {
		o.Host, o.Sources["host"] = f.host, "flag"
	}
	if changed("port") {
		o.Port, o.portOnCommandLine, o.Sources["port"] = f.port, true, "flag"
	}
	if changed("socket") {
		o.Socket, o.socketGiven, o.socketOnCommandLine, o.Sources["socket"] = f.socket, true, true, "flag"
	}
	if changed("protocol") {
		o.Protocol, o.protocolFromFile = f.protocol, false
	}
	if changed("user") {
		o.User, o.Sources["user"] = f.user, "flag"
	}
	if changed("password") {
		if f.password == PasswordPromptSentinel {
			o.Password, o.PasswordPrompt = "", true
		} else {
			o.Password, o.PasswordPrompt = f.password, false
			if scrubbed[f.prefix+"password"] {
				// Once per process, as the mysql client says it: follow resolves both ends.
				passwordWarning.Do(func() {
					fmt.Fprintln(os.Stderr, "innowarm: Warning: using a password on the command line can be insecure (it is hidden from ps, but may be in your shell history): prefer -p alone, MYSQL_PWD or ~/.my.cnf")
				})
			}
		}
		o.Sources["password"] = "flag"
	}
	if changed("database") {
		o.Database, o.Sources["database"] = f.database, "flag"
	}
	if changed("db") {
		o.Database, o.Sources["database"] = f.databaseShort, "flag"
	}
	// The same order as in an option file's lines: the mariadb client's spellings, then
	// --ssl-mode, which says it all.
	if changed("ssl") {
		o.SSLMode, o.sslModeGiven = SSLDisabled, true
		if f.ssl {
			o.SSLMode = SSLRequired
		}
	}
	if changed("skip-ssl") && f.skipSSL {
		o.SSLMode, o.sslModeGiven = SSLDisabled, true
	}
	if changed("ssl-verify-server-cert") && f.verifyServer {
		o.SSLMode, o.sslModeGiven = SSLVerifyIdentity, true
	}
	if changed("ssl-mode") {
		o.SSLMode, o.sslModeGiven = f.sslMode, true
	}
	if changed("ssl-ca") {
		o.SSLCA = f.sslCA
	}
	if changed("ssl-cert") {
		o.SSLCert = f.sslCert
	}
	if changed("ssl-key") {
		o.SSLKey = f.sslKey
	}
	if changed("connect-timeout") {
		o.ConnectTimeout = f.connectTimeout
	}
	if err := o.validate(); err != nil {
		return Options{}, nil, err
	}
	return o, rest, nil
}

func defaultUser(env Env) string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := env(k); v != "" {
			return v
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// applyOptionFile applies one [client]/[innowarm] setting; it reports false for settings
// that are not connection options.
func (o *Options) applyOptionFile(v OptionValue) (bool, error) {
	bad := func(msg string) error {
		return exitcode.UsageError(fmt.Errorf("option file %s [%s] %s=%s: %s", v.File, v.Group, v.Key, v.Value, msg))
	}
	switch v.Key {
	case "host":
		o.Host = v.Value
	case "port":
		p, err := strconv.Atoi(v.Value)
		if err != nil {
			return true, bad("not a port number")
		}
		o.Port = p
	case "socket":
		o.Socket, o.socketGiven = v.Value, true
	case "protocol":
		o.Protocol, o.protocolFromFile = v.Value, true
	case "user":
		o.User = v.Value
	case "password":
		if v.Bare {
			o.Password, o.PasswordPrompt = "", true
		} else {
			o.Password, o.PasswordPrompt = v.Value, false
		}
	case "database":
		o.Database = v.Value
	case "ssl-mode":
		o.SSLMode, o.sslModeGiven = v.Value, true
	case "ssl":
		if v.Bare || isTrue(v.Value) {
			o.SSLMode = SSLRequired
		} else {
			o.SSLMode = SSLDisabled
		}
		o.sslModeGiven = true
	case "skip-ssl":
		o.SSLMode, o.sslModeGiven = SSLDisabled, true
	case "ssl-verify-server-cert":
		if v.Bare || isTrue(v.Value) {
			o.SSLMode, o.sslModeGiven = SSLVerifyIdentity, true
		}
	case "ssl-ca":
		o.SSLCA = v.Value
	case "ssl-cert":
		o.SSLCert = v.Value
	case "ssl-key":
		o.SSLKey = v.Value
	case "connect-timeout":
		secs, err := strconv.Atoi(v.Value)
		if err != nil || secs <= 0 {
			return true, bad("expected a number of seconds")
		}
		o.ConnectTimeout = time.Duration(secs) * time.Second
	default:
		return false, nil
	}
	o.Sources[v.Key] = v.File
	return true, nil
}

func isTrue(s string) bool {
	switch strings.ToLower(s) {
	case "1", "on", "true", "yes", "":
		return true
	}
	return false
}

func (o *Options) validate() error {
	o.Host = unbracketHost(o.Host)
	if o.Port < 1 || o.Port > 65535 {
		return exitcode.UsageError(fmt.Errorf("port %d is out of range 1-65535 (from %s)", o.Port, o.source("port")))
	}
	o.SSLMode = strings.ToUpper(strings.TrimSpace(o.SSLMode))
	valid := false
	for _, m := range sslModes {
		valid = valid || o.SSLMode == m
	}
	if !valid {
		return exitcode.BadValue("SslMode", "%q is not one of %s", o.SSLMode, strings.Join(sslModes, ", "))
	}
	if !o.sslModeGiven && o.SSLMode == SSLPreferred && o.SSLCA != "" {
		// A CA given says the server's certificate is to be checked: MySQL's client then
		// defaults to VERIFY_CA (and MariaDB's to TLS). PREFERRED would have connected in
		// plaintext to a server without TLS, without a word.
		o.SSLMode = SSLVerifyCA
	}
	if o.SSLMode == SSLVerifyCA && o.SSLCA == "" {
		return exitcode.UsageError(errors.New("--ssl-mode=VERIFY_CA needs --ssl-ca=FILE with the CA that signed the server's certificate"))
	}
	if (o.SSLCert == "") != (o.SSLKey == "") {
		return exitcode.UsageError(errors.New("--ssl-cert and --ssl-key go together: give both or neither"))
	}
	o.Protocol = strings.ToUpper(strings.TrimSpace(o.Protocol))
	switch o.Protocol {
	case "", "TCP", "SOCKET":
	default:
		return exitcode.BadValue("Protocol", "%q is not supported: use TCP or SOCKET", o.Protocol)
	}
	if o.ConnectTimeout <= 0 {
		return exitcode.BadValue("ConnectTimeout", "must be positive")
	}
	if o.User == "" {
		return exitcode.UsageError(errors.New("no user name: pass -u USER"))
	}
	return nil
}

func (o *Options) source(key string) string {
	if s, ok := o.Sources[key]; ok {
		return s
	}
	return "default"
}

// unbracketHost takes the brackets off an IPv6 address written as in a URL ("[::1]"):
// the address is joined with the port later, which brackets it again.
func unbracketHost(h string) string {
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' && strings.Contains(h, ":") {
		return h[1 : len(h)-1]
	}
	return h
}

// UsesSocket reports whether the connection goes through a Unix socket.
func (o Options) UsesSocket() bool {
	// A port typed on the command line means TCP unless the socket was typed there too;
	// a socket or protocol from an option file or MYSQL_UNIX_PORT does not keep it.
	portWins := o.portOnCommandLine && !o.socketOnCommandLine
	switch {
	case o.Protocol == "SOCKET" && !(portWins && o.protocolFromFile):
		return true
	case o.Protocol == "TCP":
		return false
	}
	if o.Host != "" && o.Host != "localhost" {
		return false
	}
	return !portWins
}

// SocketPath is the socket to use: the one given, or the first default that exists.
func (o Options) SocketPath() (string, error) {
	if o.Socket != "" {
		if _, err := os.Stat(o.Socket); err != nil {
			return "", exitcode.UsageError(fmt.Errorf("socket %s does not exist (from %s): is the server running, and is this its socket? (SELECT @@socket on the server tells; or use -h 127.0.0.1 -P PORT for TCP)", o.Socket, o.source("socket")))
		}
		return o.Socket, nil
	}
	defaults := DefaultSocketPaths
	if o.defaultSockets != nil {
		defaults = o.defaultSockets
	}
	for _, p := range defaults {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if len(defaults) == 0 {
		return "", exitcode.UsageError(fmt.Errorf("no socket given and no default (%s=none): pass -S/--socket FILE, or -h 127.0.0.1 -P PORT for TCP", DefaultSocketsEnv))
	}
	return "", exitcode.UsageError(fmt.Errorf("no server socket found at %s: pass -S/--socket FILE, or -h 127.0.0.1 -P PORT for TCP", strings.Join(defaults, ", ")))
}

// Target describes where the connection goes, for messages.
func (o Options) Target() string {
	if o.UsesSocket() {
		if p, err := o.SocketPath(); err == nil {
			return "socket " + p
		}
		return "socket " + o.Socket
	}
	// An IPv6 address is bracketed, as in the address dialled: [::1]:3306.
	return net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
}

// ForSocket returns options for a local server reached through its socket as user, with
// no option files involved (sandboxes, tests).
func ForSocket(socket, user, password string) Options {
	return Options{
		Host: "localhost", Port: 3306, Socket: socket, socketGiven: true, User: user, Password: password,
		SSLMode: SSLDisabled, ConnectTimeout: 10 * time.Second, Sources: map[string]string{},
	}
}

// ForTCP returns options for host:port as user, with no option files involved.
func ForTCP(host string, port int, user, password string) Options {
	return Options{
		Host: host, Port: port, Protocol: "TCP", User: user, Password: password,
		SSLMode: SSLPreferred, ConnectTimeout: 10 * time.Second, Sources: map[string]string{},
	}
}

// passwordWarning prints the warning about a password on the command line once.
var passwordWarning sync.Once
