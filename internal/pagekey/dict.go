package pagekey

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
)

// Dictionary is what InnoDB's dictionary says about the catalog's tables beyond the
// catalog: each column's stored type (MTYPE, PRTYPE, LEN), each table's row format and
// instant history, and the character sets' sizes.
type Dictionary struct {
	srv      flavor.Server
	charsets map[string]Charset
	tables   map[uint64]*storedTable // by TABLE_ID (a partition has its own)
}

type storedTable struct {
	rowFormat   string
	instantCols int // MySQL 8.0.12's instant ADD (upgraded tables)
	versions    int // MySQL 8.0.29's row versions
	columns     map[string]StoredColumn
	order       []string // stored (non-virtual) columns by POS
	// indexFields are each index's key fields as InnoDB's dictionary lists them, by POS.
	indexFields map[string][]string
}

// LoadDictionary reads InnoDB's dictionary for the tables (and partitions) of cat, on
// sessions of its own (their statements are killed when ctx is cancelled).
func LoadDictionary(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog) (*Dictionary, error) {
	return loadDictionary(ctx, conn, cat, nil)
}

// dictRead is one of LoadDictionary's reads, on a session of its own; in is the tables'
// ids as an IN list.
type dictRead func(ctx context.Context, sess *connection.Session, srv flavor.Server, in string) error

