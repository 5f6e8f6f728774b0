// Package catalog reads what there is to warm: the base tables of the chosen schemas, every
// index with its columns in order and their prefix lengths, partitions and subpartitions,
// tables whose clustered index is hidden, columns that may live on off-page LOB pages,
// InnoDB tablespace ids and persistent-statistics sizes. What cannot be warmed (views,
// other engines, FULLTEXT and SPATIAL indexes, ignored indexes) is listed with the reason.
package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sqlerr"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// SystemSchemas are never selected by --all-databases or wildcards.
var SystemSchemas = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// IsOwnerMark says whether a table is innowarm's own mark on a schema it created (bench's
// innowarm_bench_owner, experiment's innowarm_experiment_owner, where the server has no
// schema comments): named innowarm_..._owner and commented "created by innowarm ...". It is
// no data of the user's, and is left out of every selection. A user's table of that name
// without the comment is not.
func IsOwnerMark(table, comment string) bool {
	return strings.HasPrefix(table, "innowarm_") && strings.HasSuffix(table, "_owner") && strings.HasPrefix(comment, "created by innowarm ")
}

// Filter chooses tables.
type Filter struct {
	Schemas []string  // -D a,b
	All     bool      // --all-databases
	Tables  []Pattern // --tables
	Exclude []Pattern // --exclude
	// Within makes Schemas bound Tables, as mysqldump's "db tables..." does: the patterns
	// choose among the tables of those schemas only, one without a schema in each of them,
	// and a pattern whose schema part names none of them is refused (-D a --tables b.t is
	// no union, nor b.t alone with -D dropped without a word). -D on the command line sets
	// it; a database= of an option file does not, and is then only the schema of the
	// patterns without one, as a default database is for the mysql client. All lifts it.
	Within bool
	// Exact, when set, keeps only these tables (within the rest of the filter), and names
	// them in the queries: MariaDB's information_schema then opens only their definitions,
	// where a schema filter opens every table of the schema (STATISTICS, PARTITIONS and the
	// sizes of TABLES took 4-5 s each for a schema of 20,000 tables, 0.08 s for 200 of them
	// named). For callers that know their tables: a manifest's, a page list's.
	Exact []TableName
}

// lowerCased is f with every name and pattern in lower case, for a server with
// lower_case_table_names = 1.
func (f Filter) lowerCased() Filter {
	g := f
	g.Schemas = make([]string, len(f.Schemas))
	for i, s := range f.Schemas {
		g.Schemas[i] = strings.ToLower(s)
	}
	lower := func(ps []Pattern) []Pattern {
		out := make([]Pattern, len(ps))
		for i, p := range ps {
			p.Schema, p.Table = strings.ToLower(p.Schema), strings.ToLower(p.Table)
			out[i] = p
		}
		return out
	}
	g.Tables, g.Exclude = lower(f.Tables), lower(f.Exclude)
	g.Exact = make([]TableName, len(f.Exact))
	for i, n := range f.Exact {
		g.Exact[i] = TableName{strings.ToLower(n.Schema), strings.ToLower(n.Table)}
	}
	if f.Exact == nil {
		g.Exact = nil
	}
	return g
}

// TableName names one table.
type TableName struct{ Schema, Table string }

// maxExactNames: past this many tables Load filters by schema only (and keeps the named
// tables in Go), well below a prepared statement's 65,535 placeholders.
const maxExactNames = 20000

// Empty reports whether nothing was chosen.
func (f Filter) Empty() bool { return len(f.Schemas) == 0 && !f.All && len(f.Tables) == 0 }

// Catalog is the chosen tables and what was skipped.
type Catalog struct {
	Server  flavor.Server
	Tables  []*Table
	Skipped []Skip
	Notes   []string

	// StatisticsDenied is why mysql.innodb_index_stats could not be read (a least-privilege
	// user), empty when it could.
	StatisticsDenied string

	// estimateNotes say why sizes were estimated; they are notes only where the files did
	// not count those indexes instead.
	estimateNotes []string

	// memo holds dictionary reads made beside this load (KnownRoots), shared with its
	// subsets; nil for a catalog not made by Load.
	memo *loadMemo
}

// Estimated lists the indexes (schema.table index, with the partition) whose size is
// neither from statistics nor counted in their file: information_schema.TABLES's
// allocation, shared out among a table's secondary indexes, which only bounds them.
func (c *Catalog) Estimated() []string {
	var out []string
	for _, t := range c.Tables {
		for _, p := range t.Parts {
			for _, ix := range t.Indexes {
				if sz, ok := ix.Sizes[p.Name]; ok && !sz.Known && !sz.FromFile {
					out = append(out, t.FullName()+partLabel(p)+" index "+ix.Name)
				}
			}
		}
	}
	return out
}

// Skip is something that was chosen but cannot be warmed, with the reason.
type Skip struct {
	Schema string `json:"schema"`
	Table  string `json:"table"`
	Index  string `json:"index,omitempty"`
	Reason string `json:"reason"`
	// NotInPool marks what has no pages in the InnoDB buffer pool at all (views, sequences,
	// other engines): nothing was lost by skipping it.
	NotInPool bool `json:"not_in_pool,omitempty"`
}

// NoInnoDBTable says why a selection that matched something holds no InnoDB table ("" when
// it holds one, or matched nothing): every table it named is a view, a sequence or of
// another engine, which have no pages in the buffer pool. A warm of it said "every
// tablespace of the selection was already resident" and exited 0.
func (c *Catalog) NoInnoDBTable() string {
	if len(c.Tables) > 0 || len(c.Skipped) == 0 {
		return ""
	}
	for _, s := range c.Skipped {
		if !s.NotInPool {
			return ""
		}
	}
	s := c.Skipped[0]
	why := fmt.Sprintf("matches no InnoDB table: %s is a %s", sqltext.Table(s.Schema, s.Table), s.Reason)
	if strings.HasPrefix(s.Reason, "engine ") {
		why = fmt.Sprintf("matches no InnoDB table: %s: %s", sqltext.Table(s.Schema, s.Table), s.Reason)
	}
	if n := len(c.Skipped) - 1; n > 0 {
		why += fmt.Sprintf(" (and %d more of no InnoDB table)", n)
	}
	return why
}

// Table is one base table.
type Table struct {
	Schema, Name    string
	Engine          string
	Rows            int64
	DataLength      int64
	IndexLength     int64
	Columns         []*Column
	Indexes         []*Index
	Parts           []*Part
	SystemVersioned bool
	// PartitionedBySystemTime: MariaDB's PARTITION BY SYSTEM_TIME, whose partitions hold
	// the history and the current rows apart.
	PartitionedBySystemTime bool
	// Aux are hidden InnoDB tables that belong to this one: the auxiliary tables of its
	// FULLTEXT indexes. SQL cannot scan them; the native loader can read their pages.
	Aux []AuxSpace

	partitioned bool // information_schema.TABLES.CREATE_OPTIONS says so
	pageSize    int  // the server's innodb_page_size, for MayHoldLOBs
}

