package connection

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"syscall"
	"time"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// waitPoll is how often WaitOpen tries again: a warm that starts with the server should begin
// within a fraction of a second of its first answer, when the pool is emptiest.
const waitPoll = 50 * time.Millisecond

// WaitOpen is Open for a server that is not up yet (a warm started beside it by systemd's
// ExecStartPost or a sidecar): it tries every 50 ms until the server answers, timeout passes
// (0: no limit but ctx) or the answer is one no retry can change (wrong password, unknown
// database). waiting is called once, on the first failed try, with why.
func WaitOpen(ctx context.Context, o Options, timeout time.Duration, waiting func(why error)) (*Conn, error) {
	if o.PasswordPrompt {
		// Ask once, not on every try.
		pw, err := PromptPassword(ctx)
		if err != nil {
			return nil, err
		}
		o.Password, o.PasswordPrompt = pw, false
		o.Sources = maps.Clone(o.Sources)
		if o.Sources == nil {
			o.Sources = map[string]string{}
		}
		o.Sources["password"] = sourcePrompt
	}
	if o.ConnectTimeout <= 0 || o.ConnectTimeout > 2*time.Second {
		// A try against a server that is still starting must not hold the next one up.
		o.ConnectTimeout = 2 * time.Second
	}
	t0 := time.Now()
	var deadline <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		deadline = tm.C
	}
	for tries := 0; ; tries++ {
		var conn *Conn
		_, err := o.SocketPath()
		if o.UsesSocket() && err != nil {
			// A server that is starting creates its socket when it is ready to answer:
			// until then a missing socket is not the user's mistake.
			err = fmt.Errorf("not up yet: %w", err)
		} else {
			conn, err = Open(ctx, o)
			if err == nil {
				return conn, nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if exitcode.Of(err) == exitcode.Usage && !errors.Is(err, syscall.ENOENT) && !missingSocket(err) {
				return nil, err
			}
		}
		if tries == 0 && waiting != nil {
			waiting(err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("the server did not answer within %s: %w", time.Since(t0).Round(time.Second), err)
		case <-time.After(waitPoll):
		}
	}
}

// missingSocket says whether err is Open's complaint about a socket file that is not there: a
// server removes it on shutdown and creates it again once it answers.
func missingSocket(err error) bool {
	return strings.Contains(err.Error(), "does not exist")
}
