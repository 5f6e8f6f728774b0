package replay

import (
	"errors"
	"io"
	"regexp"
	"strings"
)

// generalLog reads a general query log, MariaDB's or MySQL's:
//
//	240101 12:00:00	     6 Connect	app@localhost on shop using Socket    (MariaDB; the time only when it changed)
//			     6 Query	SELECT ...
//	2024-01-01T12:00:00.123456Z	    8 Init DB	shop                   (MySQL)
//	2024-01-01T12:00:00.123789Z	    8 Query	SELECT ...
//
// Each thread's current schema follows its Connect, Change user, Init DB and USE events.
// Query and Execute events are statements; a line that starts no event continues the
// previous statement.
type generalLog struct {
	lr      *lineReader
	close   func() error
	schemas map[string]string // thread id → current schema
	own     ownThreads

	pending    *generalEvent
	pendingBuf bodyBuilder
}

type generalEvent struct {
	thread, command string
	line            int
}

var connectSchemaRe = regexp.MustCompile(` on (.*) using \S+$`)

func (g *generalLog) Close() error { return g.close() }

func (g *generalLog) Next() (Statement, error) {
	for {
		line, cut, err := g.lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return Statement{}, err
		}
		if errors.Is(err, io.EOF) {
			if st, ok := g.finish(); ok {
				return st, nil
			}
			return Statement{}, io.EOF
		}
		m := generalEventRe.FindStringSubmatch(line)
		if m == nil {
			if isServerHeader(line) {
				st, ok := g.finish()
				clear(g.schemas) // the server restarted or reopened its log
				clear(g.own)
				if ok {
					return st, nil
				}
				continue
			}
			if g.pending != nil {
				g.pendingBuf.add(line, cut)
			}
			continue
		}
		st, ok := g.finish()
		g.pending = &generalEvent{thread: m[1], command: m[2], line: g.lr.line}
		g.pendingBuf.reset()
		g.pendingBuf.max = g.lr.max
		g.pendingBuf.add(m[3], cut)
		if ok {
			return st, nil
		}
	}
}

// finish completes the pending event: a statement to return, or a change of schema.
func (g *generalLog) finish() (Statement, bool) {
	ev := g.pending
	if ev == nil {
		return Statement{}, false
	}
	g.pending = nil
	arg := g.pendingBuf.b.String()
	switch ev.command {
	case "Connect", "Change user":
		delete(g.own, ev.thread) // a new session, maybe not innowarm's
		schema := ""
		if m := connectSchemaRe.FindStringSubmatch(arg); m != nil {
			schema = m[1]
		}
		g.schemas[ev.thread] = schema
	case "Init DB":
		g.schemas[ev.thread] = arg
	case "Quit":
		delete(g.schemas, ev.thread)
		delete(g.own, ev.thread)
	case "Query", "Execute":
		own := g.own.see(ev.thread, arg)
		if name, ok := useStatement(arg); ok {
			g.schemas[ev.thread] = name
			return Statement{}, false
		}
		return Statement{SQL: strings.TrimSpace(arg), Schema: g.schemas[ev.thread], Line: ev.line, TooLong: g.pendingBuf.tooLong, Own: own}, true
	}
	return Statement{}, false
}

// useStatement recognizes "USE db" (with comments, quoting, a trailing ';') and returns the
// schema.
func useStatement(sql string) (string, bool) {
	trimmed := strings.TrimLeft(sql, " \t\r\n")
	if len(trimmed) < 4 || !strings.EqualFold(trimmed[:3], "use") && !strings.HasPrefix(trimmed, "/*") && !strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "--") {
		return "", false
	}
	toks, err := lex(sql, Mode{})
	if err != nil {
		return "", false
	}
	for len(toks) > 0 && toks[len(toks)-1].kind == tPunct && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) != 2 || toks[0].kind != tWord || toks[0].up != "USE" {
		return "", false
	}
	switch toks[1].kind {
	case tWord:
		return toks[1].text, true
	case tQuoted:
		return toks[1].up, true
	}
	return "", false
}
