package replay

import (
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/connection"
)

// ownTag starts the comment that innowarm puts in the statements it tags (Tag, warm's
// StatementTag, the snapshot's and inspect's reads).
const ownTag = "/* innowarm:"

// isTagged reports a statement that carries one of innowarm's tags.
func isTagged(sql string) bool { return strings.Contains(sql, ownTag) }

// isOwnSessionSetup recognizes the first statement of each of innowarm's own connections:
// the driver's SET of the session timeouts connection gives them, in any order, maybe with
// the statement time limit lifted ("SET wait_timeout = 86400, net_read_timeout = 600,
// net_write_timeout = 600, max_statement_time = 0"). Most of innowarm's reads (the
// dictionary, the catalog, server variables) carry no tag, so a log that innowarm's
// sessions wrote to is told apart by the session, not by each statement.
func isOwnSessionSetup(sql string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(sql), "SET ")
	if !ok {
		return false
	}
	rest = strings.TrimSuffix(strings.TrimSpace(rest), ";")
	want := map[string]string{
		"wait_timeout":      strconv.Itoa(connection.OwnWaitTimeout),
		"net_read_timeout":  strconv.Itoa(connection.OwnNetTimeout),
		"net_write_timeout": strconv.Itoa(connection.OwnNetTimeout),
	}
	found := 0
	for _, item := range strings.Split(rest, ",") {
		name, value, ok := strings.Cut(item, "=")
		if !ok {
			return false
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if w, known := want[name]; known {
			if value != w {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// ownThreads remembers which threads of a log are innowarm's sessions: from their setup
// statement, or from a tagged statement, to the end of the session.
type ownThreads map[string]bool

// see records a statement of thread and reports whether it is innowarm's.
func (o ownThreads) see(thread, sql string) bool {
	if thread == "" {
		return isTagged(sql) || isOwnSessionSetup(sql)
	}
	if !o[thread] && (isTagged(sql) || isOwnSessionSetup(sql)) {
		o[thread] = true
	}
	return o[thread]
}
