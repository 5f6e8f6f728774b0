package bench

import (
	"bufio"
	"io"
)

// PrintOnly prints what a mysqlslap-style run would send, without connecting, line for line
// as `mysqlslap --only-print` does (clients one after the other instead of interleaved).
// innowarm's own bookkeeping (the schema's ownership mark) is not shown.
func PrintOnly(out io.Writer, p *Plan) error {
	w := bufio.NewWriter(out)
	line := func(s string) {
		_, _ = w.WriteString(s)
		_, _ = w.WriteString(";\n")
	}
	preserve := len(p.LoadStmts) == 0 || p.NoDrop // mysqlslap drops only when it creates
	drop := "DROP SCHEMA IF EXISTS `" + p.Schema + "`"
	for _, eng := range p.Engines {
		for _, clients := range p.Concurrency {
			for it := 0; it < p.Iterations; it++ {
				if !preserve {
					line(drop)
				}
				if len(p.LoadStmts) > 0 {
					line("CREATE SCHEMA `" + p.Schema + "`")
					line("use " + p.Schema)
					for _, s := range p.LoadStmts {
						line(eng.apply(s))
					}
				}
				if p.Commit > 0 {
					line("SET AUTOCOMMIT=0")
				}
				for _, s := range p.PreStmts {
					line(s.SQL)
				}
				limit := p.ClientLimit(clients)
				for c := 0; c < clients; c++ {
					printClient(line, p, limit)
				}
				for _, s := range p.PostStmts {
					line(s.SQL)
				}
			}
		}
		if !preserve {
			line(drop)
		}
	}
	return w.Flush()
}

func printClient(line func(string), p *Plan, limit uint64) {
	if p.Commit > 0 {
		line("SET AUTOCOMMIT=0")
	}
	var n uint64
	commits := 0
loop:
	for {
		for _, s := range p.QueryStmts {
			q := s.SQL
			if s.Kind == kindKeyed {
				q += " '" + onlyPrintKey + "'"
			}
			line(q)
			n++
			if p.Commit > 0 {
				commits++
				if commits == p.Commit {
					commits = 0
					line("COMMIT")
				}
			}
			if limit > 0 && n == limit {
				break loop
			}
		}
		if limit == 0 || n >= limit {
			break
		}
	}
	if p.Commit > 0 {
		line("COMMIT")
	}
}
