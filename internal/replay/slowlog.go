package replay

import (
	"errors"
	"io"
	"regexp"
	"strings"
)

// slowLog reads a slow query log, MariaDB's or MySQL's:
//
//	# Time: 2024-01-01T12:00:00.123456Z           (MySQL; MariaDB: "# Time: 240101 12:00:00", not always)
//	# User@Host: app[app] @ localhost []  Id: 8
//	# Thread_id: 8  Schema: shop  QC_hit: No      (MariaDB only)
//	# Query_time: 0.000216  Lock_time: 0.000000 Rows_sent: 1  Rows_examined: 0
//	use shop;                                     (when the schema changed; MariaDB quotes it)
//	SET timestamp=1704110400;                     (or SET last_insert_id=1,insert_id=2,timestamp=...;)
//	SELECT ...                                    (any number of lines)
//	  ... ;
//
// MariaDB (and Percona Server: "# Schema: shop  Last_errno: 0") names each entry's schema;
// MySQL writes "use" only when it differs from the
// previous entry's, so a statement of a connection without a schema inherits the last one.
type slowLog struct {
	lr      *lineReader
	close   func() error
	lastUse string // schema of the last "use" line
	own     ownThreads
}

var (
	mariadbSchemaRe = regexp.MustCompile(`^# Thread_id: \d+\s+Schema: (.*?)(?:  QC_hit: .*)?$`)
	slowEntryRe     = regexp.MustCompile(`^# (Time|User@Host): `)
	// setTimestampRe is the line before each statement: "SET timestamp=N;", with
	// "last_insert_id=N,insert_id=N," before it when the statement used them.
	setTimestampRe = regexp.MustCompile(`(?i)^SET (?:\w+=-?\d+,)*timestamp=\d+;$`)
	// perconaSchemaRe is Percona Server's schema line.
	perconaSchemaRe = regexp.MustCompile(`^# Schema: (.*?)  Last_errno: `)
	// slowThreadRe reads the session's id: MySQL's and Percona's "# User@Host: ... Id: 8",
	// MariaDB's "# Thread_id: 8  Schema: ...".
	slowThreadRe = regexp.MustCompile(`^# (?:User@Host: .*\sId:\s+(\d+)\s*$|Thread_id: (\d+)\s)`)
)

func (s *slowLog) Close() error { return s.close() }

func (s *slowLog) Next() (Statement, error) {
	var body bodyBuilder
	body.max = s.lr.max
	schema, hasSchema := "", false
	thread := ""
	start := 0
	for {
		line, cut, err := s.lr.next()
		if errors.Is(err, io.EOF) {
			if body.empty() {
				return Statement{}, io.EOF
			}
			break
		}
		if err != nil {
			return Statement{}, err
		}
		if !body.empty() {
			if slowEntryRe.MatchString(line) || isServerHeader(line) {
				s.lr.back()
				break
			}
			body.add(line, cut)
			continue
		}
		switch {
		case strings.HasPrefix(line, "#"):
			if m := slowThreadRe.FindStringSubmatch(line); m != nil {
				thread = m[1] + m[2]
			}
			if m := mariadbSchemaRe.FindStringSubmatch(line); m != nil {
				schema, hasSchema = m[1], true
			} else if m := perconaSchemaRe.FindStringSubmatch(line); m != nil {
				schema, hasSchema = m[1], true
			}
		case isServerHeader(line):
			s.lastUse = ""
			clear(s.own) // the server restarted: its thread ids start again
		case len(line) > 4 && strings.EqualFold(line[:4], "use ") && strings.HasSuffix(line, ";"):
			if name, ok := useArg(line[4:]); ok {
				s.lastUse = name
			}
		case setTimestampRe.MatchString(line), strings.TrimSpace(line) == "":
		default:
			start = s.lr.line
			body.add(line, cut)
		}
	}
	if !hasSchema {
		schema = s.lastUse
	}
	sql := strings.TrimSpace(body.b.String())
	if !body.tooLong {
		sql = strings.TrimSuffix(sql, ";")
	}
	own := s.own.see(thread, sql)
	return Statement{SQL: sql, Schema: schema, Line: start, TooLong: body.tooLong, Own: own}, nil
}