// loadDictionary is LoadDictionary with its reads in share (connection.Share): where the
// server refuses more connections they run one after another. None of them holds a session
// while it waits for another's, or two reads and a refusal would wait on each other.
func loadDictionary(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, share *connection.Share) (*Dictionary, error) {
	if share == nil {
		share = &connection.Share{}
	}
	srv := conn.Server
	d := &Dictionary{srv: srv, charsets: map[string]Charset{}, tables: map[uint64]*storedTable{}}
	var tableIDs []uint64
	spaces := map[uint32]bool{}
	for _, t := range cat.Tables {
		for _, p := range t.Parts {
			if p.SpaceKnown && p.TableID != 0 {
				tableIDs = append(tableIDs, p.TableID)
				spaces[p.Space] = true
				d.tables[p.TableID] = &storedTable{columns: map[string]StoredColumn{}}
			}
		}
	}
	maxLen := map[string]int{}
	readCharsets := func(ctx context.Context, sess *connection.Session) error {
		err := sess.Query(ctx, "SELECT CHARACTER_SET_NAME, MAXLEN FROM information_schema.CHARACTER_SETS", nil, func(rows *sql.Rows) error {
			var name string
			var n int
			if err := rows.Scan(&name, &n); err != nil {
				return err
			}
			maxLen[name] = n
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the character sets: %w", err)
		}
		return nil
	}
	ids := make([]string, len(tableIDs))
	for i, id := range tableIDs {
		ids[i] = strconv.FormatUint(id, 10)
	}
	in := strings.Join(ids, ",")
	// Up to three reads, each on a session of its own, at once (the character sets, a
	// small read, first on the first one's): on MySQL each view builds every table's InnoDB
	// definition whatever the WHERE (about 5 s at 20,000 tables), and they fill different
	// fields of each table. The record formats and the indexes' ids come from the catalog's
	// load where it read them (the whole views, on the database host): then only the
	// columns and the indexes' fields are read.
	readIndexes := d.readIndexFields
	if known, missing := cat.KnownRoots(spaces); len(missing) == 0 {
		readIndexes = func(ctx context.Context, sess *connection.Session, srv flavor.Server, _ string) error {
			return d.readFieldsOf(ctx, sess, srv, d.indexesOf(known))
		}
	}
	reads := []dictRead{func(ctx context.Context, sess *connection.Session, srv flavor.Server, in string) error {
		if err := readCharsets(ctx, sess); err != nil || len(tableIDs) == 0 {
			return err
		}
		return readIndexes(ctx, sess, srv, in)
	}}
	if len(tableIDs) > 0 {
		if stored, ok := cat.KnownColumns(tableIDs); ok {
			for id, cols := range stored {
				d.addColumns(id, cols)
			}
		} else {
			reads = append(reads, d.readColumns)
		}
		if formats, ok := cat.KnownFormats(tableIDs); ok {
			for id, f := range formats {
				d.tables[id].rowFormat, d.tables[id].instantCols, d.tables[id].versions = f.RowFormat, f.InstantCols, f.RowVersions
			}
		} else {
			reads = append(reads, d.readRowFormats)
		}
	}
	var sessions []func() error
	for _, read := range reads {
		sessions = append(sessions, func() error {
			return share.Run(ctx, func() error {
				sess, err := conn.NewSession(ctx)
				if err != nil {
					return err
				}
				defer sess.Close()
				return read(ctx, sess, srv, in)
			})
		})
	}
	if err := together(sessions...); err != nil {
		return nil, err
	}
	for _, t := range cat.Tables {
		for _, c := range t.Columns {
			cs, _, _ := strings.Cut(c.Collation, "_")
			if n, ok := maxLen[cs]; ok && c.Collation != "" {
				d.charsets[c.Collation] = Charset{Name: cs, MinLen: minLenOf(cs), MaxLen: n}
			}
		}
	}
	return d, nil
}

// together runs fns at once and gives the first of their errors, in their order.
func together(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return cmp.Or(errs...)
}

// readColumns reads the tables' stored columns (types and, for the record's order, positions).
func (d *Dictionary) readColumns(ctx context.Context, sess *connection.Session, srv flavor.Server, in string) error {
	stored, err := catalog.ReadStoredColumns(ctx, sess, srv, " WHERE TABLE_ID IN ("+in+")")
	if err != nil {
		return err
	}
	for id, cols := range stored {
		d.addColumns(id, cols)
	}
	return nil
}

// addColumns keeps table id's stored columns: their types and, for the record's order,
// the stored ones by position.
func (d *Dictionary) addColumns(id uint64, cols []catalog.StoredColumn) {
	t := d.tables[id]
	if t == nil {
		return
	}
	byPos := slices.Clone(cols)
	slices.SortFunc(byPos, func(a, b catalog.StoredColumn) int { return cmp.Compare(a.Pos, b.Pos) })
	for _, c := range byPos {
		sc := StoredColumn{Name: c.Name, MType: c.MType, PRType: c.PRType, Len: c.Len}
		t.columns[c.Name] = sc
		if !sc.Virtual() {
			t.order = append(t.order, c.Name)
		}
	}
}

// indexOf is an index of one of the dictionary's tables: its table's id and its name.
type indexOf struct {
	table uint64
	name  string
}

// readIndexFields reads the fields of the tables' indexes, in order.
func (d *Dictionary) readIndexFields(ctx context.Context, sess *connection.Session, srv flavor.Server, in string) error {
	// Two queries joined here, not one JOIN: the server materializes both views without an
	// index and joins them in a nested loop, fields times indexes (2.5 s for 5,000 tables of
	// two indexes each, quadratic beyond).
	indexes := map[uint64]indexOf{}
	err := sess.Query(ctx, "SELECT INDEX_ID, TABLE_ID, NAME FROM "+srv.IndexesTable()+" WHERE TABLE_ID IN ("+in+")", nil, func(rows *sql.Rows) error {
		var id uint64
		var ix indexOf
		if err := rows.Scan(&id, &ix.table, &ix.name); err != nil {
			return err
		}
		indexes[id] = ix
		return nil
	})
	if err != nil {
		return catalog.ExplainPrivilege(err, srv.IndexesTable())
	}
	return d.readFieldsOf(ctx, sess, srv, indexes)
}

// indexesOf picks, of the index roots the catalog's load read (by space and name), the
// indexes of the dictionary's tables: a shared tablespace holds other tables' too.
func (d *Dictionary) indexesOf(roots map[uint32]map[string]catalog.IndexRoot) map[uint64]indexOf {
	indexes := map[uint64]indexOf{}
	for _, byName := range roots {
		for name, r := range byName {
			if _, ok := d.tables[r.Table]; ok {
				indexes[r.ID] = indexOf{table: r.Table, name: name}
			}
		}
	}
	return indexes
}

// readFieldsOf reads the fields of the indexes (by index id), in order.
func (d *Dictionary) readFieldsOf(ctx context.Context, sess *connection.Session, srv flavor.Server, indexes map[uint64]indexOf) error {
	type field struct {
		index, name string
		pos         int64
	}
	indexIDs := make([]string, 0, len(indexes))
	for id := range indexes {
		indexIDs = append(indexIDs, strconv.FormatUint(id, 10))
	}
	sort.Strings(indexIDs) // the same statement for the same indexes
	fields := map[uint64][]field{}
	if len(indexIDs) > 0 {
		err := sess.Query(ctx, "SELECT INDEX_ID, NAME, POS FROM "+srv.FieldsTable()+" WHERE INDEX_ID IN ("+strings.Join(indexIDs, ",")+")", nil, func(rows *sql.Rows) error {
			var id uint64
			var f field
			if err := rows.Scan(&id, &f.name, &f.pos); err != nil {
				return err
			}
			if ix, ok := indexes[id]; ok {
				f.index = ix.name
				fields[ix.table] = append(fields[ix.table], f)
			}
			return nil
		})
		if err != nil {
			return catalog.ExplainPrivilege(err, srv.FieldsTable())
		}
	}
	for id, fs := range fields {
		t := d.tables[id]
		if t == nil {
			continue
		}
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].pos < fs[j].pos })
		t.indexFields = map[string][]string{}
		for _, f := range fs {
			t.indexFields[f.index] = append(t.indexFields[f.index], f.name)
		}
	}
	return nil
}

