package flavor

import (
	"fmt"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/sqltext"
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

// Series is a table expression of one column, seq, holding the integers from to to, made by
// the server without a table: MariaDB's Sequence engine (seq_1_to_N, which lives in every
// schema, so it is qualified with schema when one is given), elsewhere a cross join of
// ten-row digit tables, which needs no session variable (a recursive CTE would need
// cte_max_recursion_depth raised on MySQL) and works on MySQL 5.7 too. Rows come in no
// promised order: add ORDER BY seq where the insertion order matters.
func (s Server) Series(schema string, from, to int64) string {
	if s.SequenceEngine() {
		name := fmt.Sprintf("seq_%d_to_%d", from, to)
		if schema != "" {
			return sqltext.Ident(schema) + "." + name
		}
		return name
	}
	n := to - from + 1
	if n <= 0 {
		return "(SELECT 1 AS seq FROM DUAL WHERE FALSE) AS series"
	}
	digits := 1
	for p := int64(10); p < n; p *= 10 {
		digits++
	}
	const digitTable = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	var b strings.Builder
	fmt.Fprintf(&b, "(SELECT seq FROM (SELECT %d", from)
	for i, p := 0, int64(1); i < digits; i, p = i+1, p*10 {
		fmt.Fprintf(&b, " + %d * d%d.d", p, i)
	}
	b.WriteString(" AS seq FROM ")
	for i := 0; i < digits; i++ {
		if i > 0 {
			b.WriteString(" CROSS JOIN ")
		}
		fmt.Fprintf(&b, "%s AS d%d", digitTable, i)
	}
	fmt.Fprintf(&b, ") AS digits WHERE seq <= %d) AS series", to)
	return b.String()
}

// SlowLogNamesSchema says whether every slow log entry names its schema (MariaDB's
// "# Thread_id: N  Schema: db"). MySQL writes "use db;" only when the schema differs from
// the previous entry's, whichever connection that was, so an entry of a connection with no
// schema reads as if it ran in the last one named.
func (s Server) SlowLogNamesSchema() bool { return s.IsMariaDB() }
