package pagekey

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/keys"
)

// Charset is what decoding needs of a character set: how many bytes a character takes.
type Charset struct {
	Name           string
	MinLen, MaxLen int
}

// space is the charset's space character, which pads CHAR values.
func (c Charset) space() []byte { return keys.SpaceOf(c.Name) }

// minLenOf is the fewest bytes a character of the charset takes (every charset both
// servers ship takes one, but for the UTF-16 and UTF-32 ones and UCS-2).
func minLenOf(charset string) int {
	switch charset {
	case "ucs2", "utf16", "utf16le":
		return 2
	case "utf32":
		return 4
	}
	return 1
}

// Field is one field of an index record, as InnoDB stores it.
type Field struct {
	Name     string
	Type     keys.Type
	Charset  Charset
	Unsigned bool
	Nullable bool
	// FixedLen is the size of a field COMPACT records store without a length (0: they
	// store its length): dict_col_get_fixed_size, cut to a prefix key part's bytes,
	// and 0 above 768 bytes.
	FixedLen int
	// Big is DATA_BIG_COL: the column may be longer than 255 bytes (or is a BLOB or TEXT),
	// so a stored length of 128 or more takes two bytes.
	Big bool
	// Desc: a descending key part. Its bytes are stored as an ascending one's; only the
	// index's order differs (keys.Column.Desc).
	Desc bool
}

// RecordFormat is whose record headers an index's pages have: the two servers mark
// records written after an instant ADD/DROP COLUMN differently.
type RecordFormat uint8

const (
	// MariaDBRecords: REC_STATUS_INSTANT (status 4) records count their added fields in
	// one or two bytes before the null bitmap; a hidden metadata record (min-rec flag) heads
	// the leftmost leaf page after an instant ALTER.
	MariaDBRecords RecordFormat = iota + 1
	// MySQLRecords: info bit 0x40 (8.0.29+ row versions) puts a version byte before the null
	// bitmap, bit 0x80 (8.0.12's instant ADD) a field count.
	MySQLRecords
)

// RecordFormatOf is the record format a server writes.
func RecordFormatOf(k flavor.Kind) RecordFormat {
	if k == flavor.MariaDB {
		return MariaDBRecords
	}
	return MySQLRecords
}

// Nulls says how many nullable fields a COMPACT record's null bitmap has a bit for, which
// is not always the index's: after an instant ADD or DROP COLUMN the clustered index's
// records keep the bitmap of the table as they were written.
type Nulls struct {
	// Plain counts them in node pointers and in leaf records with no instant header. For
	// a clustered index node pointers reserve the bits of every nullable column of the
	// table as first created (InnoDB's n_core_null_bytes), though they hold only the key.
	Plain int
	// ByFieldCount[n] counts the nullable fields among a leaf record's first n fields, for
	// records whose header gives their field count; CoreFields is MariaDB's count for a
	// record with no added field (REC_STATUS_INSTANT stores n - CoreFields - 1).
	ByFieldCount []int
	CoreFields   int
	// ByVersion[v] counts the nullable fields of MySQL row version v (8.0.29+).
	ByVersion []int
}

// Layout is how one index's keys are read from its pages.
type Layout struct {
	Schema, Table, Partition, Index string
	// Clustered: the table's clustered index, whose leaf records are its rows.
	Clustered bool
	// Fields are the key fields, in order: every leaf record starts with them, and every
	// node pointer holds them before its child page number. For a clustered index they are
	// the primary key (or DB_ROW_ID); for a secondary index its columns, then the primary
	// key's columns it does not hold whole (or DB_ROW_ID).
	Fields []Field
	// Columns describe Fields portably, in the same order.
	Columns keys.Columns
	Nulls   Nulls
	Format  RecordFormat

	// nodePtrAt is where a COMPACT node pointer's child page number is when every key
	// field has a fixed size and none is nullable (the lengths need not be read); -1
	// otherwise, 0 not yet worked out.
	nodePtrAt int
}