// AuxSpace is a hidden table's tablespace.
type AuxSpace struct {
	Name     string // InnoDB's internal name, e.g. db/FTS_000000000000001a_CONFIG
	Space    uint32
	FileSize int64
	// Role names it portably, without the server-specific ids in Name:
	// "fts:CONFIG", "fts:DELETED", ..., or "fts:<fulltext index>:INDEX_3".
	Role string
}

// FilePath is where the auxiliary table's file lies when the server does not list it (it
// lists one only once opened since its start, on MariaDB): beside its table's file
// (tableFile, in the datadir or the table's DATA DIRECTORY), named after it, else in the
// datadir; "" when neither is known.
func (a AuxSpace) FilePath(tableFile, datadir string) string {
	switch {
	case tableFile != "":
		return filepath.Join(filepath.Dir(tableFile), filepath.Base(a.Name)+".ibd")
	case datadir != "":
		return filepath.Join(datadir, a.Name+".ibd")
	}
	return ""
}

// AuxByRole finds an auxiliary tablespace by its portable role.
func (t *Table) AuxByRole(role string) *AuxSpace {
	for i := range t.Aux {
		// A manifest written before roles were upper-cased may carry MySQL's lower case.
		if t.Aux[i].Role == role || strings.EqualFold(auxWords(t.Aux[i].Role), auxWords(role)) && auxIndex(t.Aux[i].Role) == auxIndex(role) {
			return &t.Aux[i]
		}
	}
	return nil
}

// Part is one B-tree set of a table: the whole table, a partition, or a subpartition.
type Part struct {
	Name         string // for PARTITION (...); "" when the table is not partitioned
	Partition    string
	Subpartition string
	StatsName    string // table name in mysql.innodb_index_stats / InnoDB's internal name suffix
	Space        uint32
	SpaceKnown   bool
	// SharedSpace: other tables are stored in the same tablespace (MySQL's general
	// tablespaces): a page number there does not say whose page it is, nor does an index
	// name alone (each table has its PRIMARY).
	SharedSpace bool
	TableID     uint64
	FileSize    int64 // bytes of the tablespace file, when the server reports it
	Rows        int64
	DataLength  int64
	IndexLength int64
}

// Index is one index of a table.
type Index struct {
	Name      string
	Unique    bool
	Primary   bool
	Clustered bool   // InnoDB's clustered index: PRIMARY, the first NOT NULL unique key, or GEN_CLUST_INDEX
	Hidden    bool   // GEN_CLUST_INDEX: no SQL name
	Type      string // BTREE, FULLTEXT, SPATIAL, HASH
	Usable    bool   // the optimizer may use it (not IGNORED / invisible)
	Columns   []IndexColumn
	Sizes     map[string]IndexSize // by Part.Name
	// Internal: InnoDB's own secondary index that no statement names (FTS_DOC_ID_INDEX of a
	// table with a FULLTEXT index and no FTS_DOC_ID column of its own): information_schema
	// does not list it, the server's loader loads it, and a MATCH() reads it.
	Internal bool
}

// IndexColumn is one key part.
type IndexColumn struct {
	Name    string // empty for a functional key part (MySQL 8)
	SubPart int    // prefix length in characters; 0 = whole column
	Desc    bool   // a descending key part (STATISTICS.COLLATION 'D')
	Column  *Column
	seq     int
}

// IndexSize comes from mysql.innodb_index_stats (or an estimate when it is unreadable), and
// where the tablespace file can be read and the statistics only bound the size, from the
// file (FromFile).
type IndexSize struct {
	Pages     int64 `json:"pages"`      // allocated ("size"): whole extents, and LOB pages for the clustered index
	LeafPages int64 `json:"leaf_pages"` // B-tree leaf pages in use
	Known     bool  `json:"known"`      // false: estimated from information_schema.TABLES
	// LeafCountsLOB: the server's n_leaf_pages counts the leaf segment's pages, which for a
	// clustered index with off-page columns include their BLOB pages (MySQL, and MariaDB
	// once the tree has a level above its leaves): the leaf count is then only an upper
	// bound of the B-tree's leaves.
	LeafCountsLOB bool `json:"leaf_counts_lob,omitempty"`
	// FromFile: TreePages and FileLOBPages were counted in the tablespace file (ibd.Tree),
	// as it was on disk when the catalog was read.
	FromFile     bool  `json:"from_file,omitempty"`
	TreePages    int64 `json:"tree_pages,omitempty"`
	FileLOBPages int64 `json:"file_lob_pages,omitempty"`
}

// fragmentPages is how many single pages a segment gets before InnoDB reserves whole
// extents for it.
const fragmentPages = 32

// PageRange bounds how many pages the index's B-tree really has. Counted in the file, it is
// exact. Persistent statistics count leaves exactly for indexes of more than a few dozen
// pages; for smaller ones MariaDB 10.11 leaves n_leaf_pages at 1 (it sampled them all), and
// then "size" is exact while the segment still lives in fragment pages and an upper bound
// after that. A clustered index with off-page columns has its LOB pages in "size" too
// (lobs), and in n_leaf_pages where LeafCountsLOB. The levels above the leaves add a few
// per mille.
func (s IndexSize) PageRange(lobs bool, fanout int64) (lo, hi int64) {
	switch {
	case s.FromFile:
		return s.TreePages, s.TreePages
	case !s.Known:
		// Estimated from information_schema.TABLES: allocated pages, an upper bound.
		return 1, max(s.Pages, 1)
	case s.LeafPages > 1 && lobs && s.LeafCountsLOB:
		return 1, s.LeafPages + upperLevels(s.LeafPages, fanout)
	case s.LeafPages > 1:
		n := s.LeafPages + upperLevels(s.LeafPages, fanout)
		return n, n
	case s.Pages <= 1:
		return 1, 1
	case lobs:
		return 1, min(s.Pages, 2*fragmentPages)
	case s.Pages <= fragmentPages:
		return s.Pages, s.Pages
	default:
		return fragmentPages + 1, s.Pages
	}
}

// Column is one table column.
type Column struct {
	Name        string
	DataType    string
	ColumnType  string
	Collation   string
	OctetLength int64
	Nullable    bool
	Generated   bool // virtual or stored generated column
}

// EnumMembers is the number of an ENUM column's members, 0 for another type: its
// COLUMN_TYPE, enum('a','b',...), counted outside the quotes (a quote within a member is
// doubled).
func (c *Column) EnumMembers() int {
	lower := strings.ToLower(c.ColumnType)
	if !strings.HasPrefix(lower, "enum(") || !strings.HasSuffix(lower, ")") {
		return 0
	}
	list := c.ColumnType[len("enum(") : len(c.ColumnType)-1]
	n, quoted := 0, false
	for i := 0; i < len(list); i++ {
		switch {
		case list[i] != '\'':
		case !quoted:
			quoted = true
			n++
		case i+1 < len(list) && list[i+1] == '\'':
			i++ // a doubled quote within the member
		default:
			quoted = false
		}
	}
	return n
}

