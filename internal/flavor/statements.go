package flavor

import (
	"fmt"
	"time"
)

// StatementSource is a performance_schema table that keeps the text of statements clients
// ran, so that they can be run again (warm --replay performance_schema).
type StatementSource struct {
	Table  string // in performance_schema
	Text   string // column with the statement as the client sent it
	Schema string // column with the default schema it ran in
	// Filter keeps rows that are client statements (not stored-program or protocol events).
	Filter string
	// OrderBy puts the most useful rows first: most frequent digests, or oldest first.
	OrderBy string
	// Consumers are the setup_consumers rows that must be enabled for the table to fill.
	Consumers []string
	// Size is the server variable that bounds the number of rows kept.
	Size string
}

// StatementSources lists, best first, the performance_schema tables that may hold runnable
// statement text on this server. MySQL 8.0.3+ keeps one sample statement per digest
// (QUERY_SAMPLE_TEXT); MariaDB and older MySQL only keep the latest statements in the
// history tables (DIGEST_TEXT has its literals replaced by '?' and cannot run).
func (s Server) StatementSources() []StatementSource {
	history := func(table, size string) StatementSource {
		return StatementSource{
			Table: table, Text: "SQL_TEXT", Schema: "CURRENT_SCHEMA",
			Filter:    "EVENT_NAME LIKE 'statement/sql/%'",
			OrderBy:   "TIMER_START",
			Consumers: []string{"global_instrumentation", "thread_instrumentation", "events_statements_current", table},
			Size:      size,
		}
	}
	var out []StatementSource
	if s.DigestSampleText() {
		out = append(out, StatementSource{
			Table: "events_statements_summary_by_digest", Text: "QUERY_SAMPLE_TEXT", Schema: "SCHEMA_NAME",
			OrderBy:   "COUNT_STAR DESC",
			Consumers: []string{"global_instrumentation", "statements_digest"},
			Size:      "performance_schema_digests_size",
		})
	}
	return append(out,
		history("events_statements_history_long", "performance_schema_events_statements_history_long_size"),
		history("events_statements_history", "performance_schema_events_statements_history_size"))
}

// SessionTimeLimit is the statement that bounds the run time of every later SELECT of a
// session, whatever its shape (WITH, parenthesized, UNION, with its own optimizer hints):
// MariaDB's max_statement_time (seconds), MySQL's max_execution_time (milliseconds, read-only
// SELECTs). It is empty when the limit is zero or the server has no such variable.
func (s Server) SessionTimeLimit(limit time.Duration) string {
	if limit <= 0 {
		return ""
	}
	if s.IsMariaDB() {
		if !s.Version.AtLeast(10, 1, 2) {
			return ""
		}
		return fmt.Sprintf("SET SESSION max_statement_time = %g", limit.Seconds())
	}
	if !s.Version.AtLeast(5, 7, 8) {
		return ""
	}
	return fmt.Sprintf("SET SESSION max_execution_time = %d", max(limit.Milliseconds(), 1))
}