// fixedNodePtr is nodePtrAt, worked out on first use.
func (l *Layout) fixedNodePtr() int {
	if l.nodePtrAt == 0 {
		at := 0
		for _, f := range l.Fields {
			if f.FixedLen == 0 || f.Nullable {
				at = -1
				break
			}
			at += f.FixedLen
		}
		if at == 0 {
			at = -1
		}
		l.nodePtrAt = at
	}
	return l.nodePtrAt
}

// ErrUnsupported marks an index whose keys this package cannot read, with the reason.
var ErrUnsupported = errors.New("keys not readable")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// StoredColumn is one column as InnoDB's dictionary describes it
// (INNODB_SYS_COLUMNS / INNODB_COLUMNS: MTYPE, PRTYPE, LEN).
type StoredColumn struct {
	Name   string
	MType  int
	PRType uint32
	Len    int
}

// Virtual says whether the column is a virtual generated one, stored in no clustered
// index record (but in the secondary indexes on it).
func (c StoredColumn) Virtual() bool { return c.PRType&prtypeVirtual != 0 }

// Nullable says whether the column may be NULL.
func (c StoredColumn) Nullable() bool { return c.PRType&prtypeNotNull == 0 }

// PhysicalColumn is one column of the clustered index's records in their stored order, for
// counting nullable fields after an instant ADD or DROP COLUMN.
type PhysicalColumn struct {
	Nullable bool
	// Added and Dropped are MySQL's row versions (version_added, version_dropped; 0: never).
	Added, Dropped int
}

// TableDef is what Build needs to know of a table beyond the catalog.
type TableDef struct {
	Table *catalog.Table
	// Stored are the table's columns from InnoDB's dictionary, by name.
	Stored map[string]StoredColumn
	// Order is InnoDB's column order (the dictionary's POS) of the stored columns.
	Order []string
	// IndexFields are each index's key fields as InnoDB's dictionary lists them (nil when
	// it does not: the catalog's key parts are taken as they are).
	IndexFields map[string][]string
	// Charsets maps collations to their character sets.
	Charsets map[string]Charset
	Format   RecordFormat
	// Redundant: ROW_FORMAT=REDUNDANT, whose records store every field's end offset.
	Redundant bool
	// Physical, when set, is the clustered index's non-key columns in stored order with their
	// instant history (MariaDB after an instant ALTER that reordered or dropped columns,
	// MySQL after instant ADD/DROP: row versions). Without it the stored order is Order.
	Physical []PhysicalColumn
	// CoreFields is MariaDB's n_core_fields after an instant ALTER (the clustered index's
	// fields as first created, PAGE_INSTANT in its root page); 0 when there was none.
	CoreFields int
	// Versions is MySQL's TOTAL_ROW_VERSIONS: row versions exist when it is above 0.
	Versions int
}

