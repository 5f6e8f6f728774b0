package bench

import (
	"strconv"
	"strings"
)

// stmtKind says how a statement is run.
type stmtKind uint8

const (
	kindPlain       stmtKind = iota
	kindKeyed                // ends in " WHERE id = ": a primary key of t1 is appended per run
	kindCreateTable          // gets " Engine = X" when --engine is given
)

// Statement is one statement of a benchmark list.
type Statement struct {
	SQL  string
	Kind stmtKind
}

// Load types of --auto-generate-sql-load-type.
const (
	LoadMixed  = "mixed"
	LoadRead   = "read"
	LoadWrite  = "write"
	LoadKey    = "key"
	LoadUpdate = "update"
)

// LoadTypes lists the valid --auto-generate-sql-load-type values.
var LoadTypes = []string{LoadMixed, LoadRead, LoadWrite, LoadKey, LoadUpdate}

// writesData reports whether a load type's queries change t1.
func writesData(loadType string) bool {
	return loadType == LoadMixed || loadType == LoadWrite || loadType == LoadUpdate
}

// AutoOptions are mysqlslap's --auto-generate-sql settings.
type AutoOptions struct {
	LoadType          string
	AddAutoincrement  bool
	GUIDPrimary       bool
	SecondaryIndexes  int
	UniqueQueryNumber uint64 // default 10
	UniqueWriteNumber uint64 // default 10
	WriteNumber       uint64 // default 100: statements of the load phase, CREATE TABLE included
	ExecuteNumber     uint64 // queries per client; 0: see Plan.ClientLimit
	IntCols, CharCols int    // default 1 each
	IntIndex          bool   // --number-int-cols=N:1
	CharIndex         bool
}

// keyed reports whether t1 gets an id column that key lookups and updates use.
func (a AutoOptions) keyed() bool { return a.AddAutoincrement || a.GUIDPrimary }

// alphanumerics is mysqlslap's alphabet for random strings, "U" and "V" missing as there.
const alphanumerics = "0123456789ABCDEFGHIJKLMNOPQRSTWXYZabcdefghijklmnopqrstuvwxyz"

// randStringSize is the length of mysqlslap's random VARCHAR values.
const randStringSize = 126

// onlyPrintKey is the primary key mysqlslap substitutes when it does not connect.
const onlyPrintKey = "796c4422-1d94-102a-9d6d-00e0812d"

// autoGen builds statements in the order and with the random draws mysqlslap uses.
type autoGen struct {
	a   AutoOptions
	rnd *libcRandom
}

func (g *autoGen) randomString(b *strings.Builder) {
	for i := 0; i < randStringSize; i++ {
		b.WriteByte(alphanumerics[int(g.rnd.next())%len(alphanumerics)])
	}
}

// keyColumns writes what mysqlslap puts before the data columns: the id (AUTO_INCREMENT
// or GUID) and the secondary-index columns, then a comma when data columns follow (always
// after the GUID column of CREATE TABLE, mysqlslap's quirk).
func (g *autoGen) keyColumns(b *strings.Builder, autoinc, guid string, secondary func(i int) string, guidComma bool) {
	a := g.a
	cols := a.IntCols > 0 || a.CharCols > 0
	if a.AddAutoincrement {
		b.WriteString(autoinc)
		if cols {
			b.WriteString(",")
		}
	}
	if a.GUIDPrimary {
		b.WriteString(guid)
		if cols || guidComma {
			b.WriteString(",")
		}
	}
	if a.SecondaryIndexes > 0 {
		for i := 0; i < a.SecondaryIndexes; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(secondary(i))
		}
		if cols {
			b.WriteString(",")
		}
	}
}

// dataColumns writes one item per INT column, then one per VARCHAR column, separated by
// commas, as every mysqlslap builder does.
func (g *autoGen) dataColumns(b *strings.Builder, intItem, charItem func(n string)) {
	a := g.a
	for i := 1; i <= a.IntCols; i++ {
		intItem(strconv.Itoa(i))
		if i < a.IntCols || a.CharCols > 0 {
			b.WriteString(",")
		}
	}
	for i := 1; i <= a.CharCols; i++ {
		charItem(strconv.Itoa(i))
		if i < a.CharCols {
			b.WriteString(",")
		}
	}
}

func (g *autoGen) table() Statement {
	a := g.a
	var b strings.Builder
	b.WriteString("CREATE TABLE `t1` (")
	g.keyColumns(&b, "id serial", "id varchar(36) primary key",
		func(i int) string { return "id" + strconv.Itoa(i) + " varchar(36) unique key" }, true)
	g.dataColumns(&b, func(n string) {
		if a.IntIndex {
			b.WriteString("intcol" + n + " INT(32), INDEX(intcol" + n + ")")
		} else {
			b.WriteString("intcol" + n + " INT(32) ")
		}
	}, func(n string) {
		if a.CharIndex {
			b.WriteString("charcol" + n + " VARCHAR(128), INDEX(charcol" + n + ") ")
		} else {
			b.WriteString("charcol" + n + " VARCHAR(128)")
		}
	})
	b.WriteString(")")
	return Statement{SQL: b.String(), Kind: kindCreateTable}
}

