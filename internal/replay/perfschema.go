package replay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sqlerr"
)

// Tag marks every statement replay sends, so that it can be told apart in the processlist,
// and left out when performance_schema is read again.
const Tag = "/* innowarm:replay */"

// PerfSchemaInfo says which performance_schema table the statements came from.
type PerfSchemaInfo struct {
	Table     string `json:"table"`
	Rows      int    `json:"rows"`
	Capacity  int64  `json:"capacity"` // the most rows the server keeps in it
	Truncated int    `json:"truncated"`
	Own       int    `json:"own"` // innowarm's own statements among Rows
}

// PerfSchemaState is what the server says about its performance_schema.
type PerfSchemaState struct {
	On          bool
	Consumers   map[string]bool // setup_consumers: NAME → ENABLED
	Instruments map[string]bool // setup_instruments of interest: NAME → ENABLED
}

// statementInstrument must be enabled for SELECTs to be recorded at all.
const statementInstrument = "statement/sql/select"

// ChoosePerfSchema picks the best statement source the server offers in its current state,
// or explains in one line what is missing and how to enable it.
func ChoosePerfSchema(srv flavor.Server, st PerfSchemaState) (flavor.StatementSource, error) {
	sources := srv.StatementSources()
	lacks := ""
	if srv.IsMariaDB() || !srv.DigestSampleText() {
		lacks = fmt.Sprintf(" (%s keeps no runnable sample per digest: its events_statements_summary_by_digest has only DIGEST_TEXT, with '?' for values; so replay needs the statement history)", srv)
	}
	if !st.On {
		return flavor.StatementSource{}, exitcode.UsageError(fmt.Errorf(
			"performance_schema is OFF on %s: start the server with --performance-schema=ON%s (it cannot be enabled at runtime)%s",
			srv, consumerOptions(sources[0].Consumers), lacks))
	}
	if enabled, known := st.Instruments[statementInstrument]; known && !enabled {
		return flavor.StatementSource{}, exitcode.UsageError(fmt.Errorf(
			"performance_schema on %s does not record statements: enable them with UPDATE performance_schema.setup_instruments SET ENABLED = 'YES' WHERE NAME LIKE 'statement/%%'", srv))
	}
	for _, src := range sources {
		if len(missing(src, st)) == 0 {
			return src, nil
		}
	}
	best := sources[0]
	miss := missing(best, st)
	quoted := make([]string, len(miss))
	for i, c := range miss {
		quoted[i] = "'" + c + "'"
	}
	what := "consumer " + miss[0] + " is"
	if len(miss) > 1 {
		what = "consumers " + strings.Join(miss, ", ") + " are"
	}
	return flavor.StatementSource{}, exitcode.UsageError(fmt.Errorf(
		"performance_schema on %s keeps no statement text: %s disabled; enable with UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN (%s), or start the server with%s%s",
		srv, what, strings.Join(quoted, ", "), consumerOptions(miss), lacks))
}

func missing(src flavor.StatementSource, st PerfSchemaState) []string {
	var out []string
	for _, c := range src.Consumers {
		if !st.Consumers[c] {
			out = append(out, c)
		}
	}
	return out
}

// consumerOptions are the server options that enable consumers at start-up.
func consumerOptions(consumers []string) string {
	var b strings.Builder
	for _, c := range consumers {
		fmt.Fprintf(&b, " --performance-schema-consumer-%s=ON", strings.ReplaceAll(c, "_", "-"))
	}
	return b.String()
}

// ReadPerfSchemaState reads whether performance_schema is on and which consumers and
// statement instruments are enabled.
func ReadPerfSchemaState(ctx context.Context, conn *connection.Conn) (PerfSchemaState, error) {
	st := PerfSchemaState{Consumers: map[string]bool{}, Instruments: map[string]bool{}}
	var on sql.NullString
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@performance_schema "+Tag).Scan(&on); err != nil {
		if sqlerr.Is(err, sqlerr.UnknownSystemVariable) { // built without it
			return st, nil
		}
		return st, fmt.Errorf("read @@performance_schema: %w", err)
	}
	st.On = on.String == "1" || strings.EqualFold(on.String, "ON")
	if !st.On {
		return st, nil
	}
	rows, err := conn.DB.QueryContext(ctx, "SELECT NAME, ENABLED FROM performance_schema.setup_consumers "+Tag)
	if err != nil {
		return st, fmt.Errorf("read performance_schema.setup_consumers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, enabled string
		if err := rows.Scan(&name, &enabled); err != nil {
			return st, err
		}
		st.Consumers[name] = strings.EqualFold(enabled, "YES")
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	var enabled string
	err = conn.DB.QueryRowContext(ctx, "SELECT ENABLED FROM performance_schema.setup_instruments WHERE NAME = ? "+Tag, statementInstrument).Scan(&enabled)
	if err == nil {
		st.Instruments[statementInstrument] = strings.EqualFold(enabled, "YES")
	} else if !errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("read performance_schema.setup_instruments: %w", err)
	}
	return st, nil
}

