package cli_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

func createUser(t *testing.T, name, password string) {
	t.Helper()
	sandboxtest.Exec(t,
		"CREATE USER IF NOT EXISTS '"+name+"'@'localhost' IDENTIFIED BY '"+password+"'",
		"ALTER USER '"+name+"'@'localhost' IDENTIFIED BY '"+password+"'",
		"GRANT PROCESS ON *.* TO '"+name+"'@'localhost'")
}

// Option-file precedence as the foundation issue states it: flag > environment > option file.
func TestPasswordPrecedence(t *testing.T) {
	sb := sandboxtest.Server(t)
	createUser(t, "prec", "right-pw")
	dir := sandboxtest.Dir(t)
	cnf := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rightFile := cnf("right.cnf", "[client]\nuser=prec\npassword=right-pw\nsocket="+sb.Socket+"\n")
	wrongFile := cnf("wrong.cnf", "[client]\nuser=prec\npassword=wrong-pw\nsocket="+sb.Socket+"\n")
	innowarmGroup := cnf("group.cnf", "[client]\nuser=prec\npassword=wrong-pw\nsocket="+sb.Socket+"\n[innowarm]\npassword=right-pw\n")

	cases := []struct {
		name string
		env  []string
		args []string
		ok   bool
	}{
		{"option file alone", nil, []string{"--defaults-file=" + rightFile}, true},
		// As in both clients: the environment is the default that option files override.
		{"option file beats env", []string{"MYSQL_PWD=wrong-pw"}, []string{"--defaults-file=" + rightFile}, true},
		{"option file beats env (wrong file)", []string{"MYSQL_PWD=right-pw"}, []string{"--defaults-file=" + wrongFile}, false},
		{"env where no option file sets it", []string{"MYSQL_PWD=right-pw"}, []string{"--defaults-file=" + cnf("nopw.cnf", "[client]\nuser=prec\nsocket="+sb.Socket+"\n")}, true},
		{"flag beats env", []string{"MYSQL_PWD=wrong-pw"}, []string{"--defaults-file=" + wrongFile, "--password=right-pw"}, true},
		{"flag beats env (wrong flag)", []string{"MYSQL_PWD=right-pw"}, []string{"--defaults-file=" + rightFile, "-pwrong-pw"}, false},
		{"[innowarm] after [client]", nil, []string{"--defaults-file=" + innowarmGroup}, true},
		{"--no-defaults ignores files", []string{"MYSQL_PWD=right-pw"}, []string{"--no-defaults", "-u", "prec", "-S", sb.Socket}, true},
		{"~/.my.cnf is read", []string{"HOME=" + writeHome(t, "[client]\nuser=prec\npassword=right-pw\n")}, []string{"-S", sb.Socket}, true},
		{"~/.my.cnf after --defaults-extra-file", []string{"HOME=" + writeHome(t, "[client]\npassword=right-pw\n")}, []string{"--defaults-extra-file=" + wrongFile, "-S", sb.Socket}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sandboxtest.CLI(t, sandboxtest.Run{Env: c.env}, append([]string{"ping"}, c.args...)...)
			if c.ok && (r.Code != 0 || !strings.Contains(r.Stdout, "as prec")) {
				t.Errorf("want success as prec, got exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
			}
			if !c.ok {
				oneLineError(t, r, 2, "access denied")
			}
		})
	}
}

func writeHome(t *testing.T, mycnf string) string {
	t.Helper()
	home := sandboxtest.Dir(t)
	if err := os.WriteFile(filepath.Join(home, ".my.cnf"), []byte(mycnf), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// -p alone prompts on the terminal and does not echo what is typed. The password is typed
// the moment the prompt shows (the reader answers from the same read that saw it), many
// times: echo turned off after the prompt was written echoed about a third of such runs.
func TestPasswordPromptDoesNotEcho(t *testing.T) {
	sb := sandboxtest.Server(t)
	const secret = "Zq7-no-echo-pw"
	createUser(t, "prompted", secret)
	run := func(typed string) (string, int) {
		t.Helper()
		cmd := exec.Command(sandboxtest.Binary(t), "ping", "--no-defaults", "-S", sb.Socket, "-u", "prompted", "-p")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + sandboxtest.Dir(t), "TERM=dumb"}
		tty, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		// Only against a hang (no prompt ever shown): the run itself takes well under a second.
		hang := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
		defer hang.Stop()
		var out sandboxtest.SyncBuffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 512)
			answered := false
			for {
				n, err := tty.Read(buf)
				out.Write(buf[:n])
				if !answered && strings.Contains(out.String(), "Enter password: ") {
					tty.Write([]byte(typed + "\r"))
					answered = true
				}
				if err != nil {
					return
				}
			}
		}()
		err = cmd.Wait()
		<-done
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return out.String(), code
	}
	for i := 0; i < 20; i++ {
		out, code := run(secret)
		if code != 0 || !strings.Contains(out, "as prompted") {
			t.Fatalf("run %d: prompted login failed (exit %d): %q", i, code, out)
		}
		if strings.Contains(out, secret) {
			t.Fatalf("run %d: the typed password was echoed: %q", i, out)
		}
	}
	out, code := run("not-the-password")
	if code != 2 || strings.Contains(out, "not-the-password") || !strings.Contains(out, "access denied") {
		t.Errorf("wrong typed password: exit %d, %q", code, out)
	}
}

// Without a terminal, -p alone fails at once with a message saying what to do instead.
func TestPasswordPromptWithoutTerminal(t *testing.T) {
	sb := sandboxtest.Server(t)
	r := sandboxtest.CLI(t, sandboxtest.Run{Stdin: "typed-into-a-pipe\n"}, "ping", "--no-defaults", "-S", sb.Socket, "-u", "root", "-p")
	oneLineError(t, r, 2, "terminal", "MYSQL_PWD")
}

// A password given on the command line is overwritten in the process's arguments before
// innowarm connects, so ps and /proc/PID/cmdline never show it while the command runs.
func TestPasswordHiddenFromPs(t *testing.T) {
	// A listener that accepts and never answers keeps innowarm waiting in its connect.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	for _, form := range [][]string{{"-pTopSecret-123"}, {"--password=TopSecret-123"}} {
		args := append([]string{"ping", "--no-defaults", "-h", "127.0.0.1", "-P", port, "-u", "root", "--connect-timeout", "4s"}, form...)
		cmd := exec.Command(sandboxtest.Binary(t), args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var c net.Conn
		select {
		case c = <-accepted:
		case <-time.After(20 * time.Second):
			t.Fatal("innowarm never connected")
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(cmd.Process.Pid)).Output()
		cmd.Process.Kill()
		cmd.Wait()
		c.Close()
		if strings.Contains(string(cmdline), "TopSecret") || strings.Contains(string(ps), "TopSecret") {
			t.Errorf("%v: password visible in the process arguments: %q / %q", form, cmdline, ps)
		}
		if !strings.Contains(string(cmdline), "xxxxxxxxxxxxx") {
			t.Errorf("%v: expected the password overwritten with x: %q", form, cmdline)
		}
		if !strings.Contains(stderr.String(), "Warning") || strings.Contains(stderr.String(), "TopSecret") {
			t.Errorf("%v: stderr %q", form, stderr.String())
		}
	}
}
