package connection_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/pflag"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// openExplained connects as innowarm's commands do and returns what innowarm says of a
// refusal: Explain's line, or explainAccountRefusal's for the refusals it explains (the
// same line once Explain calls it).
func openExplained(t *testing.T, args ...string) error {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := connection.BindFlags(fs)
	if err := fs.Parse(append([]string{"--no-defaults"}, args...)); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	o, _, err := f.Resolve(func(string) string { return "" }, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, o)
	if err == nil {
		c.Close()
		return nil
	}
	if e := connection.ExplainAccountRefusal(err, o); e != nil {
		return e
	}
	return err
}

// An account blocked after failed logins (MySQL 3955: FAILED_LOGIN_ATTEMPTS and
// PASSWORD_LOCK_TIME; MariaDB 4150: max_password_errors) refuses even the right password:
// innowarm printed the server's error raw, exit 1, though a wrong password of its own is
// the usual cause and ALTER USER ... ACCOUNT UNLOCK the fix. The one line, exit 2, names
// the user, where the password came from and the unlock.
func TestBlockedAccountExplained(t *testing.T) {
	sock := sandboxtest.Server(t).Socket
	want := uint16(4150)
	create := "CREATE USER 'iw_blocked'@'localhost' IDENTIFIED BY 'rightpw'"
	if sandboxtest.Flavor(t).Kind == flavor.MySQL {
		want = 3955
		create += " FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME 1"
	} else {
		sandboxtest.SetGlobal(t, "max_password_errors", "2")
	}
	sandboxtest.Exec(t, "DROP USER IF EXISTS 'iw_blocked'@'localhost'", create)
	t.Cleanup(func() {
		_, _ = sandboxtest.Conn(t).DB.Exec("DROP USER IF EXISTS 'iw_blocked'@'localhost'")
	})
	blocked := func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == want
	}
	var err error
	for i := 0; i < 4 && !blocked(err); i++ {
		if err = openExplained(t, "-S", sock, "-u", "iw_blocked", "--password=wrongpw"); err == nil {
			t.Fatal("a wrong password connected")
		}
	}
	if !blocked(err) {
		t.Fatalf("wrong passwords never blocked the account: %v", err)
	}
	wantRefusal(t, "wrong password, blocked", err, `"iw_blocked"`, "blocked after too many failed logins", "ACCOUNT UNLOCK", "the password from flag")
	err = openExplained(t, "-S", sock, "-u", "iw_blocked", "--password=rightpw")
	if !blocked(err) {
		t.Fatalf("the right password on a blocked account: %v, want error %d", err, want)
	}
	wantRefusal(t, "right password, blocked", err, `"iw_blocked"`, "refuses even the right password", "ACCOUNT UNLOCK", "the password from flag")

	// Unblocked, the right password connects and a wrong one is a plain access denied.
	sandboxtest.Exec(t, "ALTER USER 'iw_blocked'@'localhost' ACCOUNT UNLOCK")
	if err := openExplained(t, "-S", sock, "-u", "iw_blocked", "--password=rightpw"); err != nil {
		t.Fatalf("unblocked: %v", err)
	}
	err = openExplained(t, "-S", sock, "-u", "iw_blocked", "--password=wrongpw")
	wantRefusal(t, "wrong password, not blocked", err, "access denied")
}