// GenClustIndex is InnoDB's name for the hidden clustered index of a table without a key.
const GenClustIndex = "GEN_CLUST_INDEX"

// FTSDocIDIndex is InnoDB's unique index on the document ids of a table with a FULLTEXT
// index: a table that has no FTS_DOC_ID column of its own gets a hidden one, and this index
// on it, which information_schema.STATISTICS does not list.
const FTSDocIDIndex = "FTS_DOC_ID_INDEX"

// Quoted is `schema`.`table`.
func (t *Table) Quoted() string { return sqltext.Table(t.Schema, t.Name) }

// FullName is schema.table for messages.
func (t *Table) FullName() string { return t.Schema + "." + t.Name }

// Clustered returns the clustered index.
func (t *Table) Clustered() *Index {
	for _, ix := range t.Indexes {
		if ix.Clustered {
			return ix
		}
	}
	return nil
}

// Partitioned reports whether the table has partitions.
func (t *Table) Partitioned() bool {
	return len(t.Parts) > 1 || (len(t.Parts) == 1 && t.Parts[0].Name != "")
}

// LOBColumns are the columns InnoDB may store on off-page (LOB) pages: BLOB/TEXT/JSON/
// geometry types, and variable-length columns longer than 255 bytes (DATA_BIG_COL).
func (t *Table) LOBColumns() []*Column {
	var out []*Column
	for _, c := range t.Columns {
		if c.Generated && strings.Contains(strings.ToLower(c.ColumnType), "virtual") {
			continue
		}
		switch strings.ToLower(c.DataType) {
		case "tinyblob", "blob", "mediumblob", "longblob", "tinytext", "text", "mediumtext", "longtext", "json",
			"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
			out = append(out, c)
		case "varchar", "varbinary":
			if c.OctetLength > 255 {
				out = append(out, c)
			}
		}
	}
	return out
}

// MayHoldLOBs says whether the clustered index's records can have columns stored on off-page
// BLOB/TEXT pages: only where a record can outgrow what InnoDB keeps in the page (half a
// page): a table with a BLOB/TEXT/JSON/geometry column, or whose columns' longest values
// add up to a quarter page or more (long CHAR and VARCHAR columns go off-page too when the
// record is too long). A table of short columns has no LOB page.
func (t *Table) MayHoldLOBs() bool {
	pageSize := t.pageSize
	if pageSize == 0 {
		pageSize = 16384
	}
	total := int64(0)
	for _, col := range t.Columns {
		if col.Generated && strings.Contains(strings.ToLower(col.ColumnType), "virtual") {
			continue
		}
		switch strings.ToLower(col.DataType) {
		case "tinyblob", "blob", "mediumblob", "longblob", "tinytext", "text", "mediumtext", "longtext", "json",
			"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
			return true
		}
		total += max(col.OctetLength, 32) // 32 bounds every numeric and temporal type
	}
	return total >= int64(pageSize)/4
}

// LOBPages estimates the off-page LOB pages of a part: counted in the file where it could
// be read (exact as of the last write), else from statistics. They are allocated to the
// clustered index but are not its leaf pages, so they are in what its allocation has
// beyond the B-tree; but so is the slack of reserved extents. Rows averaging more than a
// quarter page cannot all be stored inline, which tells the two apart. Zero without
// LOB-capable columns.
func (t *Table) LOBPages(p *Part) int64 {
	c := t.Clustered()
	if c == nil || !t.MayHoldLOBs() {
		return 0
	}
	sz := c.Sizes[p.Name]
	if sz.FromFile {
		return sz.FileLOBPages
	}
	if p.Rows <= 0 || p.DataLength/p.Rows < 4096 {
		return 0
	}
	lo, _ := sz.PageRange(true, t.fanout(c))
	return max(sz.Pages-lo, 0)
}

// SizeExact says whether ix's size in part p is one number rather than a range.
func (t *Table) SizeExact(ix *Index, p *Part) bool {
	lo, hi := t.IndexPages(ix, p)
	return lo == hi
}

// IndexPages bounds the B-tree pages of ix in part p (see IndexSize.PageRange).
func (t *Table) IndexPages(ix *Index, p *Part) (lo, hi int64) {
	return ix.Sizes[p.Name].PageRange(ix.Clustered && t.MayHoldLOBs(), t.fanout(ix))
}

// upperLevels counts the pages above the leaves of a B-tree with this fanout.
func upperLevels(leaves, fanout int64) int64 {
	fanout = max(fanout, 2)
	var n int64
	for level := leaves; level > 1; {
		level = (level + fanout - 1) / fanout
		n += level
	}
	return n
}

// fanout estimates how many child pointers a non-leaf page of ix holds: a node record is the
// key (for a secondary index, with the clustered key appended) plus about 11 bytes of
// header and child page number, in pages about 90% full.
func (t *Table) fanout(ix *Index) int64 {
	keyBytes := int64(0)
	seen := map[string]bool{}
	add := func(c IndexColumn) {
		if seen[c.Name] {
			return
		}
		seen[c.Name] = true
		keyBytes += keyPartBytes(c)
	}
	for _, c := range ix.Columns {
		add(c)
	}
	if !ix.Clustered {
		if cl := t.Clustered(); cl != nil && !cl.Hidden {
			for _, c := range cl.Columns {
				add(c)
			}
		} else {
			keyBytes += 6 // DB_ROW_ID
		}
	}
	if ix.Hidden {
		keyBytes = 6
	}
	return int64(16384*9/10) / (max(keyBytes, 1) + 11)
}

// keyPartBytes guesses the stored size of one key part; variable-length values count half
// their maximum, as a typical fill.
func keyPartBytes(c IndexColumn) int64 {
	if c.Column == nil {
		return 8
	}
	switch strings.ToLower(c.Column.DataType) {
	case "tinyint", "year":
		return 1
	case "smallint":
		return 2
	case "mediumint", "date", "time":
		return 3
	case "int", "integer", "float", "timestamp":
		return 4
	case "datetime":
		return 5
	case "bigint", "double", "real":
		return 8
	case "decimal", "numeric":
		return 8
	case "char", "varchar", "binary", "varbinary", "text", "tinytext", "mediumtext", "longtext", "blob", "tinyblob", "mediumblob", "longblob":
		n := c.Column.OctetLength
		if c.SubPart > 0 {
			n = min(n, int64(c.SubPart)*4)
		}
		if n > 16 {
			n = n / 2
		}
		return min(max(n, 1), 767) + 1
	}
	return 8
}

// Load reads the catalog for the filter.
//
// Every statement runs on one session of its own, so that an interrupt stops it on the
// server too.
func Load(ctx context.Context, conn *connection.Conn, f Filter) (*Catalog, error) {
	return LoadReading(ctx, conn, f, Reads{})
}

