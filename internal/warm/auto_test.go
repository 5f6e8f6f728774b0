package warm_test

import (
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// warm's default method on the database host: the native loader, except on a server whose
// loader is slower than scans (MySQL), where tables that scans read whole are scanned and
// the rest (here a FULLTEXT index, which no index scan reads) still go to the loader, the
// reason naming what scans would miss. Either way every page of the table ends resident.
func TestAutoMethodFollowsTheFlavor(t *testing.T) {
	db := sandboxtest.Schema(t)
	srv := sandboxtest.Flavor(t)
	plainTable(t, db, "plain", 20000)
	textsTable(t, db, 2000)
	warmAuto := func(table string) (method, reason string) {
		t.Helper()
		stdout := warmAfterColdRestart(t, "-D", db, "--tables", db+"."+table, "--json", "-q")
		var out struct {
			Result struct {
				Method  string `json:"method"`
				Reason  string `json:"method_reason"`
				Targets []struct {
					Index         string `json:"index"`
					Kind          string `json:"kind"`
					ResidentAfter int64  `json:"resident_after"`
				} `json:"targets"`
			} `json:"result"`
		}
		sandboxtest.JSON(t, []byte(stdout), &out)
		for _, tg := range out.Result.Targets {
			if tg.Kind == "index" && tg.ResidentAfter == 0 {
				t.Errorf("%s (%s): index %s has no page resident after the warm: %s", table, out.Result.Method, tg.Index, stdout)
			}
		}
		return out.Result.Method, out.Result.Reason
	}
	method, reason := warmAuto("plain")
	t.Logf("%s, plain table: %s (%s)", srv, method, reason)
	switch {
	case srv.ScansOutrunNativeLoad() && (method != "scan" || !strings.Contains(reason, "page at a time")):
		t.Errorf("%s: a plain table's default warm: %s (%s), want scan, saying why", srv, method, reason)
	case !srv.ScansOutrunNativeLoad() && method != "native":
		t.Errorf("%s: a plain table's default warm: %s (%s), want native", srv, method, reason)
	}
	method, reason = warmAuto("texts")
	t.Logf("%s, table with a FULLTEXT index: %s (%s)", srv, method, reason)
	if method != "native" || (srv.ScansOutrunNativeLoad() && !strings.Contains(reason, "would not read")) {
		t.Errorf("%s: the default warm of a table with a FULLTEXT index: %s (%s), want native, naming what scans miss", srv, method, reason)
	}
}