var (
	sizeArgs  = regexp.MustCompile(`^[a-z]+\((\d+)(?:,(\d+))?\)`)
	intSizes  = map[string]int{"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "integer": 4, "bigint": 8}
	textTypes = map[string]bool{"varchar": true, "tinytext": true, "text": true, "mediumtext": true, "longtext": true}
	blobTypes = map[string]bool{"varbinary": true, "tinyblob": true, "blob": true, "mediumblob": true, "longblob": true}
)

// Build works out how index of def's table stores its keys.
func Build(def TableDef, index *catalog.Index) (*Layout, error) {
	t := def.Table
	l := &Layout{Schema: t.Schema, Table: t.Name, Index: index.Name, Clustered: index.Clustered, Format: def.Format}
	if index.Type != "BTREE" {
		return nil, unsupported("%s index", strings.ToLower(index.Type))
	}
	clust := t.Clustered()
	if clust == nil {
		return nil, unsupported("no clustered index in the catalog")
	}
	rowID := Field{Name: "DB_ROW_ID", Type: keys.Type{Kind: keys.RowID}, FixedLen: 6, Unsigned: true}
	// wholeInIndex: columns the index holds whole, which a secondary index does not repeat
	// from the primary key.
	wholeInIndex := map[string]bool{}
	var fields []Field
	add := func(kp keyPart) error {
		if kp.hidden != "" {
			f, err := def.hiddenField(kp.hidden)
			if err != nil {
				return err
			}
			wholeInIndex[strings.ToLower(kp.hidden)] = true
			fields = append(fields, f)
			return nil
		}
		ic := kp.ic
		f, err := def.field(ic)
		if err != nil {
			return err
		}
		if ic.SubPart == 0 {
			wholeInIndex[strings.ToLower(ic.Name)] = true
		}
		// A secondary index's appended primary key fields keep the primary key's order
		// (both servers: ids within one value of KEY (k) come out descending under
		// PRIMARY KEY (id DESC)), so ic is the clustered index's own key part there.
		f.Desc = ic.Desc
		fields = append(fields, f)
		return nil
	}
	switch {
	case index.Hidden:
		fields = append(fields, rowID)
	default:
		clustParts, err := def.keyParts(clust, nil)
		if err != nil {
			return nil, err
		}
		parts := clustParts
		if !index.Clustered {
			if parts, err = def.keyParts(index, clust); err != nil {
				return nil, err
			}
		}
		for _, kp := range parts {
			if err := add(kp); err != nil {
				return nil, err
			}
		}
		if !index.Clustered {
			if clust.Hidden {
				fields = append(fields, rowID)
			}
			for _, kp := range clustParts {
				if !wholeInIndex[strings.ToLower(kp.name())] {
					if err := add(kp); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	l.Fields = fields
	for _, f := range fields {
		l.Columns = append(l.Columns, keys.Column{Name: f.Name, Type: f.Type, Desc: f.Desc})
	}
	if !index.Clustered {
		for _, f := range fields {
			if f.Nullable {
				l.Nulls.Plain++
			}
		}
		return l, nil
	}
	return l, def.clusteredNulls(l, clust)
}

// keyPart is one field of an index's key: a key part the catalog names, or a column of the
// table InnoDB keys the index by that the catalog does not show (hidden).
type keyPart struct {
	ic     catalog.IndexColumn
	hidden string
}

func (kp keyPart) name() string {
	if kp.hidden != "" {
		return kp.hidden
	}
	return kp.ic.Name
}

// keyParts is index's key as InnoDB stores it: the catalog's key parts, with the fields
// InnoDB's dictionary lists among them that the catalog does not (MariaDB appends a
// system-versioned table's row_end to its primary and unique keys, and STATISTICS does not
// show it: read without it, every node pointer's child page number was taken from the
// row_end's bytes). A secondary index's fields that are the clustered index's (clust: a
// dictionary that lists the appended primary key) are left to Build, which appends them.
func (def TableDef) keyParts(index, clust *catalog.Index) ([]keyPart, error) {
	parts := make([]keyPart, 0, len(index.Columns)+1)
	stored, ok := def.IndexFields[index.Name]
	functional := false
	for _, ic := range index.Columns {
		functional = functional || ic.Column == nil
	}
	// A functional key part (MySQL) is a hidden virtual column the dictionary names
	// (!hidden!...): field says it cannot be read, in the catalog's words.
	if !ok || len(stored) == 0 || functional {
		for _, ic := range index.Columns {
			parts = append(parts, keyPart{ic: ic})
		}
		return parts, nil
	}
	inClust := map[string]bool{}
	if clust != nil {
		for _, ic := range clust.Columns {
			inClust[strings.ToLower(ic.Name)] = true
		}
	}
	j := 0
	for _, name := range stored {
		switch {
		case j < len(index.Columns) && strings.EqualFold(index.Columns[j].Name, name):
			parts = append(parts, keyPart{ic: index.Columns[j]})
			j++
		case j == len(index.Columns) && inClust[strings.ToLower(name)]:
			// the appended primary key, where the dictionary lists it
		default:
			if _, isColumn := def.Stored[name]; !isColumn {
				return nil, unsupported("index %s: InnoDB's dictionary lists field %s, which is no column of the table", index.Name, name)
			}
			parts = append(parts, keyPart{hidden: name})
		}
	}
	if j != len(index.Columns) {
		return nil, unsupported("index %s: InnoDB's dictionary lists its fields as %s, which do not hold the catalog's key parts in order", index.Name, strings.Join(stored, ","))
	}
	return parts, nil
}

// hiddenField is a key field the catalog does not show, read to step over it: no other
// copy shares its values (a system-versioned table's row_end differs in every copy's
// history), so it is a key's end, as the hidden row id is.
func (def TableDef) hiddenField(name string) (Field, error) {
	sc := def.Stored[name]
	n := fixedSize(sc, Charset{Name: "binary", MinLen: 1, MaxLen: 1}, def.Redundant)
	if n < 1 || n > 8 || sc.MType == mtypeMySQL || sc.MType == mtypeChar {
		return Field{}, unsupported("key field %s the catalog does not show: type %d of %d bytes", name, sc.MType, sc.Len)
	}
	return Field{Name: name, Type: keys.Type{Kind: keys.RowID}, FixedLen: n, Unsigned: true, Nullable: sc.Nullable()}, nil
}

// clusteredNulls counts the null bitmap of the clustered index's records: every nullable
// stored column has a bit, as the table was when each record was written.
func (def TableDef) clusteredNulls(l *Layout, clust *catalog.Index) error {
	if def.Redundant {
		return nil // REDUNDANT records have no null bitmap: each field's offset says NULL
	}
	physical := def.Physical
	if physical == nil {
		inKey := map[string]bool{}
		for _, ic := range clust.Columns {
			if ic.SubPart == 0 {
				inKey[ic.Name] = true
			}
		}
		for _, f := range l.Fields {
			if f.Type.Kind == keys.RowID {
				inKey[f.Name] = true // a hidden key field (row_end) is no column after the key
			}
		}
		for _, name := range def.Order {
			c := def.Stored[name]
			if !c.Virtual() && !inKey[name] {
				physical = append(physical, PhysicalColumn{Nullable: c.Nullable()})
			}
		}
	}
	// Fields before the columns: the key, DB_TRX_ID and DB_ROLL_PTR, none nullable.
	lead := len(l.Fields) + 2
	l.Nulls.ByFieldCount = make([]int, lead+len(physical)+1)
	for i, c := range physical {
		n := l.Nulls.ByFieldCount[lead+i]
		if c.Nullable {
			n++
		}
		l.Nulls.ByFieldCount[lead+i+1] = n
	}
	switch {
	case def.Versions > 0:
		l.Nulls.ByVersion = make([]int, def.Versions+1)
		for v := range l.Nulls.ByVersion {
			for _, c := range physical {
				if c.Nullable && c.Added <= v && (c.Dropped == 0 || c.Dropped > v) {
					l.Nulls.ByVersion[v]++
				}
			}
		}
		l.Nulls.Plain = l.Nulls.ByVersion[0]
		l.Nulls.ByFieldCount = nil
	case def.CoreFields > 0:
		if def.CoreFields < lead || def.CoreFields >= len(l.Nulls.ByFieldCount) {
			return unsupported("instant ALTER metadata names %d core fields of %d", def.CoreFields, len(l.Nulls.ByFieldCount)-1)
		}
		l.Nulls.CoreFields = def.CoreFields
		l.Nulls.Plain = l.Nulls.ByFieldCount[def.CoreFields]
	default:
		l.Nulls.Plain = l.Nulls.ByFieldCount[len(l.Nulls.ByFieldCount)-1]
		l.Nulls.ByFieldCount = nil
	}
	return nil
}

// field describes one key part as stored.
func (def TableDef) field(ic catalog.IndexColumn) (Field, error) {
	col := ic.Column
	if col == nil {
		return Field{}, unsupported("a functional key part")
	}
	sc, ok := def.Stored[col.Name]
	if !ok {
		return Field{}, unsupported("column %s is not in InnoDB's dictionary", col.Name)
	}
	f := Field{
		Name:     col.Name,
		Nullable: sc.Nullable(),
		Unsigned: sc.PRType&prtypeUnsigned != 0,
		Big:      sc.Len > 255 || sc.MType == mtypeBlob || sc.MType == mtypeGeometry || sc.MType == mtypeVarPoint,
	}
	dataType := strings.ToLower(col.DataType)
	colType := strings.ToLower(col.ColumnType)
	args := sizeArgs.FindStringSubmatch(colType)
	arg := func(i int) int {
		if args == nil || args[i] == "" {
			return 0
		}
		n, _ := strconv.Atoi(args[i])
		return n
	}
	if strings.Contains(colType, "mariadb-5.3") {
		return Field{}, unsupported("column %s has MariaDB 5.3's temporal format (ALTER TABLE ... FORCE converts it)", col.Name)
	}
	t := &f.Type
	switch {
	case intSizes[dataType] > 0:
		t.Kind, t.Size = keys.Int, intSizes[dataType]
		if f.Unsigned {
			t.Kind = keys.Uint
		}
		if sc.MType != mtypeInt || sc.Len != t.Size {
			return Field{}, unsupported("column %s: %s stored as type %d of %d bytes", col.Name, dataType, sc.MType, sc.Len)
		}
	case dataType == "decimal" || dataType == "numeric":
		t.Kind, t.Precision, t.Scale = keys.Decimal, arg(1), arg(2)
		if sc.MType != mtypeFixBinary || sc.Len != DecimalBytes(t.Precision, t.Scale) {
			return Field{}, unsupported("column %s: %s in the format before MySQL 5.0.3", col.Name, colType)
		}
	case sc.MType == mtypeFloat:
		t.Kind = keys.Float
	case sc.MType == mtypeDouble:
		t.Kind = keys.Double
	case dataType == "date":
		t.Kind = keys.Date
	case dataType == "datetime", dataType == "timestamp", dataType == "time":
		t.Kind = map[string]keys.Kind{"datetime": keys.Datetime, "timestamp": keys.Timestamp, "time": keys.Time}[dataType]
		t.Scale = arg(1)
		if sc.MType != mtypeFixBinary {
			return Field{}, unsupported("column %s: %s in the format before MySQL 5.6.4 (ALTER TABLE ... FORCE converts it)", col.Name, dataType)
		}
	case dataType == "year":
		t.Kind = keys.Year
	case dataType == "enum":
		t.Kind = keys.Enum
	case dataType == "set":
		t.Kind, t.Size = keys.Set, sc.Len
	case dataType == "bit":
		t.Kind, t.Size = keys.Bit, arg(1)
	case dataType == "char":
		t.Kind = keys.Char
	case textTypes[dataType]:
		t.Kind = keys.Varchar
	case dataType == "binary":
		t.Kind, t.Size = keys.Binary, sc.Len
	case blobTypes[dataType]:
		t.Kind = keys.Varbinary
	default:
		return Field{}, unsupported("column %s: type %s", col.Name, colType)
	}
	if t.Kind.IsString() {
		if t.Kind == keys.Char || t.Kind == keys.Varchar {
			t.Collation = col.Collation
			cs, ok := def.Charsets[col.Collation]
			if !ok {
				return Field{}, unsupported("column %s: unknown collation %q", col.Name, col.Collation)
			}
			f.Charset = cs
		} else {
			f.Charset = Charset{Name: "binary", MinLen: 1, MaxLen: 1}
		}
		t.Prefix = ic.SubPart
	}
	f.FixedLen = fixedSize(sc, f.Charset, def.Redundant)
	if ic.SubPart > 0 {
		if prefix := ic.SubPart * max(f.Charset.MaxLen, 1); f.FixedLen > prefix {
			f.FixedLen = prefix
		}
	}
	if f.FixedLen > maxFixedColumn {
		f.FixedLen = 0
	}
	return f, nil
}

// fixedSize is dict_col_get_fixed_size: the bytes a column always takes, 0 when its records
// store its length. COMPACT stores CHAR in a charset of varying character sizes with a
// length (and may strip its padding); REDUNDANT pads it to its full size.
func fixedSize(c StoredColumn, cs Charset, redundant bool) int {
	switch c.MType {
	case mtypeChar, mtypeFixBinary, mtypeInt, mtypeFloat, mtypeDouble, mtypeSys, mtypePoint:
		return c.Len
	case mtypeMySQL:
		if !redundant && cs.MinLen != cs.MaxLen {
			return 0
		}
		return c.Len
	}
	return 0
}