// LoadReading is Load, reading what r asks beside it.
func LoadReading(ctx context.Context, conn *connection.Conn, f Filter, r Reads) (*Catalog, error) {
	srv := conn.Server
	cat := &Catalog{Server: srv, memo: newLoadMemo()}
	if f.Empty() {
		return nil, exitcode.BadValue("Selection", "is empty: choose schemas, tables or all databases")
	}
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	// With lower_case_table_names = 1 the server keeps every schema and table name in lower
	// case and takes any case from its clients: so does the selection.
	var lowerCase int
	if err := sess.QueryRow(ctx, "SELECT @@lower_case_table_names", nil, &lowerCase); err != nil {
		return nil, fmt.Errorf("read lower_case_table_names: %w", err)
	}
	if lowerCase == 1 {
		f = f.lowerCased()
	}
	if q := srv.FreshTableStatsStatement(); q != "" && !r.NoSizes {
		if _, err := sess.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("read current table sizes: %w", err)
		}
	}
	schemas, err := selectSchemas(ctx, sess, f)
	if err != nil {
		return nil, err
	}
	if len(schemas) == 0 {
		return cat, nil
	}
	in, args := inList(schemas)
	// where selects the tables in the information_schema queries.
	where, whereArgs := "TABLE_SCHEMA IN ("+in+")", args
	exact, names := exactSet(f.Exact)
	if len(names) > 0 && len(names) <= maxExactNames {
		nin, nargs := inList(names)
		where, whereArgs = where+" AND TABLE_NAME IN ("+nin+")", append(append([]any(nil), args...), nargs...)
	}

	tables := map[string]*Table{}
	key := func(schema, table string) string { return schema + "\x00" + table }
	// The list reads no size nor CREATE_OPTIONS, each of which opens the table on MariaDB
	// (and on MySQL with fresh statistics): those are read beside the columns and indexes
	// (readTableSizes), or not at all (NoSizes).
	err = sess.Query(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, COALESCE(ENGINE, ''), COALESCE(TABLE_COMMENT, '')
		FROM information_schema.TABLES WHERE `+where+` ORDER BY TABLE_SCHEMA, TABLE_NAME`, whereArgs, func(rows *sql.Rows) error {
		var t Table
		var typ, comment string
		if err := rows.Scan(&t.Schema, &t.Name, &typ, &t.Engine, &comment); err != nil {
			return err
		}
		if (exact != nil && !exact[TableName{t.Schema, t.Name}]) || !f.selects(t.Schema, t.Name) || IsOwnerMark(t.Name, comment) {
			return nil
		}
		switch {
		case typ == "VIEW" || typ == "SYSTEM VIEW":
			cat.Skipped = append(cat.Skipped, Skip{Schema: t.Schema, Table: t.Name, Reason: "view: it has no pages of its own (select its base tables instead)", NotInPool: true})
			return nil
		case typ == "SEQUENCE":
			cat.Skipped = append(cat.Skipped, Skip{Schema: t.Schema, Table: t.Name, Reason: "sequence: a one-row table, read on first use", NotInPool: true})
			return nil
		case typ == "TEMPORARY" || typ == "LOCAL TEMPORARY":
			return nil
		case !strings.EqualFold(t.Engine, "InnoDB"):
			engine := t.Engine
			if engine == "" {
				engine = "unknown"
			}
			cat.Skipped = append(cat.Skipped, Skip{Schema: t.Schema, Table: t.Name, Reason: fmt.Sprintf("engine %s: not stored in the InnoDB buffer pool", engine), NotInPool: true})
			return nil
		}
		t.SystemVersioned = typ == "SYSTEM VERSIONED"
		t.pageSize = srv.PageSize
		tt := t
		tables[key(t.Schema, t.Name)] = &tt
		cat.Tables = append(cat.Tables, &tt)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	if len(cat.Tables) == 0 {
		return cat, nil
	}

	// The InnoDB views are read beside the information_schema queries, each on a session
	// of its own: on MySQL each read builds every table's definition whatever the WHERE
	// (about 5 s each at 20,000 tables), and a server has more than one CPU.
	viewCtx, stopViews := context.WithCancel(ctx)
	sysTables := startRead(viewCtx, conn, func(ctx context.Context, sess *connection.Session) (innodbTables, error) {
		return readInnoDBTables(ctx, sess, srv)
	})
	// The whole view of indexes, for the B-tree sizes in the files, on the database host.
	onHost := filesMayBeReadable(srv)
	var roots *pendingRead[map[uint32]map[string]IndexRoot]
	if onHost {
		roots = startRead(viewCtx, conn, func(ctx context.Context, sess *connection.Session) (map[uint32]map[string]IndexRoot, error) {
			return ReadIndexRoots(ctx, sess, srv, "")
		})
	}
	var columns *pendingRead[map[uint64][]StoredColumn]
	if r.StoredColumns && srv.InnoDBViewsBuildEveryTable() && onHost {
		columns = startRead(viewCtx, conn, func(ctx context.Context, sess *connection.Session) (map[uint64][]StoredColumn, error) {
			return ReadStoredColumns(ctx, sess, srv, "")
		})
	}
	var sizes *pendingRead[map[string]tableSize]
	if !r.NoSizes {
		sizes = startRead(viewCtx, conn, func(ctx context.Context, sess *connection.Session) (map[string]tableSize, error) {
			return readTableSizes(ctx, sess, srv, where, whereArgs, key)
		})
	}
	defer func() {
		// Killed if still running (an error, or the files not readable after all); their
		// sessions are closed before Load returns.
		stopViews()
		_, _ = sysTables.wait()
		if roots != nil {
			_, _ = roots.wait()
		}
		if columns != nil {
			_, _ = columns.wait()
		}
		if sizes != nil {
			_, _ = sizes.wait()
		}
	}()

	if err := loadColumns(ctx, sess, where, whereArgs, tables, key); err != nil {
		return nil, err
	}
	if err := loadIndexes(ctx, sess, srv, where, whereArgs, tables, key, cat); err != nil {
		return nil, err
	}
	// The partitioned tables: CREATE_OPTIONS, read with the sizes, or without them the
	// tables InnoDB stores in parts.
	if sizes != nil {
		sz, err := sizes.wait()
		if err != nil {
			return nil, fmt.Errorf("read table sizes: %w", err)
		}
		for k, t := range tables {
			s := sz[k]
			t.Rows, t.DataLength, t.IndexLength, t.partitioned = s.rows, s.data, s.index, s.partitioned
		}
	} else {
		innodb, err := sysTables.wait()
		if err != nil {
			return nil, err
		}
		markPartitioned(srv, cat, innodb.sys)
	}
	if err := loadPartitions(ctx, sess, srv, where, whereArgs, tables, key); err != nil {
		return nil, err
	}
	if sizes != nil {
		if err := loadSizes(ctx, sess, srv, in, args, cat); err != nil {
			return nil, err
		}
	}
	innodb, err := sysTables.wait()
	if err != nil {
		return nil, err
	}
	// The files' sizes once the queries above have opened every table: MariaDB knows a
	// tablespace's size only once it opened it since its start, and STATISTICS (its
	// COLLATION and INDEX_TYPE) and TABLES' sizes open them.
	if innodb.sizes, err = readFileSizes(ctx, sess, srv); err != nil {
		return nil, err
	}
	matchSpaces(srv, cat, innodb)
	sizesFromFiles(ctx, conn, sess, cat, roots, !r.NoSizes)
	if columns != nil {
		// A failed read is the key dictionary's to repeat, and to report.
		if stored, err := columns.wait(); err == nil {
			cat.memo.mu.Lock()
			cat.memo.columns = stored
			cat.memo.mu.Unlock()
		}
	}
	if len(cat.Estimated()) > 0 {
		cat.Notes = append(cat.Notes, cat.estimateNotes...)
	}
	return cat, nil
}

// tableSize is a table's figures and partitioning as information_schema.TABLES gives them.
type tableSize struct {
	rows, data, index int64
	partitioned       bool // CREATE_OPTIONS says so
}

// readTableSizes reads the figures of the tables where selects, by key. On MariaDB (and on
// MySQL with fresh statistics) it opens every table, as the load's STATISTICS query does:
// the two run side by side (at 20,000 tables on MariaDB 10.11, 9.6 s instead of 12.2 s).
func readTableSizes(ctx context.Context, sess *connection.Session, srv flavor.Server, where string, args []any, key func(string, string) string) (map[string]tableSize, error) {
	if q := srv.FreshTableStatsStatement(); q != "" {
		if _, err := sess.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("read current table sizes: %w", err)
		}
	}
	out := map[string]tableSize{}
	err := sess.Query(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(TABLE_ROWS, 0), COALESCE(DATA_LENGTH, 0), COALESCE(INDEX_LENGTH, 0),
		COALESCE(CREATE_OPTIONS, '')
		FROM information_schema.TABLES WHERE `+where, args, func(rows *sql.Rows) error {
		var schema, name, options string
		var s tableSize
		if err := rows.Scan(&schema, &name, &s.rows, &s.data, &s.index, &options); err != nil {
			return err
		}
		s.partitioned = strings.Contains(strings.ToLower(options), "partitioned")
		out[key(schema, name)] = s
		return nil
	})
	return out, err
}

