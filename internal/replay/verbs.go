package replay

// writeVerbs are the statements that change rows; an EXPLAIN of one may run it (MySQL's
// EXPLAIN ANALYZE of an UPDATE or DELETE, MariaDB's ANALYZE).
var writeVerbs = setOf(`DELETE INSERT REPLACE UPDATE`)

// StatementVerbs lexes sql as the server does, an executable comment's content (/*! */,
// /*M! */) as code, and gives the verb of each statement it holds, split at its
// semicolons: its first word; for a WITH, the verb its common table expressions lead to;
// for an EXPLAIN, DESCRIBE or DESC, the verb of a DELETE, INSERT, REPLACE or UPDATE it
// names. A verb is "" where none can be told (a WITH that does not parse). For a guard
// that must not take a write for a read by its first word alone ("SELECT 1; DELETE ...",
// "/*!50000 DELETE ... */", "WITH x AS (...) DELETE ...").
func StatementVerbs(sql string, m Mode) ([]string, error) {
	toks, err := lex(sql, m)
	if err != nil {
		return nil, err
	}
	var out []string
	start := 0
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) && (toks[i].kind != tPunct || toks[i].text != ";") {
			continue
		}
		if stmt := toks[start:i]; len(stmt) > 0 {
			out = append(out, verbOf(stmt))
		}
		start = i + 1
	}
	return out, nil
}

func verbOf(toks []token) string {
	i := 0
	for i < len(toks) && toks[i].kind == tPunct && toks[i].text == "(" {
		i++
	}
	if i >= len(toks) || toks[i].kind != tWord {
		return ""
	}
	verb := toks[i].up
	switch verb {
	case "WITH":
		match, ok := matchParens(toks)
		if !ok {
			return ""
		}
		if withMain(toks, i, match) == "" {
			return "SELECT"
		}
		// The statement after the CTEs: its first word at the outer level.
		depth := 0
		for _, t := range toks[i+1:] {
			switch {
			case t.kind == tPunct && t.text == "(":
				depth++
			case t.kind == tPunct && t.text == ")":
				depth--
			case depth == 0 && t.kind == tWord && (writeVerbs[t.up] || t.up == "SELECT" || t.up == "TABLE" || t.up == "VALUES"):
				return t.up
			}
		}
		return ""
	case "EXPLAIN", "DESCRIBE", "DESC":
		for _, t := range toks[i+1:] {
			if t.kind == tWord && writeVerbs[t.up] {
				return t.up
			}
		}
	}
	return verb
}
