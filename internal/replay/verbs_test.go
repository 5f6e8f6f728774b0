package replay

import (
	"reflect"
	"testing"
)

// TestStatementVerbs: each statement's verb as the server would run it, executable
// comments as code, a WITH by the statement it leads to, an EXPLAIN by the write it names.
func TestStatementVerbs(t *testing.T) {
	for sql, want := range map[string][]string{
		"select 1":                                                  {"SELECT"},
		"select 1; delete from t":                                   {"SELECT", "DELETE"},
		"/*!50000 delete from t */":                                 {"DELETE"},
		"/*M! update t set a = 1 */":                                {"UPDATE"},
		"/* delete */ select 1":                                     {"SELECT"},
		"select 'x; delete from t'":                                 {"SELECT"},
		"with x as (select 1) select * from x":                      {"SELECT"},
		"with x as (select 3 id) delete t from t join x using (id)": {"DELETE"},
		"with recursive r (n) as (select 1 union all select n + 1 from r where n < 3) update t join r on t.id = r.n set t.a = 1": {"UPDATE"},
		"explain analyze delete from t":             {"DELETE"},
		"explain select * from t":                   {"EXPLAIN"},
		"(select 1) union (select 2)":               {"SELECT"},
		"set @a = (select 1); insert t values (1);": {"SET", "INSERT"},
	} {
		got, err := StatementVerbs(sql, Mode{})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("StatementVerbs(%q) = %q, %v; want %q", sql, got, err, want)
		}
	}
	// Only without backslash escapes does the string end before the DELETE.
	sql := `select 'a\'; delete from t; -- '`
	if got, _ := StatementVerbs(sql, Mode{}); !reflect.DeepEqual(got, []string{"SELECT"}) {
		t.Errorf("with backslash escapes: %q", got)
	}
	if got, _ := StatementVerbs(sql, Mode{NoBackslashEscapes: true}); !reflect.DeepEqual(got, []string{"SELECT", "DELETE"}) {
		t.Errorf("NO_BACKSLASH_ESCAPES: %q", got)
	}
}
