package warm

import (
	"fmt"
	"strings"
	"time"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// StatementTag marks every statement innowarm's warm runs, so that it can be found (and
// shown absent after an abort) in the processlist.
const StatementTag = "/* innowarm:warm */"

// KeyRange bounds a unit on the first key column: Low <= col < High, where a nil bound is
// open. The first range of a nullable column also takes the NULLs.
type KeyRange struct {
	Low, High   any
	IncludeNull bool
}

// fromClause names the rows a unit reads: the table, FOR SYSTEM_TIME ALL for versioned
// tables (otherwise the server filters on the hidden row_end column and reads the clustered
// index for every secondary entry), the partition, and the index hint.
func fromClause(srv flavor.Server, t *catalog.Table, p *catalog.Part, ix *catalog.Index) string {
	var b strings.Builder
	b.WriteString(t.Quoted())
	named := p != nil && p.Name != ""
	if named {
		b.WriteString(" PARTITION (" + sqltext.Ident(p.Name) + ")")
	}
	// The partition comes first (MariaDB's grammar). A table partitioned BY SYSTEM_TIME
	// refuses FOR SYSTEM_TIME beside a named partition (error 4142), and needs none: each of
	// its partitions gives all its rows, history or current.
	if t.SystemVersioned && srv.SystemVersioning() && !(named && t.PartitionedBySystemTime) {
		b.WriteString(" FOR SYSTEM_TIME ALL")
	}
	switch {
	case ix.Hidden:
		// No index usable: the server reads the table, i.e. the hidden clustered index.
		b.WriteString(" USE INDEX ()")
	default:
		b.WriteString(" FORCE INDEX (" + sqltext.Ident(ix.Name) + ")")
	}
	return b.String()
}

// params collects statement arguments as placeholders, or writes them inline for display
// (execution keeps placeholders: the driver escapes them for the session's sql_mode).
type params struct {
	inline bool
	args   []any
}

func (p *params) add(v any) string {
	if !p.inline {
		p.args = append(p.args, v)
		return "?"
	}
	switch x := v.(type) {
	case string:
		return sqltext.String(x)
	case []byte:
		return fmt.Sprintf("0x%x", x)
	default:
		return fmt.Sprint(x)
	}
}

// rangeCondition is the WHERE clause of a key range on column col.
func rangeCondition(col string, r *KeyRange, p *params) string {
	if r == nil {
		return ""
	}
	qc := sqltext.Ident(col)
	var conds []string
	if r.Low != nil {
		conds = append(conds, qc+" >= "+p.add(r.Low))
	}
	if r.High != nil {
		conds = append(conds, qc+" < "+p.add(r.High))
	}
	cond := strings.Join(conds, " AND ")
	if r.IncludeNull && cond != "" {
		cond = "(" + cond + " OR " + qc + " IS NULL)"
	}
	return cond
}

// prefixCondition makes the optimizer range-scan an index whose first key part is a column
// prefix: such an index is never used for an index-only scan, but a range is. Not every
// string is >= ”: under a PAD SPACE collation (the default ones) the empty string
// compares as spaces, and a value that starts with a character below the space (a tab, a
// newline) sorts before it. prefixBelowEmpty reads those: a scan of the index is the two
// ranges (no single condition covering every value is range-scanned: the optimizer drops
// a range that is the whole index, and then reads the table).
func prefixCondition(col string) string {
	qc := sqltext.Ident(col)
	return "(" + qc + " >= '' OR " + qc + " IS NULL)"
}

// prefixBelowEmpty is the other range of a scan of a prefix index (prefixCondition).
func prefixBelowEmpty(col string) string {
	return sqltext.Ident(col) + " < ''"
}

// buildSelect writes the statement of a unit without its time limit.
func buildSelect(srv flavor.Server, u *Unit, p *params) string {
	from := fromClause(srv, u.Table, u.Part, u.Index)
	if u.keyed != nil {
		if u.keyed.perRun {
			return buildRunCounts(from, u.keyed.conds, wholeStep(u.keyed))
		}
		return buildKeyedSelect(from, u.keyed)
	}
	what := "COUNT(*)"
	if u.Kind == KindLOB {
		// LENGTH() needs the whole value, so InnoDB reads every off-page page of it; the
		// result is one number.
		var terms []string
		for _, c := range u.Table.LOBColumns() {
			terms = append(terms, "COALESCE(LENGTH("+sqltext.Ident(c.Name)+"), 0)")
		}
		what = "SUM(" + strings.Join(terms, " + ") + ")"
	}
	if u.prefixColumn != "" {
		// The two ranges of the index, each a statement of its own to the optimizer,
		// counted in one: values from '' on (and NULL), and those that sort before ''.
		part := func(cond string) string {
			where := []string{cond}
			if c := rangeCondition(u.splitColumn, u.Range, p); c != "" {
				where = append([]string{c}, where...) // placeholders in order: each part adds its own
			}
			return "(SELECT " + what + " FROM " + from + " WHERE " + strings.Join(where, " AND ") + ")"
		}
		return "SELECT " + StatementTag + " " + part(prefixCondition(u.prefixColumn)) + " + " + part(prefixBelowEmpty(u.prefixColumn))
	}
	var where []string
	if c := rangeCondition(u.splitColumn, u.Range, p); c != "" {
		where = append(where, c)
	}
	q := "SELECT " + StatementTag + " " + what + " FROM " + from
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q
}

// explainStatement is what the plan EXPLAINs for the unit: its statement, or for a prefix
// index's two ranges the first alone (EXPLAIN's first row is then the range's, not the
// sum's).
func explainStatement(srv flavor.Server, u *Unit) (string, []any) {
	if u.prefixColumn == "" {
		return Statement(srv, u, 0)
	}
	var p params
	where := []string{prefixCondition(u.prefixColumn)}
	if c := rangeCondition(u.splitColumn, u.Range, &p); c != "" {
		where = append([]string{c}, where...)
	}
	return "SELECT " + StatementTag + " COUNT(*) FROM " + fromClause(srv, u.Table, u.Part, u.Index) + " WHERE " + strings.Join(where, " AND "), p.args
}

// Statement is the unit's statement with the server's per-statement time limit.
func Statement(srv flavor.Server, u *Unit, limit time.Duration) (string, []any) {
	var p params
	q := buildSelect(srv, u, &p)
	return srv.WithTimeLimit(q, limit), p.args
}

// SQLText renders the statement with its arguments inline, for --dry-run --verbose.
func SQLText(srv flavor.Server, u *Unit, limit time.Duration) string {
	p := params{inline: true}
	return srv.WithTimeLimit(buildSelect(srv, u, &p), limit)
}