// readRowFormats reads the tables' row formats and instant columns.
func (d *Dictionary) readRowFormats(ctx context.Context, sess *connection.Session, srv flavor.Server, in string) error {
	err := sess.Query(ctx, "SELECT TABLE_ID, ROW_FORMAT, "+srv.InstantColumnsExpr()+" FROM "+srv.TablesTable()+" WHERE TABLE_ID IN ("+in+")", nil, func(rows *sql.Rows) error {
		var id uint64
		var format sql.NullString
		var instant, versions int
		if err := rows.Scan(&id, &format, &instant, &versions); err != nil {
			return err
		}
		if t := d.tables[id]; t != nil {
			t.rowFormat, t.instantCols, t.versions = strings.ToLower(format.String), instant, versions
		}
		return nil
	})
	if err != nil {
		return catalog.ExplainPrivilege(err, srv.TablesTable())
	}
	return nil
}

// Source reads pages of one tablespace file.
type Source struct {
	r        io.ReaderAt
	f        *os.File
	PageSize int    // logical page size
	Pages    uint32 // the file's size in pages
	// zipSize is the size of the file's pages when they are ROW_FORMAT=COMPRESSED
	// (KEY_BLOCK_SIZE; page 0's FSP flags say), 0 when they are PageSize bytes as they are.
	zipSize int
}

// OpenSource opens a tablespace file of a server whose pages are pageSize bytes (its
// innodb_page_size); a compressed tablespace's smaller pages are read as its page 0 says.
func OpenSource(path string, pageSize int) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := newSource(f, st.Size(), pageSize)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.f = f
	return s, nil
}

// NewSource reads pages from r, a file of size bytes, of a server whose pages are
// pageSize bytes. A file whose page 0 cannot be read is taken to hold pages of that size.
func NewSource(r io.ReaderAt, size int64, pageSize int) *Source {
	s, err := newSource(r, size, pageSize)
	if err != nil {
		return &Source{r: r, PageSize: pageSize, Pages: uint32(size / int64(pageSize))}
	}
	return s
}

func newSource(r io.ReaderAt, size int64, pageSize int) (*Source, error) {
	s := &Source{r: r, PageSize: pageSize}
	const fspFlags = pageHeader + 16 // FSP_SPACE_FLAGS: the space header follows the FIL header
	var head [fspFlags + 4]byte
	if size >= int64(len(head)) {
		if _, err := r.ReadAt(head[:], 0); err != nil {
			return nil, fmt.Errorf("read the space header: %w", err)
		}
		s.zipSize = zipSizeOf(binary.BigEndian.Uint32(head[fspFlags:]))
		if s.zipSize > pageSize {
			return nil, fmt.Errorf("%w: %d-byte compressed pages on a server with %d-byte pages", ErrCorrupt, s.zipSize, pageSize)
		}
	}
	s.Pages = uint32(size / int64(s.physical()))
	return s, nil
}

// physical is the size of a page in the file.
func (s *Source) physical() int {
	if s.zipSize > 0 {
		return s.zipSize
	}
	return s.PageSize
}

// Compressed says whether the file's pages are ROW_FORMAT=COMPRESSED, and their size.
func (s *Source) Compressed() (bool, int) { return s.zipSize > 0, s.physical() }

// Close closes a file OpenSource opened.
func (s *Source) Close() error {
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}