// markPartitioned marks the tables whose InnoDB tables are parts (a name with the
// partition separator: "db/t#P#p0" on MariaDB, "db/t#p#p0" on MySQL 8.0+). A '#' of a
// table's own name is written "@0023" there, so the separator names no other table.
func markPartitioned(srv flavor.Server, cat *Catalog, sys []sysTable) {
	sep := srv.PartitionSeparator()
	parted := map[string]bool{}
	for _, s := range sys {
		if i := indexFoldASCII(s.name, sep); i > 0 {
			parted[s.name[:i]] = true
		}
	}
	if len(parted) == 0 {
		return
	}
	for _, t := range cat.Tables {
		pat := filenamePattern(t.Schema) + "/" + filenamePattern(t.Name)
		if literalPattern(pat) {
			t.partitioned = parted[pat]
			continue
		}
		re, err := regexp.Compile("^" + pat + "$")
		if err != nil {
			continue
		}
		for name := range parted {
			if re.MatchString(name) {
				t.partitioned = true
				break
			}
		}
	}
}

// literalPattern says whether a pattern filenamePattern built is the name itself, to be
// looked up rather than matched: it escaped nothing and grouped no alternatives.
func literalPattern(pat string) bool { return !strings.ContainsAny(pat, `\(`) }

// indexFoldASCII is strings.Index with sep's ASCII letters in either case.
func indexFoldASCII(s, sep string) int {
	for i := 0; i+len(sep) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sep)], sep) {
			return i
		}
	}
	return -1
}

// exactSet is names as a set (nil for none) and their distinct table names, sorted.
func exactSet(names []TableName) (map[TableName]bool, []string) {
	if len(names) == 0 {
		return nil, nil
	}
	set := make(map[TableName]bool, len(names))
	seen := map[string]bool{}
	var tables []string
	for _, n := range names {
		set[n] = true
		if !seen[n.Table] {
			seen[n.Table] = true
			tables = append(tables, n.Table)
		}
	}
	sort.Strings(tables)
	return set, tables
}

func (f Filter) selects(schema, table string) bool {
	for _, p := range f.Exclude {
		if p.Matches(schema, table) {
			return false
		}
	}
	if len(f.Tables) == 0 {
		return true
	}
	for _, p := range f.Tables {
		if p.Matches(schema, table) {
			return true
		}
	}
	return false
}

