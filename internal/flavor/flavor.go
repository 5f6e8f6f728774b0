// Package flavor is the one place that knows how MariaDB and MySQL differ: table names in
// information_schema, how a statement gets a time limit, how the buffer-pool dump/load
// variables behave, how a throwaway server is bootstrapped. Everything else asks a Server.
package flavor

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind is the server family.
type Kind string

const (
	MariaDB Kind = "MariaDB"
	MySQL   Kind = "MySQL"
)

// Version is a server version number.
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare orders versions by number: -1 if v is older than o, 0 if the same, +1 if newer.
// MySQL's calendar versions (YY.M.P from 26.7.0, after 9.7) are numbers like the others and
// come after every sequential one.
func (v Version) Compare(o Version) int {
	for _, d := range [][2]int{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		switch {
		case d[0] < d[1]:
			return -1
		case d[0] > d[1]:
			return 1
		}
	}
	return 0
}

// AtLeast reports whether v >= major.minor.patch.
func (v Version) AtLeast(major, minor, patch int) bool {
	return v.Compare(Version{major, minor, patch}) >= 0
}

// versionRe reads the number a version starts with: MAJOR.MINOR.PATCH, the patch optional
// (a server binary's or a calendar release's name may leave it out: "26.10").
var versionRe = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// ParseVersion reads VERSION() and @@version_comment (or a server binary's --version line)
// and says which family it is. MariaDB may prefix "5.5.5-" for old clients.
func ParseVersion(version, comment string) (Kind, Version, error) {
	v := strings.TrimSpace(version)
	v = strings.TrimPrefix(v, "5.5.5-")
	m := versionRe.FindStringSubmatch(v)
	if m == nil {
		return "", Version{}, fmt.Errorf("cannot read server version %q", version)
	}
	var ver Version
	ver.Major, _ = strconv.Atoi(m[1])
	ver.Minor, _ = strconv.Atoi(m[2])
	ver.Patch, _ = strconv.Atoi(m[3])
	kind := MySQL
	if strings.Contains(strings.ToLower(version+" "+comment), "mariadb") {
		kind = MariaDB
	}
	return kind, ver, nil
}

// firstCalendarMajor is the major number of MySQL's first calendar version (26.7.0, July
// 2026: YY.M, the release's year and month); the sequential numbers ended with 9.7.
const firstCalendarMajor = 26

// CalendarVersion reports whether the server is numbered by the calendar (MySQL 26.7 and
// after): its minor number is a month, and a new line every quarter or so.
func (s Server) CalendarVersion() bool {
	return s.Kind == MySQL && s.Version.Major >= firstCalendarMajor
}

// ReleaseLine is MAJOR.MINOR ("9.7", "26.10", "11.8").
func (s Server) ReleaseLine() string { return fmt.Sprintf("%d.%d", s.Version.Major, s.Version.Minor) }

// ltsSeries are the long-term support lines known by number: MySQL's LTS releases (8.4, 9.7;
// Oracle names each calendar LTS in its release notes) and MariaDB's long-term releases.
var ltsSeries = map[Kind]map[string]bool{
	MySQL:   {"8.4": true, "9.7": true},
	MariaDB: {"10.6": true, "10.11": true, "11.4": true, "11.8": true},
}

// LTS reports whether the server is of a long-term support line: a known one, or one whose
// version or comment says LTS (as a build of a calendar LTS release may: "28.4.0-LTS").
func (s Server) LTS() bool {
	if ltsSeries[s.Kind][s.ReleaseLine()] {
		return true
	}
	for _, f := range strings.FieldsFunc(s.VersionString+" "+s.VersionComment, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z')
	}) {
		if f == "LTS" {
			return true
		}
	}
	return false
}