// OpenPerfSchema reads the statements performance_schema keeps, all at once: the history
// tables are rings that the replay's own statements would overwrite while they are read.
// The snapshot is bounded by the table's size on the server (10,000 rows by default).
func OpenPerfSchema(ctx context.Context, conn *connection.Conn) (Source, PerfSchemaInfo, error) {
	var info PerfSchemaInfo
	st, err := ReadPerfSchemaState(ctx, conn)
	if err != nil {
		return nil, info, err
	}
	src, err := ChoosePerfSchema(conn.Server, st)
	if err != nil {
		return nil, info, err
	}
	info.Table = "performance_schema." + src.Table
	var size sql.NullInt64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@"+src.Size+" "+Tag).Scan(&size); err == nil {
		info.Capacity = size.Int64
	}
	maxText := int64(1024)
	var mt sql.NullInt64
	if err := conn.DB.QueryRowContext(ctx, "SELECT @@performance_schema_max_sql_text_length "+Tag).Scan(&mt); err == nil && mt.Valid {
		maxText = mt.Int64
	}
	// innowarm's own statements are read too, and counted as skipped: the history tables
	// name each statement's thread, so those of innowarm's sessions are left out whole
	// (most of their reads carry no tag); the digest summary has one sample per digest and
	// no thread, so there only a tagged sample is known as innowarm's.
	thread := "NULL"
	if strings.HasPrefix(src.Table, "events_statements_history") {
		thread = "THREAD_ID"
	}
	where := fmt.Sprintf("%[1]s IS NOT NULL AND %[1]s <> ''", src.Text)
	if src.Filter != "" {
		where += " AND " + src.Filter
	}
	q := fmt.Sprintf("SELECT %s, %s, %s FROM performance_schema.%s WHERE %s ORDER BY %s %s", thread, src.Schema, src.Text, src.Table, where, src.OrderBy, Tag)
	rows, err := conn.DB.QueryContext(ctx, q)
	if err != nil {
		return nil, info, fmt.Errorf("read %s: %w", info.Table, err)
	}
	defer rows.Close()
	var list []Statement
	var threads []string
	own := ownThreads{}
	for rows.Next() {
		var th, schema sql.NullString
		var text string
		if err := rows.Scan(&th, &schema, &text); err != nil {
			return nil, info, fmt.Errorf("read %s: %w", info.Table, err)
		}
		truncated := int64(len(text)) >= maxText
		if thread == "NULL" {
			text = unreplayed(text)
		}
		// A thread's setup may come after a statement of its in the order read (the digest
		// order, or a history table's ring that dropped it): mark the threads first.
		own.see(th.String, text)
		list = append(list, Statement{SQL: text, Schema: schema.String, Truncated: truncated})
		threads = append(threads, th.String)
	}
	if err := rows.Err(); err != nil {
		return nil, info, fmt.Errorf("read %s: %w", info.Table, err)
	}
	if thread != "NULL" {
		for _, id := range ownProcessThreads(ctx, conn) {
			own[id] = true
		}
	}
	for i := range list {
		list[i].Own = own.see(threads[i], list[i].SQL)
		switch {
		case list[i].Own:
			info.Own++
		case list[i].Truncated:
			info.Truncated++
		}
	}
	info.Rows = len(list)
	return &sliceSource{list: list}, info, nil
}

// sliceSource yields statements held in memory.
type sliceSource struct {
	list []Statement
	i    int
}

func (s *sliceSource) Next() (Statement, error) {
	if s.i >= len(s.list) {
		return Statement{}, io.EOF
	}
	s.i++
	return s.list[s.i-1], nil
}

func (s *sliceSource) Close() error { return nil }

// ownProcessThreads are the performance_schema threads of this process's own connections
// (the driver's connection attributes name the client and its pid): their setup statement
// may have left the per-thread history while they read the catalog. Best effort: nil when
// the server keeps no connection attributes.
func ownProcessThreads(ctx context.Context, conn *connection.Conn) []string {
	q := `SELECT t.THREAD_ID FROM performance_schema.threads t
		JOIN performance_schema.session_connect_attrs p ON p.PROCESSLIST_ID = t.PROCESSLIST_ID AND p.ATTR_NAME = '_pid' AND p.ATTR_VALUE = ?
		JOIN performance_schema.session_connect_attrs c ON c.PROCESSLIST_ID = t.PROCESSLIST_ID AND c.ATTR_NAME = '_client_name' AND c.ATTR_VALUE = 'Go-MySQL-Driver' ` + Tag
	rows, err := conn.DB.QueryContext(ctx, q, strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	if rows.Err() != nil {
		return nil
	}
	return ids
}

// unreplayed gives back the application's statement of a digest sample that a replay ran
// (the statement, a line end and Tag; the replay's own reads have a space before Tag and
// stay innowarm's): a digest leaves comments out, so the replay's run
// and the application's share one row, whose sample is whichever ran longest. Left tagged,
// the application's statement would be skipped as innowarm's after its first replay.
func unreplayed(text string) string {
	if stmt, ok := strings.CutSuffix(strings.TrimRight(text, " \t\r\n"), "\n"+Tag); ok && !isTagged(stmt) {
		return strings.TrimRight(stmt, " \t\r\n")
	}
	return text
}
