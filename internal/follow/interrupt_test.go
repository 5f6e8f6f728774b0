package follow_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/follow"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// Stopped during its first round's load (Ctrl-C), follow reported nothing: a user who
// interrupted a long first load saw no line at all. The round in flight is reported as
// interrupted, with what is known: no round succeeded, so a lag of 1.
func TestFollowReportsTheRoundItWasStoppedIn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	source := sandboxtest.Server(t)
	target := sandboxtest.SecondServer(t, 64<<20)
	tgtConn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	create := []string{"DROP DATABASE IF EXISTS fint", "CREATE DATABASE fint",
		"CREATE TABLE fint.t (id INT NOT NULL PRIMARY KEY, pad CHAR(200) CHARACTER SET latin1 NOT NULL DEFAULT '')"}
	sandboxtest.Exec(t, append(create, fmt.Sprintf("INSERT INTO fint.t (id) SELECT seq FROM %s ORDER BY seq", sandboxtest.Conn(t).Server.Series("fint", 1, 20000)))...)
	t.Cleanup(func() { sandboxtest.Exec(t, "DROP DATABASE IF EXISTS fint") })
	for _, q := range append(create, fmt.Sprintf("INSERT INTO fint.t (id) SELECT seq FROM %s ORDER BY seq", tgtConn.Server.Series("fint", 1, 20000))) {
		if _, err := tgtConn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tgtConn.Close()
	if _, err := target.ColdRestart(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var statuses []follow.Status
	o := follow.Options{Source: source.ConnOptions(), Target: target.ConnOptions(), Interval: time.Hour, Rounds: 3,
		Filter: catalog.Filter{Schemas: []string{"fint"}}, Log: logx.New(os.Stderr, false),
		// The load has begun: the user presses Ctrl-C.
		LoadProgress: progress.Config{Observe: func(_, _ int64) { once.Do(cancel) }}}
	if err := follow.Run(ctx, o, nil, func(s follow.Status) { statuses = append(statuses, s) }); err != nil {
		t.Fatalf("Run stopped by its context: %v, want nil", err)
	}
	if len(statuses) != 1 {
		t.Fatalf("reported %d rounds, want the one in flight: %+v", len(statuses), statuses)
	}
	s := statuses[0]
	if !s.Interrupted || s.OK || s.Round != 1 || s.LastOKRound != 0 || s.Lag != 1 {
		t.Errorf("the round stopped: %+v; want round 1 interrupted, not ok, no round before it, lag 1", s)
	}
}
