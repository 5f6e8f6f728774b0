package bench

import (
	"database/sql/driver"
	"strconv"
	"strings"
)

// A client's work is a program: the statements it sends, one at a time, each decided when
// the previous one is answered. Both ways of talking to the server (a thread per client,
// or an event loop for many) run the same programs.

// psStmt is a server-side prepared statement on one connection.
type psStmt struct {
	sql     string
	ds      driver.Stmt // when the driver prepared it (thread per client)
	id      uint32      // when the event loop prepared it
	nparams int
}

// step is one statement to send.
type step struct {
	text   string  // SQL of a text statement (COM_QUERY)
	ps     *psStmt // or a prepared statement with integer arguments
	args   [4]int64
	nargs  int
	record bool // a query: timed and counted
	event  bool // it completes an event (a workload's transaction)
	// begins marks the first statement of a new event (not of its retry): a transaction's
	// latency counts from its start.
	begins bool
}

// describe names the statement in error messages.
func (s *step) describe() string {
	if s.ps == nil {
		return s.text
	}
	var b strings.Builder
	b.WriteString(s.ps.sql)
	for i := 0; i < s.nargs; i++ {
		if i == 0 {
			b.WriteString(" -- ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(s.args[i], 10))
	}
	return b.String()
}

// program decides a client's next statement.
type program interface {
	// next returns the next statement; false when the client is done. expired says the
	// round's --time is over.
	next(expired bool) (step, bool)
	// done reports how the statement went: failed is true for a failure that was counted
	// (--ignore-errors).
	done(s step, failed bool)
	// queries is how many queries the client ran.
	queries() uint64
}

// slapProgram is mysqlslap's client: the statements in order, again from the first when
// the list ends before the client's limit, a COMMIT after every --commit queries and once
// at the end.
type slapProgram struct {
	w           *worker
	stmts       []Statement
	limit       uint64 // 0: one pass
	cycle       bool   // until --time runs out
	commit      int
	n           uint64
	i           int
	commits     int
	commitDue   bool
	finished    bool
	finalCommit bool
}

func newSlapProgram(w *worker, spec roundSpec) *slapProgram {
	return &slapProgram{w: w, stmts: w.r.p.QueryStmts, limit: spec.limit, cycle: spec.cycle, commit: w.r.p.Commit}
}

func (p *slapProgram) queries() uint64 { return p.n }

func (p *slapProgram) next(expired bool) (step, bool) {
	if p.commitDue {
		p.commitDue = false
		return step{text: "COMMIT"}, true
	}
	if !p.finished {
		switch {
		case expired, !p.cycle && p.limit > 0 && p.n >= p.limit:
			p.finished = true
		case p.i == len(p.stmts):
			if !p.cycle && (p.limit == 0 || p.n >= p.limit) {
				p.finished = true
			} else {
				p.i = 0
			}
		}
	}
	if p.finished {
		if p.commit > 0 && !p.finalCommit && !p.w.st.stop.Load() {
			p.finalCommit = true
			return step{text: "COMMIT"}, true
		}
		return step{}, false
	}
	// A new connection (--detach) comes before a query, never between it and its COMMIT.
	if !p.w.detach(p.n) {
		return step{}, false
	}
	s := &p.stmts[p.i]
	p.i++
	q := s.SQL
	if s.Kind == kindKeyed {
		q = p.w.keyed(q)
	}
	return step{text: q, record: true}, true
}

func (p *slapProgram) done(s step, failed bool) {
	if !s.record {
		return
	}
	p.n++
	if p.commit > 0 {
		p.commits++
		if p.commits == p.commit {
			p.commits = 0
			p.commitDue = true
		}
	}
}

// workloadProgram runs --workload events: a point select (point-select, hot-rows), or
// sysbench's read-only or read-write transaction.
type workloadProgram struct {
	w        *worker
	spec     roundSpec
	seq      [2 + pointSelectsPerTx + 4 + 4]step
	len, pos int
	failed   bool // a statement of the transaction failed (counted): ROLLBACK, then again
	retries  int  // failed attempts of the current event, other errors than retryable ones
	retryDue bool // the next transaction is the failed event's again
	n        uint64
}

// maxTxAttempts bounds how often one event's transaction is tried again after a statement
// failed with an error that --ignore-errors counts (one that always fails must not hold the
// client). Deadlocks, lock waits and changed records pass: those are retried until the
// transaction commits, as sysbench does.
const maxTxAttempts = 10

func newWorkloadProgram(w *worker, spec roundSpec) *workloadProgram {
	return &workloadProgram{w: w, spec: spec}
}

func (p *workloadProgram) queries() uint64 { return p.n }

func (p *workloadProgram) next(expired bool) (step, bool) {
	if p.failed {
		// The server rolled the transaction back (a deadlock, a lock wait timeout): the rest
		// of its statements would run outside any transaction (the INSERT of a row whose
		// DELETE was undone fails on its key). As sysbench does, roll back and run the event
		// again, with new rows; the event counts once, when it commits.
		p.failed, p.pos = false, p.len
		if !p.w.lastRetryable {
			p.retries++
		}
		p.retryDue = p.retries < maxTxAttempts
		return step{text: "ROLLBACK"}, true
	}
	if p.pos < p.len {
		s := p.seq[p.pos]
		p.pos++
		return s, true
	}
	retry := p.retryDue
	p.retryDue = false
	if !retry {
		p.retries = 0
	}
	w := p.w
	if expired || w.st.stop.Load() {
		return step{}, false
	}
	if !retry && p.spec.events > 0 && w.st.events.Add(1) > p.spec.events {
		return step{}, false
	}
	// Between events, and before the event takes its prepared statements: those of the
	// connection it will run on.
	if !w.detach(p.n) {
		return step{}, false
	}
	p.len, p.pos, p.failed = 0, 0, false
	point := func(st *sbStmts, id int64, event bool) {
		p.seq[p.len] = step{ps: st.point, args: [4]int64{id}, nargs: 1, record: true, event: event}
		p.len++
	}
	switch w.r.p.Workload {
	case WorkloadHotRows:
		t, st := p.table()
		point(st, w.r.hotIDs[t.sampler.Next(w.rng)-1], true)
	case WorkloadReadOnly, WorkloadReadWrite:
		p.seq[p.len] = step{text: "BEGIN", record: true}
		p.len++
		// As sysbench's oltp_common.lua: each group of statements (the point selects, each
		// kind of range, each kind of write) goes to a table drawn for it, so one
		// transaction spans several tables, as its locks and its pages do in sysbench.
		t, st := p.table()
		for i := 0; i < pointSelectsPerTx; i++ {
			point(st, t.sampler.Next(w.rng), false)
		}
		for kind := range 4 {
			t, st := p.table()
			ps := [...]*psStmt{st.simple, st.sum, st.order, st.distinct}[kind]
			id := t.sampler.Next(w.rng)
			p.seq[p.len] = step{ps: ps, args: [4]int64{id, id + w.r.p.RangeSize - 1}, nargs: 2, record: true}
			p.len++
		}
		if w.r.p.Workload == WorkloadReadWrite {
			p.writes()
		}
		p.seq[p.len] = step{text: "COMMIT", record: true, event: true}
		p.len++
	default:
		t, st := p.table()
		point(st, t.sampler.Next(w.rng), true)
	}
	s := p.seq[0]
	s.begins = !retry
	p.pos = 1
	return s, true
}

// table draws the table of the next statement (or group of statements), uniformly, as
// sysbench's get_table_num().
func (p *workloadProgram) table() (*sbTable, *sbStmts) {
	w := p.w
	ti := 0
	if n := len(w.r.tables); n > 1 {
		ti = w.rng.IntN(n)
	}
	return &w.r.tables[ti], &w.prepared[ti]
}

// writes adds read-write's writes, as sysbench's oltp_read_write: an indexed UPDATE and a
// non-indexed one, each of a row of its own, then the DELETE of a third row and its INSERT
// back with the same id (the table keeps its rows). Each kind draws its table, as
// sysbench's do; the DELETE and its INSERT share theirs.
func (p *workloadProgram) writes() {
	w := p.w
	add := func(ps *psStmt, nargs int, args ...int64) {
		s := step{ps: ps, nargs: nargs, record: true}
		copy(s.args[:], args)
		p.seq[p.len] = s
		p.len++
	}
	t, st := p.table()
	add(st.indexUpdate, 1, t.sampler.Next(w.rng))
	t, st = p.table()
	add(st.nonIndexUpdate, 2, w.rng.Int64(), t.sampler.Next(w.rng))
	t, st = p.table()
	id := t.sampler.Next(w.rng)
	add(st.del, 1, id)
	// The row's new k is a key of --dist too, as sysbench's get_id(): under a skewed
	// distribution its entry goes to the hot part of the k index, not anywhere in it.
	add(st.ins, 4, id, t.sampler.Next(w.rng), w.rng.Int64(), w.rng.Int64())
}

func (p *workloadProgram) done(s step, failed bool) {
	if s.record {
		p.n++
	}
	if failed && p.len > 1 && s.text != "ROLLBACK" {
		p.failed = true
	}
}
