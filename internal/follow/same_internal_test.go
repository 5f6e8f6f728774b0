package follow

import (
	"context"
	"database/sql"
	"testing"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// Two connections to one server are one server, by its facts and by the named lock, which
// is released after; two servers whose facts all match (two containers of one host without
// networking) are told apart by the lock.
func TestSameServer(t *testing.T) {
	ctx := context.Background()
	name := probeLockName()
	defer func(f func() string) { probeLockName = f }(probeLockName)
	probeLockName = func() string { return name }
	one := sandboxtest.Server(t)
	a, err := connection.Open(ctx, one.ConnOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := connection.Open(ctx, connection.ForTCP("127.0.0.1", one.Port, "root", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if same, id := sameServer(ctx, a, b); !same || id != a.Server.Identity() {
		t.Errorf("socket and TCP to one server: same %v, identity %q", same, id)
	}

	other := sandboxtest.SecondServer(t, 0)
	c, err := other.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if same, _ := sameServer(ctx, a, c); same {
		t.Errorf("two servers (%s, %s) taken for one", a.Server.Identity(), c.Server.Identity())
	}
	look := &connection.Conn{DB: c.DB, Server: a.Server, Opts: c.Opts} // every fact equal: the lock tells
	if same, _ := sameServer(ctx, a, look); same {
		t.Error("two servers with equal facts taken for one: the named lock should tell them apart")
	}
	var holder sql.NullInt64
	if err := a.DB.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", name).Scan(&holder); err != nil || holder.Valid {
		t.Errorf("the check's named lock is still held after it (by connection %v): %v", holder, err)
	}
}