func (g *autoGen) insert() Statement {
	var b strings.Builder
	b.WriteString("INSERT INTO t1 VALUES (")
	g.keyColumns(&b, "NULL", "uuid()", func(int) string { return "uuid()" }, false)
	g.dataColumns(&b, func(string) {
		b.WriteString(strconv.Itoa(int(g.rnd.next())))
	}, func(string) {
		b.WriteString("'")
		g.randomString(&b)
		b.WriteString("'")
	})
	b.WriteString(")")
	return Statement{SQL: b.String()}
}

func (g *autoGen) update() Statement {
	var b strings.Builder
	b.WriteString("UPDATE t1 SET ")
	g.dataColumns(&b, func(n string) {
		b.WriteString("intcol" + n + " = " + strconv.Itoa(int(g.rnd.next())))
	}, func(n string) {
		b.WriteString("charcol" + n + " = '")
		g.randomString(&b)
		b.WriteString("'")
	})
	if g.a.keyed() {
		b.WriteString(" WHERE id = ")
		return Statement{SQL: b.String(), Kind: kindKeyed}
	}
	return Statement{SQL: b.String()}
}

func (g *autoGen) selectStmt(key bool) Statement {
	var b strings.Builder
	b.WriteString("SELECT ")
	g.dataColumns(&b, func(n string) { b.WriteString("intcol" + n) }, func(n string) { b.WriteString("charcol" + n) })
	b.WriteString(" FROM t1")
	if key && g.a.keyed() {
		b.WriteString(" WHERE id = ")
		return Statement{SQL: b.String(), Kind: kindKeyed}
	}
	return Statement{SQL: b.String()}
}

// generateAuto returns mysqlslap's auto-generated statements: the load list (CREATE TABLE
// and --auto-generate-sql-unique-write-number INSERTs) and the query list
// (--auto-generate-sql-unique-query-number + 1 statements of the load type). Random values
// come from glibc's random() seeded with 1, as mysqlslap draws them before it seeds.
func generateAuto(a AutoOptions) (create, queries []Statement) {
	g := &autoGen{a: a, rnd: newLibcRandom(1)}
	create = append(create, g.table())
	for i := uint64(0); i < a.UniqueWriteNumber; i++ {
		create = append(create, g.insert())
	}
	n := a.UniqueQueryNumber + 1
	switch a.LoadType {
	case LoadRead:
		for i := uint64(0); i < n; i++ {
			queries = append(queries, g.selectStmt(false))
		}
	case LoadKey:
		for i := uint64(0); i < n; i++ {
			queries = append(queries, g.selectStmt(true))
		}
	case LoadWrite:
		for i := uint64(0); i < n; i++ {
			queries = append(queries, g.insert())
		}
	case LoadUpdate:
		for i := uint64(0); i < n; i++ {
			queries = append(queries, g.update())
		}
	default: // mixed: an INSERT, then SELECT and INSERT in turn
		queries = append(queries, g.insert())
		for i := uint64(0); i < a.UniqueQueryNumber; i++ {
			if i%2 == 0 {
				queries = append(queries, g.selectStmt(true))
			} else {
				queries = append(queries, g.insert())
			}
		}
	}
	return create, queries
}

// loadPhase is the statements the load phase runs: mysqlslap runs the load list and then
// its INSERTs again and again until --auto-generate-sql-write-number statements (the CREATE
// TABLE included) have run. User --create statements run once each.
func loadPhase(create []Statement, auto bool, writeNumber uint64) []Statement {
	if !auto {
		return create
	}
	var out []Statement
	list := create
	for uint64(len(out)) < writeNumber {
		for _, s := range list {
			if uint64(len(out)) == writeNumber {
				break
			}
			out = append(out, s)
		}
		if len(create) < 2 {
			break
		}
		list = create[1:]
	}
	return out
}

// Engine is one --engine item: "innodb" or "memory:max_rows=100".
type Engine struct {
	Name, Option string
}

// apply adds the engine to a CREATE TABLE statement as mysqlslap does.
func (e Engine) apply(s Statement) string {
	if e.Name == "" || s.Kind != kindCreateTable {
		return s.SQL
	}
	if e.Option != "" {
		return s.SQL + " Engine = " + e.Name + " " + e.Option
	}
	return s.SQL + " Engine = " + e.Name
}