// Release names the server's line for people: "MySQL 9.7 LTS", "MySQL 26.10 (innovation,
// calendar version)", "MariaDB 11.8 LTS".
func (s Server) Release() string {
	out := fmt.Sprintf("%s %s", s.Kind, s.ReleaseLine())
	switch {
	case s.LTS():
		out += " LTS"
	case s.Kind == MySQL && s.Version.AtLeast(8, 1, 0):
		out += " (innovation"
		if s.CalendarVersion() {
			out += ", calendar version"
		}
		out += ")"
	}
	return out
}

// Probe is what Detect reads from a server: raw answers, kept apart from their interpretation
// so that recorded fixtures of servers we cannot run here (MySQL 8) exercise the same code.
type Probe struct {
	Version        string            `json:"version"`
	VersionComment string            `json:"version_comment"`
	Variables      map[string]string `json:"variables"`
	InfoSchema     []string          `json:"information_schema_tables"`
}

// Server describes a connected server and what it offers.
type Server struct {
	Kind           Kind
	Version        Version
	VersionString  string
	VersionComment string

	Hostname string
	Port     int
	ServerID string
	// UUID is @@server_uuid on MySQL; MariaDB has none, so it is left empty and Identity()
	// falls back to host:port.
	UUID     string
	Datadir  string
	PageSize int
	PoolSize int64
	ReadOnly bool

	// DumpFilename is @@innodb_buffer_pool_filename; DumpPct is @@innodb_buffer_pool_dump_pct.
	DumpFilename string
	DumpPct      int

	// PoolSizeMax and PoolAutoMin are MariaDB's innodb_buffer_pool_size_max and
	// innodb_buffer_pool_size_auto_min (10.11.12+, 11.4.6+, 11.8.2+; 0 where the server has
	// none): see ElasticPool and PoolShrinkFloor. PoolSize is the size at connect time; a
	// pool that can be resized is read again where it matters (bufferpool.ReadTotals).
	PoolSizeMax int64
	PoolAutoMin int64

	// UndoTablespaces is MariaDB's innodb_undo_tablespaces: its undo tablespaces take the
	// space ids from 1 (see ServerSpace). MySQL's are in its reserved range.
	UndoTablespaces int

	infoSchema map[string]bool
}

// probedVariables are the @@variables Detect reads in one round trip. Each must exist on both
// families; family-only ones are read separately.
var probedVariables = []string{
	"hostname", "port", "server_id", "datadir", "innodb_page_size", "innodb_buffer_pool_size",
	"read_only", "innodb_buffer_pool_filename", "innodb_buffer_pool_dump_pct",
}

// Querier is the part of *sql.DB / *sql.Conn that Detect needs.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Detect reads the server's identity and capabilities.
func Detect(ctx context.Context, q Querier) (Server, error) {
	p := Probe{Variables: map[string]string{}}
	cols := make([]string, 0, len(probedVariables)+2)
	cols = append(cols, "VERSION()", "@@version_comment")
	for _, v := range probedVariables {
		cols = append(cols, "@@"+v)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := q.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", ")).Scan(ptrs...); err != nil {
		return Server{}, fmt.Errorf("read server variables: %w", err)
	}
	p.Version, p.VersionComment = vals[0].String, vals[1].String
	for i, name := range probedVariables {
		p.Variables[name] = vals[i+2].String
	}
	kind, _, err := ParseVersion(p.Version, p.VersionComment)
	if err != nil {
		return Server{}, err
	}
	if kind == MySQL {
		var uuid sql.NullString
		if err := q.QueryRowContext(ctx, "SELECT @@server_uuid").Scan(&uuid); err == nil {
			p.Variables["server_uuid"] = uuid.String
		}
	}
	if kind == MariaDB {
		if err := readVariables(ctx, q, p.Variables, mariaDBVariables); err != nil {
			return Server{}, err
		}
	}
	rows, err := q.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'information_schema' AND TABLE_NAME LIKE 'INNODB%'")
	if err != nil {
		return Server{}, fmt.Errorf("list information_schema tables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return Server{}, err
		}
		p.InfoSchema = append(p.InfoSchema, name)
	}
	if err := rows.Err(); err != nil {
		return Server{}, err
	}
	return FromProbe(p)
}