// selectSchemas resolves -D, --all-databases and the schema parts of --tables against the
// server's schemas; a schema named literally that does not exist is a usage error.
func selectSchemas(ctx context.Context, sess *connection.Session, f Filter) ([]string, error) {
	exists := map[string]bool{}
	var all []string
	err := sess.Query(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA", nil, func(rows *sql.Rows) error {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		exists[s] = true
		all = append(all, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	chosen := map[string]bool{}
	for _, s := range f.Schemas {
		if !exists[s] {
			hint := ""
			if t := strings.TrimSpace(s); t != s && exists[t] {
				// -D takes names as given, as the mysql client does: a schema may begin
				// with a space, so "a, b" names " b".
				hint = fmt.Sprintf(" (-D takes names as given, spaces too: did you mean %q?)", t)
			}
			return nil, exitcode.UsageError(fmt.Errorf("unknown database %q (from -D): it does not exist or you may not see it%s", s, hint))
		}
		chosen[s] = true
	}
	within := f.Within && len(f.Schemas) > 0 && !f.All
	if within {
		// The -D schemas are the ones read; selects keeps their tables that the patterns
		// match. A pattern that can match in none of them is a mistake, not an empty part.
		for _, p := range f.Tables {
			if p.Schema == "" || slices.ContainsFunc(f.Schemas, func(s string) bool { ok, _ := path.Match(p.Schema, s); return ok }) {
				continue
			}
			return nil, exitcode.BadValue("Tables", "%s: its schema is not one of -D (%s): with -D, --tables chooses among the tables of those schemas, as mysqldump's db tables...; leave out -D, or add the schema to it", p.Raw, strings.Join(f.Schemas, ","))
		}
		return sortedKeys(chosen), nil
	}
	if f.All {
		for _, s := range all {
			if !SystemSchemas[s] {
				chosen[s] = true
			}
		}
	}
	for _, p := range f.Tables {
		if s, ok := p.literalSchema(); ok {
			if !exists[s] {
				return nil, exitcode.BadValue("Tables", "%s: unknown database %q", p.Raw, s)
			}
			chosen[s] = true
			continue
		}
		if p.Schema == "" {
			if len(f.Schemas) == 0 && !f.All {
				return nil, exitcode.BadValue("Tables", "%s names no schema: write schema.%s, or choose the schema", p.Raw, p.Table)
			}
			continue
		}
		for _, s := range all {
			if ok, _ := path.Match(p.Schema, s); ok && !SystemSchemas[s] {
				chosen[s] = true
			}
		}
	}
	return sortedKeys(chosen), nil
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func inList(vals []string) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return strings.TrimSuffix(strings.Repeat("?,", len(vals)), ","), args
}

func loadColumns(ctx context.Context, sess *connection.Session, where string, args []any, tables map[string]*Table, key func(string, string) string) error {
	err := sess.Query(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE,
		COALESCE(COLLATION_NAME, ''), COALESCE(CHARACTER_OCTET_LENGTH, 0), IS_NULLABLE, COALESCE(EXTRA, '')
		FROM information_schema.COLUMNS WHERE `+where+` ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`, args, func(rows *sql.Rows) error {
		var schema, table, nullable, extra string
		var c Column
		if err := rows.Scan(&schema, &table, &c.Name, &c.DataType, &c.ColumnType, &c.Collation, &c.OctetLength, &nullable, &extra); err != nil {
			return err
		}
		t := tables[key(schema, table)]
		if t == nil {
			return nil
		}
		c.Nullable = nullable == "YES"
		lower := strings.ToLower(extra)
		c.Generated = strings.Contains(lower, "generated") || strings.Contains(lower, "virtual") || strings.Contains(lower, "persistent")
		if c.Generated && strings.Contains(lower, "virtual") {
			c.ColumnType += " virtual"
		}
		cc := c
		t.Columns = append(t.Columns, &cc)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list columns: %w", err)
	}
	return nil
}

func loadIndexes(ctx context.Context, sess *connection.Session, srv flavor.Server, where string, args []any, tables map[string]*Table, key func(string, string) string, cat *Catalog) error {
	// No ORDER BY: the natural order lists each table's keys in definition order, which decides
	// InnoDB's clustered index when there is no primary key; key parts are sorted below.
	type ixKey struct {
		t    *Table
		name string
	}
	byKey := map[ixKey]*Index{}
	err := sess.Query(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX,
		COALESCE(COLUMN_NAME, ''), COALESCE(SUB_PART, 0), COALESCE(COLLATION, 'A') = 'D', INDEX_TYPE, `+srv.IndexUsableExpr()+`
		FROM information_schema.STATISTICS WHERE `+where, args, func(rows *sql.Rows) error {
		var schema, table, name, col, typ string
		var nonUnique, seq, sub int
		var usable, desc bool
		if err := rows.Scan(&schema, &table, &name, &nonUnique, &seq, &col, &sub, &desc, &typ, &usable); err != nil {
			return err
		}
		t := tables[key(schema, table)]
		if t == nil {
			return nil
		}
		ix := byKey[ixKey{t, name}]
		if ix == nil {
			ix = &Index{Name: name, Unique: nonUnique == 0, Primary: name == "PRIMARY", Type: strings.ToUpper(typ), Usable: usable, Sizes: map[string]IndexSize{}}
			byKey[ixKey{t, name}] = ix
			t.Indexes = append(t.Indexes, ix)
		}
		ic := IndexColumn{Name: col, SubPart: sub, Desc: desc}
		for _, c := range t.Columns {
			if c.Name == col {
				ic.Column = c
			}
		}
		ic.seq = seq
		ix.Columns = append(ix.Columns, ic)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	for _, ix := range byKey {
		sort.SliceStable(ix.Columns, func(i, j int) bool { return ix.Columns[i].seq < ix.Columns[j].seq })
	}
	for _, t := range cat.Tables {
		markClustered(t)
		addFTSDocIDIndex(t)
	}
	return nil
}

// addFTSDocIDIndex lists the hidden FTS_DOC_ID_INDEX of a table with a FULLTEXT index
// whose document ids are InnoDB's (no index of that name in STATISTICS: a user-defined
// FTS_DOC_ID column comes with its own, listed, FTS_DOC_ID_INDEX). Its size is in
// mysql.innodb_index_stats like any index's; its pages were named by the page lists and
// loaded by the server's loader, but had no size, no result row and no share of coverage.
func addFTSDocIDIndex(t *Table) {
	fulltext := false
	for _, ix := range t.Indexes {
		if strings.EqualFold(ix.Name, FTSDocIDIndex) {
			return
		}
		fulltext = fulltext || ix.Type == "FULLTEXT"
	}
	if !fulltext {
		return
	}
	docID := &Column{Name: "FTS_DOC_ID", DataType: "bigint", ColumnType: "bigint unsigned"}
	t.Indexes = append(t.Indexes, &Index{Name: FTSDocIDIndex, Unique: true, Internal: true, Type: "BTREE",
		Columns: []IndexColumn{{Name: docID.Name, Column: docID, seq: 1}}, Sizes: map[string]IndexSize{}})
}

// markClustered applies InnoDB's rule: the PRIMARY KEY, else the first UNIQUE index whose
// key parts are all NOT NULL whole columns, else a hidden GEN_CLUST_INDEX on a row id.
func markClustered(t *Table) {
	sort.SliceStable(t.Indexes, func(i, j int) bool { return t.Indexes[i].Primary && !t.Indexes[j].Primary })
	for _, ix := range t.Indexes {
		if ix.Primary {
			ix.Clustered = true
			return
		}
	}
	// InnoDB picks the first such key in the order the table definition lists them, which
	// information_schema does not expose; the .frm order is the creation order, and
	// STATISTICS lists unique keys first in that order on both servers.
	for _, ix := range t.Indexes {
		if !ix.Unique || ix.Type != "BTREE" {
			continue
		}
		ok := true
		for _, c := range ix.Columns {
			if c.Column == nil || c.Column.Nullable || c.SubPart != 0 || c.Column.Generated {
				ok = false
			}
		}
		if ok {
			ix.Clustered = true
			return
		}
	}
	t.Indexes = append([]*Index{{Name: GenClustIndex, Clustered: true, Hidden: true, Type: "BTREE", Usable: true, Sizes: map[string]IndexSize{}}}, t.Indexes...)
}

func loadPartitions(ctx context.Context, sess *connection.Session, srv flavor.Server, where string, args []any, tables map[string]*Table, key func(string, string) string) error {
	// Only the partitioned tables (TABLES.CREATE_OPTIONS says which) are asked for by name:
	// MariaDB opens every table PARTITIONS lists (3.9 s at 20,000 tables), and a table of
	// one part has TABLES' own figures.
	seen := map[string]bool{}
	var names []string
	for _, t := range tables {
		if t.partitioned && !seen[t.Name] {
			seen[t.Name] = true
			names = append(names, t.Name)
		}
	}
	switch {
	case len(names) == 0:
		where = ""
	case len(names) <= maxExactNames:
		sort.Strings(names)
		nin, nargs := inList(names)
		where, args = where+" AND TABLE_NAME IN ("+nin+")", append(append([]any(nil), args...), nargs...)
	}
	var err error
	if where != "" {
		err = partitionRows(ctx, sess, srv, where, args, tables, key)
	}
	if err != nil {
		return fmt.Errorf("list partitions: %w", err)
	}
	for _, t := range tables {
		if len(t.Parts) == 0 {
			t.Parts = []*Part{{StatsName: t.Name, Rows: t.Rows, DataLength: t.DataLength, IndexLength: t.IndexLength}}
		}
	}
	return nil
}

// partitionRows gives each table its parts as information_schema.PARTITIONS lists them.
func partitionRows(ctx context.Context, sess *connection.Session, srv flavor.Server, where string, args []any, tables map[string]*Table, key func(string, string) string) error {
	return sess.Query(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(PARTITION_NAME, ''), COALESCE(SUBPARTITION_NAME, ''),
		COALESCE(TABLE_ROWS, 0), COALESCE(DATA_LENGTH, 0), COALESCE(INDEX_LENGTH, 0), COALESCE(PARTITION_METHOD, '')
		FROM information_schema.PARTITIONS WHERE `+where+`
		ORDER BY TABLE_SCHEMA, TABLE_NAME, PARTITION_ORDINAL_POSITION, SUBPARTITION_ORDINAL_POSITION`, args, func(rows *sql.Rows) error {
		var schema, table, method string
		var p Part
		if err := rows.Scan(&schema, &table, &p.Partition, &p.Subpartition, &p.Rows, &p.DataLength, &p.IndexLength, &method); err != nil {
			return err
		}
		t := tables[key(schema, table)]
		if t == nil {
			return nil
		}
		if strings.EqualFold(method, "SYSTEM_TIME") {
			t.PartitionedBySystemTime = true
		}
		switch {
		case p.Partition == "":
		case p.Subpartition == "":
			p.Name = p.Partition
		default:
			p.Name = p.Subpartition
		}
		p.StatsName = partStatsName(srv, table, p.Partition, p.Subpartition)
		pp := p
		t.Parts = append(t.Parts, &pp)
		return nil
	})
}

// loadSizes reads mysql.innodb_index_stats; without access to it (a least-privilege user),
// sizes are estimated from information_schema.TABLES/PARTITIONS and marked as such.
func loadSizes(ctx context.Context, sess *connection.Session, srv flavor.Server, in string, args []any, cat *Catalog) error {
	type statKey struct{ schema, table, index string }
	stats := map[statKey]*IndexSize{}
	folded := statsByFold{}
	err := sess.Query(ctx, `SELECT database_name, table_name, index_name, stat_name, stat_value
		FROM mysql.innodb_index_stats WHERE database_name IN (`+in+`) AND stat_name IN ('size', 'n_leaf_pages')`, args, func(rows *sql.Rows) error {
		var k statKey
		var stat string
		var v int64
		if err := rows.Scan(&k.schema, &k.table, &k.index, &stat, &v); err != nil {
			return err
		}
		s := stats[k]
		if s == nil {
			folded.add(k.schema, k.table)
			s = &IndexSize{Known: true}
			stats[k] = s
		}
		if stat == "size" {
			s.Pages = v
		} else {
			s.LeafPages = v
		}
		return nil
	})
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && sqlerr.Is(err, sqlerr.TableAccessDenied, sqlerr.DBAccessDenied, sqlerr.NoSuchTable) {
			cat.StatisticsDenied = me.Message
			cat.estimateNotes = append(cat.estimateNotes, "cannot read mysql.innodb_index_stats ("+me.Message+"): index sizes are estimated from information_schema.TABLES")
		} else {
			return fmt.Errorf("read index sizes from mysql.innodb_index_stats: %w", err)
		}
	}
	page := int64(srv.PageSize)
	estimated := false
	for _, t := range cat.Tables {
		var secondaries int64
		for _, ix := range t.Indexes {
			if !ix.Clustered && ix.Type == "BTREE" {
				secondaries++
			}
		}
		for _, p := range t.Parts {
			for _, ix := range t.Indexes {
				s, ok := stats[statKey{t.Schema, p.StatsName, ix.Name}]
				if !ok && p.Partition != "" && partNamesLowered(srv) {
					if name, found := folded.find(srv, t.Schema, t.Name, p.StatsName); found {
						s, ok = stats[statKey{t.Schema, name, ix.Name}]
					}
				}
				if ok {
					sz := *s
					sz.LeafCountsLOB = ix.Clustered
					ix.Sizes[p.Name] = sz
					continue
				}
				if ix.Type == "FULLTEXT" || ix.Type == "SPATIAL" && secondaries == 0 {
					continue
				}
				var bytes int64
				if ix.Clustered {
					bytes = p.DataLength
				} else if secondaries > 0 {
					bytes = p.IndexLength / secondaries
				}
				pages := (bytes + page - 1) / page
				ix.Sizes[p.Name] = IndexSize{Pages: pages}
				estimated = true
			}
		}
	}
	if estimated && len(stats) > 0 {
		cat.estimateNotes = append(cat.estimateNotes, "some indexes have no persistent statistics (STATS_PERSISTENT=0 or never analyzed): their sizes are estimated")
	}
	return nil
}

// sysTable is a table as InnoDB's dictionary view lists it.
type sysTable struct {
	name  string
	space uint32
	id    uint64
}

// ftsKey names a table's FULLTEXT auxiliary tables: its schema (as InnoDB writes it) and
// its table id.
type ftsKey struct {
	schema string
	id     uint64
}

// innodbTables is what InnoDB's views say of every table: its name, tablespace and id,
// its record format, its file's size, and the FULLTEXT auxiliary tables by parent.
type innodbTables struct {
	sys     []sysTable
	exact   map[string]sysTable
	formats map[uint64]TableFormat
	sizes   map[uint32]int64
	fts     map[ftsKey][]AuxSpace
}

// readInnoDBTables reads InnoDB's views of tables and tablespaces.
func readInnoDBTables(ctx context.Context, sess *connection.Session, srv flavor.Server) (innodbTables, error) {
	v := innodbTables{exact: map[string]sysTable{}, formats: map[uint64]TableFormat{}}
	// The record formats come with the names: the key dictionary needs them, and on MySQL
	// every read of the view builds every table's definition (KnownFormats).
	err := sess.Query(ctx, "SELECT NAME, SPACE, TABLE_ID, ROW_FORMAT, "+srv.InstantColumnsExpr()+" FROM "+srv.TablesTable(), nil, func(rows *sql.Rows) error {
		var s sysTable
		var format sql.NullString
		var f TableFormat
		if err := rows.Scan(&s.name, &s.space, &s.id, &format, &f.InstantCols, &f.RowVersions); err != nil {
			return err
		}
		f.RowFormat = strings.ToLower(format.String)
		v.sys = append(v.sys, s)
		v.exact[s.name] = s
		v.formats[s.id] = f
		return nil
	})
	if err != nil {
		return v, explainPrivilege(err, srv.TablesTable())
	}
	sys := v.sys
	// FULLTEXT auxiliary tables are named after their parent's table id, in hex.
	fts := map[ftsKey][]AuxSpace{}
	for _, s := range sys {
		if m := ftsName.FindStringSubmatch(s.name); m != nil {
			id, err := strconv.ParseUint(m[2], 16, 64)
			if err == nil {
				k := ftsKey{m[1], id}
				// MySQL names them in lower case (fts_..._config), MariaDB in upper case:
				// the role's own words are written in upper case either way, so that a
				// manifest of one flavor finds the other's tables.
				fts[k] = append(fts[k], AuxSpace{Name: s.name, Space: s.space, Role: strings.ToUpper(m[3])})
			}
		}
	}
	// The index tables carry the FULLTEXT index's id; name them after the index instead.
	indexNames := map[uint64]string{}
	if len(fts) > 0 {
		err := sess.Query(ctx, "SELECT INDEX_ID, NAME FROM "+srv.IndexesTable(), nil, func(rows *sql.Rows) error {
			var id uint64
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				return err
			}
			indexNames[id] = name
			return nil
		})
		if err != nil {
			return v, explainPrivilege(err, srv.IndexesTable())
		}
	}
	for k, aux := range fts {
		for i := range aux {
			role := aux[i].Role
			if m := ftsIndexRole.FindStringSubmatch(role); m != nil {
				id, _ := strconv.ParseUint(m[1], 16, 64)
				role = indexNames[id] + ":" + strings.ToUpper(m[2])
			}
			aux[i].Role = "fts:" + role
		}
		fts[k] = aux
	}
	v.fts = fts
	return v, nil
}

// matchSpaces maps every part to its InnoDB tablespace id. The dictionary writes names in
// the server's filename character set ("my@0020db/t#P#p0"), matched here by pattern.
func matchSpaces(srv flavor.Server, cat *Catalog, v innodbTables) {
	if cat.memo != nil {
		cat.memo.mu.Lock()
		cat.memo.formats = v.formats
		cat.memo.mu.Unlock()
	}
	exact, sys, sizes, fts := v.exact, v.sys, v.sizes, v.fts
	tablesIn := map[uint32]int{}
	for _, s := range sys {
		if s.space != 0 {
			tablesIn[s.space]++
		}
	}
	for _, t := range cat.Tables {
		schemaPattern := filenamePattern(t.Schema)
		for _, p := range t.Parts {
			internal := internalName(srv, t.Name, p)
			pat := schemaPattern + "/" + internal
			if st, ok := exact[pat]; ok && literalPattern(pat) {
				p.Space, p.TableID, p.SpaceKnown = st.space, st.id, true
			} else if re, err := regexp.Compile("^" + pat + "$"); err == nil {
				matches := 0
				for _, s := range sys {
					if re.MatchString(s.name) {
						p.Space, p.TableID = s.space, s.id
						matches++
					}
				}
				p.SpaceKnown = matches == 1
			}
			if p.SpaceKnown {
				p.FileSize = sizes[p.Space]
				p.SharedSpace = tablesIn[p.Space] > 1
			}
		}
		for _, ix := range t.Indexes {
			if ix.Type != "FULLTEXT" || len(t.Parts) != 1 || !t.Parts[0].SpaceKnown {
				continue
			}
			re, err := regexp.Compile("^" + schemaPattern + "$")
			if err != nil {
				break
			}
			for k, aux := range fts {
				if k.id == t.Parts[0].TableID && re.MatchString(k.schema) {
					t.Aux = aux
					for i := range t.Aux {
						t.Aux[i].FileSize = sizes[t.Aux[i].Space]
					}
				}
			}
			break
		}
	}
}

// readFileSizes is each tablespace's file size, by space id.
func readFileSizes(ctx context.Context, sess *connection.Session, srv flavor.Server) (map[uint32]int64, error) {
	sizes := map[uint32]int64{}
	err := sess.Query(ctx, "SELECT SPACE, COALESCE(FILE_SIZE, 0) FROM "+srv.TablespacesTable(), nil, func(rows *sql.Rows) error {
		var space uint32
		var size int64
		if err := rows.Scan(&space, &size); err != nil {
			return err
		}
		sizes[space] = size
		return nil
	})
	if err != nil {
		return nil, explainPrivilege(err, srv.TablespacesTable())
	}
	return sizes, nil
}

// ftsName matches a FULLTEXT auxiliary table: schema, the parent's table id in hex, and the
// rest: CONFIG, DELETED, ... or <index id in hex>_INDEX_<n>.
var ftsName = regexp.MustCompile(`^(.*)/(?i:fts)_([0-9a-fA-F]{16})_(.+)$`)

var ftsIndexRole = regexp.MustCompile(`^([0-9a-fA-F]{16})_(?i:(index_\d+))$`)

// internalName is the regexp for the table part of InnoDB's name for p of table.
func internalName(srv flavor.Server, table string, p *Part) string {
	name := filenamePattern(table)
	if p.Partition != "" {
		// MySQL 8.0+ writes the partition's names in lower case, the table's as it is.
		name += regexp.QuoteMeta(srv.PartitionSeparator()) + partFilenamePattern(srv, p.Partition)
		if p.Subpartition != "" {
			name += regexp.QuoteMeta(srv.SubpartitionSeparator()) + partFilenamePattern(srv, p.Subpartition)
		}
	}
	return name
}

// ErrNoProcess is returned when the user lacks PROCESS, which the InnoDB information_schema
// tables require.
var ErrNoProcess = errors.New("missing the PROCESS privilege")

// explainPrivilege turns "access denied; you need PROCESS" into a one-line usage error that
// names the grant.
func explainPrivilege(err error, table string) error {
	if sqlerr.Is(err, sqlerr.SpecificAccessDenied, sqlerr.TableAccessDenied) {
		return exitcode.UsageError(fmt.Errorf("%w: reading %s needs it; ask for GRANT PROCESS ON *.* TO your user (innowarm also needs SELECT on the tables it warms)", ErrNoProcess, table))
	}
	return fmt.Errorf("read %s: %w", table, err)
}

// ExplainPrivilege is explainPrivilege for other packages reading InnoDB tables.
func ExplainPrivilege(err error, table string) error { return explainPrivilege(err, table) }

// auxIndex is the index name of a FULLTEXT role ("fts:<index>:INDEX_3"), "" for the
// common tables' roles: index names compare as the server's, exactly.
func auxIndex(role string) string {
	rest, _ := strings.CutPrefix(role, "fts:")
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		return rest[:i]
	}
	return ""
}

// auxWords is a FULLTEXT role's own words ("INDEX_3", "CONFIG").
func auxWords(role string) string {
	rest, _ := strings.CutPrefix(role, "fts:")
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		return rest[i+1:]
	}
	return rest
}