// Page reads page n; a compressed index page comes inflated, as the buffer pool holds it.
func (s *Source) Page(n uint32) (Page, error) {
	if n >= s.Pages {
		return nil, fmt.Errorf("page %d is past the end of the file (%d pages)", n, s.Pages)
	}
	if s.zipSize == 0 {
		p := make(Page, s.PageSize)
		if _, err := s.r.ReadAt(p, int64(n)*int64(s.PageSize)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", n, err)
		}
		return p, nil
	}
	raw := runBuffer(s.zipSize)
	defer putRunBuffer(raw)
	if _, err := s.r.ReadAt(raw, int64(n)*int64(s.zipSize)); err != nil {
		return nil, fmt.Errorf("read page %d: %w", n, err)
	}
	p := make(Page, s.PageSize)
	if _, err := s.logical(raw, p); err != nil {
		return nil, err
	}
	return p, nil
}

// logical turns a compressed tablespace's page raw into its logical page p: an index
// page inflated, any other as it is (its bytes past raw's size zero).
func (s *Source) logical(raw []byte, p Page) (logEntries int, err error) {
	if !compressible(binary.BigEndian.Uint16(raw[filPageType:])) {
		clear(p[copy(p, raw):])
		return 0, nil
	}
	return inflatePage(raw, p)
}

// Layouts works out how each B-tree index of one table part stores its keys. clusteredRoot
// is the clustered index's root page in src, read for the instant ALTER history the
// dictionary views do not show. An index whose keys cannot be read gets an error saying
// why (ErrUnsupported) instead of a layout.
func (d *Dictionary) Layouts(t *catalog.Table, p *catalog.Part, src *Source, clusteredRoot uint32) (map[string]*Layout, map[string]error) {
	layouts, errs := map[string]*Layout{}, map[string]error{}
	def, err := d.tableDef(t, p, src, clusteredRoot)
	for _, ix := range t.Indexes {
		if ix.Type != "BTREE" {
			// No key a range of rows can name: a snapshot says why it has none.
			errs[ix.Name] = unsupported("%s", notBTree(ix.Type))
			continue
		}
		if err != nil {
			errs[ix.Name] = err
			continue
		}
		l, err := Build(def, ix)
		if err != nil {
			errs[ix.Name] = err
			continue
		}
		l.Partition = p.Name
		layouts[ix.Name] = l
	}
	return layouts, errs
}

// notBTree says what an index of type typ (STATISTICS.INDEX_TYPE) is, where it is no B-tree
// of portable keys.
func notBTree(typ string) string {
	switch typ {
	case "SPATIAL":
		return "an R-tree (SPATIAL) index"
	case "FULLTEXT":
		return "a FULLTEXT index (its own tables)"
	case "HASH":
		return "MariaDB's hash of a long UNIQUE key (USING HASH): its key is a hidden hash column"
	}
	return "an index of type " + typ
}

func (d *Dictionary) tableDef(t *catalog.Table, p *catalog.Part, src *Source, clusteredRoot uint32) (TableDef, error) {
	st := d.tables[p.TableID]
	if st == nil || len(st.columns) == 0 {
		return TableDef{}, unsupported("%s is not in InnoDB's dictionary views", t.FullName())
	}
	def := TableDef{Table: t, Stored: st.columns, Order: st.order, IndexFields: st.indexFields, Charsets: d.charsets, Format: RecordFormatOf(d.srv.Kind)}
	if st.rowFormat == "redundant" {
		def.Redundant = true
	}
	if st.rowFormat == "compressed" && (st.versions > 0 || st.instantCols > 0) {
		// Neither server allows it today: a compressed page rebuilds only the deleted and
		// min-rec info bits, and the SDI reader (ibd's) does not inflate a compressed
		// tablespace's SDI pages.
		return def, unsupported("ROW_FORMAT=COMPRESSED after an instant ALTER (row versions %d, instant columns %d)", st.versions, st.instantCols)
	}
	if st.instantCols > 0 {
		return def, unsupported("a table upgraded with MySQL 8.0.12's instant columns (INSTANT_COLS %d): ALTER TABLE ... FORCE rewrites it", st.instantCols)
	}
	if def.Redundant {
		return def, nil // records store every field's offset: no null bitmap to size
	}
	var err error
	switch {
	case st.versions > 0:
		def.Versions = st.versions
		def.Physical, err = mysqlPhysicalColumns(src, t)
	case def.Format == MariaDBRecords:
		err = mariadbInstant(&def, src, clusteredRoot)
	}
	return def, err
}

// ErrNoFile: a tablespace's file is not where the server says, or not readable here.
var ErrNoFile = errors.New("tablespace file not readable")
