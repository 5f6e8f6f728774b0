package flavor

// StatementTimeLimitVariable names the session variable that holds the server's time limit
// on statements: MariaDB's max_statement_time (10.1.2+, every statement, in seconds),
// MySQL's max_execution_time (5.7.8+, read-only SELECTs, in milliseconds). It is empty when
// the server has none. innowarm sets it to 0 (no limit) on its own sessions, so that a small
// global limit set for the application does not stop its dictionary, page-list and status
// reads; the scans carry their own limit (WithTimeLimit), replay sets --replay-timeout
// (SessionTimeLimit).
func (s Server) StatementTimeLimitVariable() string {
	if s.IsMariaDB() {
		if !s.Version.AtLeast(10, 1, 2) {
			return ""
		}
		return "max_statement_time"
	}
	if !s.Version.AtLeast(5, 7, 8) {
		return ""
	}
	return "max_execution_time"
}
