package flavor

import (
	"testing"
	"time"
)

func TestStatementSources(t *testing.T) {
	cases := []struct {
		file  string
		first string
		n     int
	}{
		{"mysql-8.0.36.json", "events_statements_summary_by_digest", 3},
		{"mysql-8.4.3.json", "events_statements_summary_by_digest", 3},
		{"percona-8.0.35.json", "events_statements_summary_by_digest", 3},
		{"mysql-5.7.44.json", "events_statements_history_long", 2},
		{"mariadb-10.11.19.json", "events_statements_history_long", 2},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			srcs := loadFixture(t, c.file).StatementSources()
			if len(srcs) != c.n || srcs[0].Table != c.first {
				t.Errorf("%s: %+v", c.file, srcs)
				return
			}
			for _, s := range srcs {
				if s.Text == "" || s.Schema == "" || s.OrderBy == "" || len(s.Consumers) == 0 || s.Size == "" {
					t.Errorf("%s: incomplete source %+v", c.file, s)
				}
			}
		})
	}
}

func TestSessionTimeLimit(t *testing.T) {
	cases := []struct {
		file  string
		limit time.Duration
		want  string
	}{
		{"mariadb-10.11.19.json", 1500 * time.Millisecond, "SET SESSION max_statement_time = 1.5"},
		{"mysql-8.0.36.json", 1500 * time.Millisecond, "SET SESSION max_execution_time = 1500"},
		{"mysql-5.7.44.json", 30 * time.Second, "SET SESSION max_execution_time = 30000"},
		{"mysql-8.0.36.json", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.file+" "+c.limit.String(), func(t *testing.T) {
			if got := loadFixture(t, c.file).SessionTimeLimit(c.limit); got != c.want {
				t.Errorf("%s %s: %q, want %q", c.file, c.limit, got, c.want)
			}
		})
	}
}