// mariaDBVariables are read on MariaDB only: the limits of a pool that resizes at run time
// (MDEV-29445; servers before 10.11.12 have none, which is no error) and the undo
// tablespaces' count.
var mariaDBVariables = []string{"innodb_buffer_pool_size_max", "innodb_buffer_pool_size_auto_min", "innodb_undo_tablespaces"}

// readVariables adds the named global variables the server has to vars.
func readVariables(ctx context.Context, q Querier, vars map[string]string, names []string) error {
	rows, err := q.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('"+strings.Join(names, "', '")+"')")
	if err != nil {
		return fmt.Errorf("read %s: %w", strings.Join(names, ", "), err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		vars[strings.ToLower(name)] = value
	}
	return rows.Err()
}

// FromProbe interprets a probe.
func FromProbe(p Probe) (Server, error) {
	kind, ver, err := ParseVersion(p.Version, p.VersionComment)
	if err != nil {
		return Server{}, err
	}
	s := Server{
		Kind: kind, Version: ver, VersionString: p.Version, VersionComment: p.VersionComment,
		Hostname:     p.Variables["hostname"],
		ServerID:     p.Variables["server_id"],
		UUID:         p.Variables["server_uuid"],
		Datadir:      p.Variables["datadir"],
		DumpFilename: p.Variables["innodb_buffer_pool_filename"],
		infoSchema:   map[string]bool{},
	}
	s.Port, _ = strconv.Atoi(p.Variables["port"])
	s.PageSize, _ = strconv.Atoi(p.Variables["innodb_page_size"])
	if s.PageSize == 0 {
		s.PageSize = 16384
	}
	s.PoolSize, _ = strconv.ParseInt(p.Variables["innodb_buffer_pool_size"], 10, 64)
	s.PoolSizeMax, _ = strconv.ParseInt(p.Variables["innodb_buffer_pool_size_max"], 10, 64)
	s.PoolAutoMin, _ = strconv.ParseInt(p.Variables["innodb_buffer_pool_size_auto_min"], 10, 64)
	s.DumpPct, _ = strconv.Atoi(p.Variables["innodb_buffer_pool_dump_pct"])
	if kind == MariaDB {
		s.UndoTablespaces, _ = strconv.Atoi(p.Variables["innodb_undo_tablespaces"])
	}
	ro := strings.ToUpper(p.Variables["read_only"])
	s.ReadOnly = ro == "1" || ro == "ON"
	for _, t := range p.InfoSchema {
		s.infoSchema[strings.ToUpper(t)] = true
	}
	return s, nil
}

func (s Server) String() string {
	return fmt.Sprintf("%s %s", s.Kind, s.VersionString)
}

// IsMariaDB reports the family.
func (s Server) IsMariaDB() bool { return s.Kind == MariaDB }

// Identity names the server in manifests and reports: the UUID where there is one.
func (s Server) Identity() string {
	if s.UUID != "" {
		return s.UUID
	}
	return fmt.Sprintf("%s:%d", s.Hostname, s.Port)
}

// HasInfoSchema reports whether information_schema has the named table.
func (s Server) HasInfoSchema(table string) bool { return s.infoSchema[strings.ToUpper(table)] }

// InnoDB dictionary tables in information_schema: MariaDB kept the INNODB_SYS_ names that
// MySQL 8 replaced with its data dictionary views.
func (s Server) dictTable(mariadb, mysql string) string {
	if s.IsMariaDB() || !s.Version.AtLeast(8, 0, 0) {
		return "information_schema." + mariadb
	}
	return "information_schema." + mysql
}

// InnoDBViewsBuildEveryTable says whether each read of InnoDB's dictionary views
// (INNODB_TABLES, INNODB_INDEXES, INNODB_COLUMNS) builds every table's InnoDB definition,
// whatever its WHERE: MySQL 8.0+, about 5.5 s a read at 20,000 tables. MariaDB's and
// MySQL 5.7's read InnoDB's own system tables.
func (s Server) InnoDBViewsBuildEveryTable() bool {
	return !s.IsMariaDB() && s.Version.AtLeast(8, 0, 0)
}

// DictionarySource is one view a catalog fingerprint sums: its rows' Columns, checksummed.
type DictionarySource struct{ From, Columns string }

// DictionaryFingerprint is what a catalog cache sums to learn that no table, partition,
// index or column changed, from views that open no table. MariaDB and MySQL before 8.0:
// InnoDB's own dictionary views (0.12-0.14 s at 20,000 tables), where information_schema's
// STATISTICS opens each table; a rebuild or TRUNCATE gives the table a new id. MySQL 8.0+:
// information_schema's views of its data dictionary (0.8 s at 20,000 tables), where its
// INNODB_TABLES, INNODB_INDEXES and INNODB_COLUMNS build every table's InnoDB definition
// (5.5-5.8 s each); a rebuild or TRUNCATE gives the table a new tablespace.
func (s Server) DictionaryFingerprint() []DictionarySource {
	if !s.InnoDBViewsBuildEveryTable() {
		return []DictionarySource{
			// A row's id with its name: swapping two tables' names keeps the set of each.
			{s.TablesTable(), "TABLE_ID, NAME, SPACE, N_COLS"},
			{s.IndexesTable(), "INDEX_ID, TABLE_ID, NAME"},
			{s.ColumnsTable(), "TABLE_ID, POS, NAME, MTYPE, PRTYPE, LEN"},
		}
	}
	return []DictionarySource{
		{"information_schema.TABLES", "TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, CREATE_TIME"},
		{"information_schema.STATISTICS", "TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, SUB_PART, IS_VISIBLE"},
		{"information_schema.COLUMNS", "TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE"},
		// A space's id with its name: a rebuild, a TRUNCATE, a swap of two tables' names.
		{s.TablespacesTable(), "SPACE, NAME"},
	}
}

// GlobalStatusTable is the table of SHOW GLOBAL STATUS's rows (VARIABLE_NAME,
// VARIABLE_VALUE), for a status variable inside a query: MySQL 5.7 moved it to
// performance_schema and 8.0 removed information_schema's.
func (s Server) GlobalStatusTable() string {
	if s.IsMariaDB() || !s.Version.AtLeast(5, 7, 0) {
		return "information_schema.GLOBAL_STATUS"
	}
	return "performance_schema.global_status"
}

// TablesTable maps each InnoDB table (NAME "db/t" or "db/t#P#p0") to its SPACE.
func (s Server) TablesTable() string { return s.dictTable("INNODB_SYS_TABLES", "INNODB_TABLES") }

// IndexesTable lists InnoDB indexes with INDEX_ID, NAME, TABLE_ID, SPACE, PAGE_NO (root).
func (s Server) IndexesTable() string { return s.dictTable("INNODB_SYS_INDEXES", "INNODB_INDEXES") }

// TablespacesTable lists tablespaces with SPACE, NAME, PAGE_SIZE, FILE_SIZE.
func (s Server) TablespacesTable() string {
	return s.dictTable("INNODB_SYS_TABLESPACES", "INNODB_TABLESPACES")
}

// TablespacesListAll reports whether TablespacesTable lists every tablespace. MariaDB lists
// only those opened since the restart, so callers must not read absence as "no such file".
func (s Server) TablespacesListAll() bool { return !s.IsMariaDB() }

// BufferPageTable and BufferPageLRUTable are the per-page views of the buffer pool.
func (s Server) BufferPageTable() string    { return "information_schema.INNODB_BUFFER_PAGE" }
func (s Server) BufferPageLRUTable() string { return "information_schema.INNODB_BUFFER_PAGE_LRU" }

// OldExpr is a SQL expression that is 1 when the page column col says "in the old sublist":
// MariaDB stores 0/1, MySQL 'YES'/'NO'.
func (s Server) OldExpr(col string) string {
	if s.IsMariaDB() {
		return fmt.Sprintf("(COALESCE(%s, 0) = 1)", col)
	}
	return fmt.Sprintf("(%s = 'YES')", col)
}

// LRUOldExpr is a SQL expression over INNODB_BUFFER_PAGE_LRU that is 1 for a page in the old
// sublist. MariaDB leaves that view's IS_OLD NULL on every row, so there the old sublist is
// found by position. Both servers number LRU_POSITION from the list's tail (the server walks
// it from its last element: 0 is the next page to be evicted, the highest number the most
// recently used), so the old sublist is positions 0 to oldLen-1, oldLen being "Old
// database pages" in SHOW ENGINE INNODB STATUS. NeedsLRUOldLen says when oldLen is used.
func (s Server) LRUOldExpr(oldLen int64) string {
	if s.NeedsLRUOldLen() {
		return fmt.Sprintf("(LRU_POSITION < %d)", oldLen)
	}
	return s.OldExpr("IS_OLD")
}

// NeedsLRUOldLen: see LRUOldExpr.
func (s Server) NeedsLRUOldLen() bool { return s.IsMariaDB() }

// WithTimeLimit gives a SELECT a server-side time limit: MariaDB's SET STATEMENT
// max_statement_time, MySQL's MAX_EXECUTION_TIME optimizer hint. A zero limit returns
// the statement unchanged.
func (s Server) WithTimeLimit(selectStmt string, limit time.Duration) string {
	if limit <= 0 {
		return selectStmt
	}
	if s.IsMariaDB() {
		if !s.Version.AtLeast(10, 1, 2) {
			return selectStmt
		}
		return fmt.Sprintf("SET STATEMENT max_statement_time=%g FOR %s", limit.Seconds(), selectStmt)
	}
	if !s.Version.AtLeast(5, 7, 8) {
		return selectStmt
	}
	trimmed := strings.TrimLeft(selectStmt, " \t\r\n")
	if len(trimmed) < 6 || !strings.EqualFold(trimmed[:6], "SELECT") {
		return selectStmt
	}
	return fmt.Sprintf("SELECT /*+ MAX_EXECUTION_TIME(%d) */%s", limit.Milliseconds(), trimmed[6:])
}

// DumpFileDynamic reports whether innodb_buffer_pool_filename may be changed at runtime
// (MySQL); on MariaDB the dump file is fixed in the datadir.
func (s Server) DumpFileDynamic() bool { return !s.IsMariaDB() }

// DumpListsSpace reports whether the server's buffer-pool dump lists the pages of a
// tablespace: MariaDB leaves out its temporary tablespace (space id 0xFFFFFFFE); MySQL lists
// every page, its temporary (0xFFFFFFFD) and dictionary (0xFFFFFFFE) tablespaces' too.
func (s Server) DumpListsSpace(space uint32) bool {
	return !(s.IsMariaDB() && space == mariaDBTempSpaceID)
}

// NewTablespaceSDIRoot is the page of a new file-per-table tablespace that roots its
// serialized dictionary (SDI), 0 where there is none: MySQL 8.0 and later keep each
// table's dictionary in its tablespace and put the SDI's root at page 3, the first page
// after the inode page, where MariaDB puts the first index's root.
func (s Server) NewTablespaceSDIRoot() uint32 {
	if s.Kind == MySQL && s.Version.AtLeast(8, 0, 0) {
		return 3
	}
	return 0
}

// ServerSpace reports whether a tablespace is the server's own, not a table's: the system
// tablespace, the undo tablespaces, the temporary ones and MySQL's dictionary. The server
// reads their pages for itself, whatever a warm-up loads: on a 64 MiB MySQL 9.7 standby
// just restarted they held 990 of its 4,096 pages.
func (s Server) ServerSpace(space uint32) bool {
	if space == 0 {
		return true
	}
	if s.IsMariaDB() {
		return space == mariaDBTempSpaceID || int64(space) <= int64(s.UndoTablespaces)
	}
	// MySQL 8.0+ reserves the ids from s_reserved_space_id (0xFFF8_E770) up for its undo,
	// temporary and dictionary tablespaces; 9.7 also showed pages of a space 0xFCF2_xxxx
	// (a session's temporary tablespace). Tables' ids count up from 1.
	return space >= mysqlServerSpacesFrom
}

// mysqlServerSpacesFrom is where this package takes MySQL's reserved space ids to begin:
// below the ranges its sources name, far above any table's.
const mysqlServerSpacesFrom = 0xF0000000

// mariaDBTempSpaceID is MariaDB's SRV_TMP_SPACE_ID.
const mariaDBTempSpaceID = 0xFFFFFFFE

// DumpFilePath is where the server reads and writes its buffer-pool dump.
func (s Server) DumpFilePath() string {
	name := s.DumpFilename
	if name == "" {
		name = "ib_buffer_pool"
	}
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(s.Datadir, name)
}

// LoadThrottledWhenBusy reports whether the native loader slows to ~innodb_io_capacity pages/s
// as soon as the server has other activity (MySQL, and MariaDB before 10.5's async reads).
func (s Server) LoadThrottledWhenBusy() bool {
	return !s.IsMariaDB() || !s.Version.AtLeast(10, 5, 0)
}

// LoadQueuesReads reports whether the native loader submits its reads without waiting for
// each (MariaDB 10.5+): on a disk at its limit a load queues them ahead of the foreground's.
// Such reads are not in Innodb_data_pending_reads, which counts the synchronous ones.
func (s Server) LoadQueuesReads() bool { return !s.LoadThrottledWhenBusy() }

// ScansOutrunNativeLoad reports whether SQL scans of whole tables fill the pool faster than the
// server's own loader reads the same pages (MySQL: its loader submits one 16 KiB read per
// page; scans read whole extents ahead). Measured on MySQL 9.7 (docs/bench-results.md, the
// warm scenario, 1.1-1.2 GB tables into an empty 2 GiB pool): scans 1.4-2.8x the loader's
// speed; on MariaDB 10.11 and 11.8 scans are 0.5-0.7x.
func (s Server) ScansOutrunNativeLoad() bool { return s.Kind == MySQL }

// RangeEndPages is what a range read reads beyond its own pages: the optimizer estimates
// its rows by a dive to each end (EXPLAIN's and the statement's own), and the scan reads the
// first key past its high bound, on the next leaf. Measured on cold servers, a statement of
// 16 hot ranges of a scattered hot set read 48-54 pages on MariaDB 10.11 and 45-52 on MySQL
// 9.7, whose estimates read more of the leaves near the ends.
func (s Server) RangeEndPages() int64 {
	if s.IsMariaDB() {
		return 2
	}
	return 3
}

// UnionLimitStopsReading reports whether a LIMIT over a derived table's UNION ALL stops its
// members' reads once it has its rows (MySQL's iterator executor, 8.0.22+). Measured cold,
// two ranges of 1,500 pages under LIMIT 3000: MySQL 9.7 read 63 pages; MariaDB 10.11 read
// all 1,506 (it fills the union's table before the limit applies), as without the limit.
func (s Server) UnionLimitStopsReading() bool {
	return s.Kind == MySQL && s.Version.AtLeast(8, 0, 22)
}

// ParallelReadThreads reports whether COUNT(*) on the clustered index is read in parallel
// (innodb_parallel_read_threads, MySQL 8.0.14+).
func (s Server) ParallelReadThreads() bool {
	return s.Kind == MySQL && s.Version.AtLeast(8, 0, 14)
}

// DigestSampleText reports whether performance_schema digests carry a sample statement
// (QUERY_SAMPLE_TEXT, MySQL 8.0.3+).
func (s Server) DigestSampleText() bool {
	return s.Kind == MySQL && s.Version.AtLeast(8, 0, 3)
}

// PartitionSeparator is how InnoDB names a partition's table internally: "t#P#p0"
// (MariaDB and MySQL 5.7) or "t#p#p0" (MySQL 8).
func (s Server) PartitionSeparator() string {
	if s.Kind == MySQL && s.Version.AtLeast(8, 0, 0) {
		return "#p#"
	}
	return "#P#"
}

// CachedIndexes reports whether information_schema.INNODB_CACHED_INDEXES (MySQL 8) gives
// resident pages per index without walking every page of the pool.
func (s Server) CachedIndexes() bool { return s.HasInfoSchema("INNODB_CACHED_INDEXES") }

// SubpartitionSeparator follows the partition name in InnoDB's internal table name:
// "t#P#p0#SP#p0sp0" (MariaDB, MySQL 5.7) or "t#p#p0#sp#p0sp0" (MySQL 8).
func (s Server) SubpartitionSeparator() string {
	if s.Kind == MySQL && s.Version.AtLeast(8, 0, 0) {
		return "#sp#"
	}
	return "#SP#"
}

// IndexUsableExpr is a SQL expression over information_schema.STATISTICS that is true when
// the optimizer may use the index, and so FORCE INDEX can scan it: MariaDB 10.6+ has
// IGNORED indexes, MySQL 8 invisible ones.
func (s Server) IndexUsableExpr() string {
	switch {
	case s.IsMariaDB() && s.Version.AtLeast(10, 6, 0):
		return "(IGNORED = 'NO')"
	case s.Kind == MySQL && s.Version.AtLeast(8, 0, 0):
		return "(IS_VISIBLE = 'YES')"
	}
	return "1"
}

// SystemVersioning reports whether tables may keep row history (MariaDB 10.3+); a scan of
// such a table must say FOR SYSTEM_TIME ALL, or the server filters on the hidden row_end
// column and reads the clustered index for every secondary-index entry.
func (s Server) SystemVersioning() bool { return s.IsMariaDB() && s.Version.AtLeast(10, 3, 4) }

// SchemaComments reports whether CREATE SCHEMA takes a COMMENT, shown as SCHEMA_COMMENT in
// information_schema.SCHEMATA (MariaDB 10.5+).
func (s Server) SchemaComments() bool { return s.IsMariaDB() && s.Version.AtLeast(10, 5, 0) }

// SequenceEngine reports whether the Sequence engine's seq_1_to_N tables exist (MariaDB
// 10.0.3+), so rows can be generated server-side with INSERT ... SELECT.
func (s Server) SequenceEngine() bool { return s.IsMariaDB() && s.Version.AtLeast(10, 0, 3) }

// GlobalVariablePrivileges are the privileges of which one lets a user SET GLOBAL variables
// (innodb_buffer_pool_load_now, innodb_old_blocks_time): MariaDB has SUPER; MySQL 8 added
// SYSTEM_VARIABLES_ADMIN.
func (s Server) GlobalVariablePrivileges() []string {
	if s.Kind == MySQL && s.Version.AtLeast(8, 0, 0) {
		return []string{"SUPER", "SYSTEM_VARIABLES_ADMIN"}
	}
	return []string{"SUPER"}
}

// ExplainTabular is the prefix of an EXPLAIN that answers in the tabular format (one row per
// table with its key and access type). MySQL 8.0.32+ lets explain_format choose the default,
// and MySQL 9 sets it to TREE; FORMAT=TRADITIONAL (MySQL 5.6+) asks for the table. MariaDB's
// plain EXPLAIN is tabular and it knows no FORMAT=TRADITIONAL.
func (s Server) ExplainTabular() string {
	if s.IsMariaDB() {
		return "EXPLAIN "
	}
	return "EXPLAIN FORMAT=TRADITIONAL "
}

// ElasticPool reports whether the pool resizes in 1 MiB steps up to innodb_buffer_pool_size_max
// and may shrink by itself (MariaDB 10.11.12+, 11.4.6+, 11.8.2+, MDEV-29445), rather than in
// chunks of innodb_buffer_pool_chunk_size times the instances, only when told (MySQL, older
// MariaDB). Either way SET GLOBAL innodb_buffer_pool_size resizes it while the server runs:
// MariaDB's SET returns once done, MySQL's resizes in the background and says so in
// Innodb_buffer_pool_resize_status; both report the new Innodb_buffer_pool_pages_total.
func (s Server) ElasticPool() bool { return s.IsMariaDB() && s.PoolSizeMax > 0 }

// PoolShrinkFloor is how small the server may make its pool by itself: MariaDB's elastic
// pool shrinks under the kernel's memory pressure events towards innodb_buffer_pool_size_auto_min,
// when that is below the size (by default it equals innodb_buffer_pool_size_max: never).
func (s Server) PoolShrinkFloor() (int64, bool) {
	if !s.ElasticPool() || s.PoolAutoMin <= 0 || s.PoolAutoMin >= s.PoolSize {
		return 0, false
	}
	return s.PoolAutoMin, true
}

// PoolResizeArgs are the server options that let a sandbox's pool be resized in steps of
// step bytes: the chunk size, where the pool is made of chunks (MySQL, MariaDB before the
// elastic pool); nothing where it resizes in 1 MiB steps.
func (s Server) PoolResizeArgs(step int64) []string {
	if s.ElasticPool() {
		return nil
	}
	return []string{fmt.Sprintf("--innodb-buffer-pool-chunk-size=%d", step)}
}

// LoadAborted says whether Innodb_buffer_pool_load_status tells of a load that was aborted:
// by innodb_buffer_pool_load_abort ("Buffer pool(s) load aborted on request"), and by the
// server itself when it shrinks the pool, in the same words: MySQL's buf_pool_resize and
// MariaDB's buf_pool_t::shrink both call buf_load_abort().
func LoadAborted(status string) bool { return strings.Contains(status, "aborted") }

// LoadFinished says whether Innodb_buffer_pool_load_status reports a load that is over:
// completed ("Buffer pool(s) load completed at ..."), aborted, or failed ("Cannot open
// '...ib_buffer_pool' for reading", "Error ..."), in both flavors' words.
func LoadFinished(status string) bool {
	return strings.Contains(status, "completed") || LoadAborted(status) || strings.HasPrefix(status, "Cannot") || strings.Contains(status, "rror")
}

// LoadInProgress says whether Innodb_buffer_pool_load_status describes a load that is running:
// "Loading buffer pool(s) from ..." or "Loaded n/m pages" (MySQL reports the count as it goes).
// MySQL says "Loading of buffer pool not started" for a server that never loaded; that is not
// a load in progress.
func LoadInProgress(status string) bool {
	if strings.HasPrefix(status, "Loading of buffer pool not started") {
		return false
	}
	return strings.HasPrefix(status, "Loaded ") || strings.HasPrefix(status, "Loading")
}

// FreshTableStatsStatement makes information_schema.TABLES and PARTITIONS report sizes as
// the storage engine has them now, for the session: MySQL 8.0+ answers from a cache of up to
// information_schema_stats_expiry seconds (a day by default), so a table loaded since its
// sizes were cached still shows the size it had, 1 page for a table cached empty ("" where
// there is no such cache: MariaDB asks the engine each time).
func (s Server) FreshTableStatsStatement() string {
	if s.Kind == MySQL && s.Version.AtLeast(8, 0, 3) {
		return "SET SESSION information_schema_stats_expiry = 0"
	}
	return ""
}

// PurgeWaitStatement returns once InnoDB's purge has caught up (MariaDB 10.5.7+: setting
// innodb_max_purge_lag_wait waits until the history list is at most that long); "" where
// there is no such statement (MySQL: FLUSH TABLES ... FOR EXPORT stops purge itself).
func (s Server) PurgeWaitStatement() string {
	if s.IsMariaDB() && s.Version.AtLeast(10, 5, 7) {
		return "SET GLOBAL innodb_max_purge_lag_wait = 0"
	}
	return ""
}
