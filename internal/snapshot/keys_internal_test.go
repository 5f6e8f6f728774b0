package snapshot

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/pagekey"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// Where the tablespace files are not readable (innowarm on another host, a managed
// server), the capture keeps its pages without keys and says what is possible instead.
func TestKeysFromElsewhereSayWhatIsPossible(t *testing.T) {
	ctx := context.Background()
	conn := sandboxtest.Conn(t)
	db := sandboxtest.Schema(t)
	sandboxtest.Exec(t, "CREATE TABLE "+sqltext.Table(db, "t")+" (id INT PRIMARY KEY)", "INSERT INTO "+sqltext.Table(db, "t")+" VALUES (1), (2)")
	cat, err := catalog.Load(ctx, conn, catalog.Filter{Schemas: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	objs := newObjectTable()
	space := cat.Tables[0].Parts[0].Space
	pages := []observed{{object: objs.id(bufferpool.LRUPage{Space: space, PageType: "INDEX", Schema: db, Table: "t", Index: "PRIMARY"}), page: 3, next: noPage}}
	kc := &keyCapture{conn: conn, cat: cat, open: func(path string, _ int) (*pagekey.Source, error) {
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}}
	st := kc.capture(ctx, objs, pages)
	if st.Keyed != 0 || st.Note == "" || pages[0].kt.flags&ktRange != 0 {
		t.Fatalf("stats %+v, range %+v", st, pages[0].kt)
	}
	line := RemoteKeysNote(st.Note)
	for _, want := range []string{"not readable here", "page-for-page copy", "run snapshot on the database host", "warm --replay performance_schema"} {
		if !strings.Contains(line, want) {
			t.Errorf("the note does not say %q: %s", want, line)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("the note is more than one line: %q", line)
	}
}
