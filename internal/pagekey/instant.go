package pagekey

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/ibd"
)

// After an instant ADD or DROP COLUMN the clustered index's records keep the null bitmap of
// the table as it was when each was written, and neither server's information_schema says
// what it was: MariaDB keeps it in the clustered index (PAGE_INSTANT in the root page, and a
// hidden metadata record heading the leftmost leaf page whose BLOB maps the stored fields
// after columns were dropped or reordered), MySQL in the tablespace's serialized dictionary
// (SDI: each column's physical_pos, version_added and version_dropped).

// leftmostLeaf descends from root through each level's first node pointer.
func leftmostLeaf(src *Source, l *Layout, root uint32) (Page, error) {
	p, err := src.Page(root)
	if err != nil {
		return nil, err
	}
	for level := p.Level(); level > 0; level-- {
		var child uint32
		found := false
		err := p.walk(func(o int) (bool, error) {
			r, _, err := l.decode(p, o)
			child, found = r.Child, err == nil
			return false, err
		})
		if err != nil || !found {
			return nil, fmt.Errorf("descend from page %d: %w", p.Number(), err)
		}
		if p, err = src.Page(child); err != nil {
			return nil, err
		}
		if !p.IsIndex() || p.Level() != level-1 || p.Prev() != NoPage {
			return nil, corrupt(p, "is not the leftmost page of level %d", level-1)
		}
	}
	return p, nil
}

// mariadbInstant reads MariaDB's instant ALTER history from the clustered index.
func mariadbInstant(def *TableDef, src *Source, root uint32) error {
	rp, err := src.Page(root)
	if err != nil {
		return err
	}
	core := rp.InstantCoreFields()
	if core == 0 {
		return nil
	}
	clust := def.Table.Clustered()
	// With the fields the dictionary lists today and the core count, the node pointers
	// and the metadata record decode (the metadata record's bitmap counts today's fields).
	plain := *def
	plain.CoreFields = core
	l, err := Build(plain, clust)
	if err != nil {
		return err
	}
	leaf, err := leftmostLeaf(src, l, root)
	if err != nil {
		return unsupported("instant ALTER metadata: %v", err)
	}
	meta := 0
	_ = leaf.walk(func(o int) (bool, error) {
		if leaf[o-5]&infoMinRec != 0 && leaf[o-3]&7 == statusInstant {
			meta = o
		}
		return false, nil
	})
	if meta == 0 {
		return nil // PAGE_INSTANT left from an ALTER that did not commit, or an emptied table
	}
	def.CoreFields = core
	if leaf[meta-5]&infoDeleted == 0 {
		return nil // instant ADD COLUMN only: the columns are stored in today's order
	}
	// Columns were dropped or reordered: the metadata record's BLOB, after DB_ROLL_PTR, maps
	// the stored fields (dict_table_t::deserialise_columns).
	ref, err := metadataBlobRef(leaf, meta, l)
	if err != nil {
		return err
	}
	blob, err := readBlob(src, ref, 10, 8)
	if err != nil {
		return unsupported("instant ALTER metadata BLOB: %v", err)
	}
	if len(blob) < 4 {
		return unsupported("instant ALTER metadata BLOB of %d bytes", len(blob))
	}
	n := int(binary.BigEndian.Uint32(blob))
	if len(blob) < 4+2*n {
		return unsupported("instant ALTER metadata BLOB of %d bytes for %d fields", len(blob), n)
	}
	def.Physical = make([]PhysicalColumn, n)
	for i := range def.Physical {
		e := binary.BigEndian.Uint16(blob[4+2*i:])
		const dropped, notNull, ind = 1 << 15, 1 << 14, 1<<10 - 1
		if e&dropped != 0 {
			def.Physical[i] = PhysicalColumn{Nullable: e&notNull == 0}
			continue
		}
		if int(e&ind) >= len(def.Order) {
			return unsupported("instant ALTER metadata names column %d of %d", e&ind, len(def.Order))
		}
		def.Physical[i] = PhysicalColumn{Nullable: def.Stored[def.Order[e&ind]].Nullable()}
	}
	return nil
}

// metadataBlobRef finds the 20-byte reference to the metadata BLOB in MariaDB's metadata
// record: the primary key, DB_TRX_ID and DB_ROLL_PTR come before it. The record's primary
// key fields are empty (zero bytes, or no bytes for a variable-length field), so the
// reference sits at a fixed place; its own null bitmap, which would locate the lengths,
// counts the fields the BLOB itself describes.
func metadataBlobRef(p Page, o int, l *Layout) ([]byte, error) {
	off := o + 6 + 7
	for _, f := range l.Fields {
		off += f.FixedLen
	}
	if off+20 > len(p) {
		return nil, corrupt(p, "metadata record's BLOB reference runs out of the page")
	}
	ref := p[off : off+20]
	if space := binary.BigEndian.Uint32(ref); space != binary.BigEndian.Uint32(p[34:]) || binary.BigEndian.Uint32(ref[8:]) != 38 {
		return nil, unsupported("the instant ALTER metadata record holds no BLOB reference where its primary key ends (space %d, offset %d)", space, binary.BigEndian.Uint32(ref[8:]))
	}
	return ref, nil
}

// readBlob follows an off-page column reference (space, page, offset, length) through its
// chain of BLOB pages of type pageType: each holds a part length and the next page number
// at the reference's offset, then hdr - 8 more header bytes and the data.
func readBlob(src *Source, ref []byte, pageType uint16, hdr int) ([]byte, error) {
	page := binary.BigEndian.Uint32(ref[4:])
	off := int(binary.BigEndian.Uint32(ref[8:]))
	total := binary.BigEndian.Uint64(ref[12:]) & (1<<32 - 1)
	var out []byte
	for steps := 0; page != NoPage && uint64(len(out)) < total; steps++ {
		if steps > 1<<16 {
			return nil, fmt.Errorf("BLOB chain does not end")
		}
		p, err := src.Page(page)
		if err != nil {
			return nil, err
		}
		if p.Type() != pageType {
			return nil, corrupt(p, "type %d, not a BLOB page (%d)", p.Type(), pageType)
		}
		part := int(binary.BigEndian.Uint32(p[off:]))
		if off+hdr+part > len(p) {
			return nil, corrupt(p, "BLOB part of %d bytes", part)
		}
		out = append(out, p[off+hdr:off+hdr+part]...)
		page = binary.BigEndian.Uint32(p[off+4:])
		off = 38 // later pages start their header at FIL_PAGE_DATA
	}
	if uint64(len(out)) != total {
		return nil, fmt.Errorf("BLOB of %d bytes, the reference says %d", len(out), total)
	}
	return out, nil
}

// sdiColumn is a column as the SDI's JSON has it.
type sdiColumn struct {
	Name        string `json:"name"`
	IsNullable  bool   `json:"is_nullable"`
	IsVirtual   bool   `json:"is_virtual"`
	Hidden      int    `json:"hidden"`
	SEPrivate   string `json:"se_private_data"`
	OrdinalPosn int    `json:"ordinal_position"`
}

type sdiTable struct {
	DDObjectType string `json:"dd_object_type"`
	DDObject     struct {
		Name    string      `json:"name"`
		Columns []sdiColumn `json:"columns"`
	} `json:"dd_object"`
}

// sdiTables reads every table object of the file's SDI.
func sdiTables(src *Source) ([]sdiTable, error) {
	raws, err := sdiObjects(src)
	if err != nil {
		return nil, err
	}
	out := make([]sdiTable, 0, len(raws))
	for _, raw := range raws {
		var t sdiTable
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("SDI record: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// sdiObjects reads the JSON of every table object of the file's SDI (MySQL's serialized
// dictionary), with ibd's reader, which follows a JSON too long for its page into its
// FIL_PAGE_SDI_BLOB pages.
func sdiObjects(src *Source) ([][]byte, error) {
	raws, err := ibd.SDITablesAt(src.r, int64(src.Pages)*int64(src.physical()), src.PageSize)
	if err != nil {
		return nil, fmt.Errorf("read the SDI: %w", err)
	}
	return raws, nil
}

// mysqlPhysicalColumns reads a row-versioned table's stored columns from its file's SDI:
// every column ever stored (dropped ones too) in physical order, with the versions that
// added and dropped it.
func mysqlPhysicalColumns(src *Source, t *catalog.Table) ([]PhysicalColumn, error) {
	tables, err := sdiTables(src)
	if err != nil {
		return nil, unsupported("row versions, and the file's SDI does not read: %v", err)
	}
	var cols []sdiColumn
	for _, st := range tables {
		if st.DDObjectType == "Table" && st.DDObject.Name == t.Name {
			cols = st.DDObject.Columns
		}
	}
	if cols == nil {
		return nil, unsupported("row versions, and the file's SDI has no table %s", t.Name)
	}
	inKey := map[string]bool{}
	if c := t.Clustered(); c != nil {
		for _, ic := range c.Columns {
			if ic.SubPart == 0 {
				inKey[ic.Name] = true
			}
		}
	}
	type phys struct {
		pos int
		c   PhysicalColumn
	}
	var ps []phys
	live := map[string]bool{}
	for _, c := range cols {
		priv := parsePrivate(c.SEPrivate)
		pos, ok := priv["physical_pos"]
		if c.IsVirtual || !ok || inKey[c.Name] || c.Name == "DB_ROW_ID" || c.Name == "DB_TRX_ID" || c.Name == "DB_ROLL_PTR" {
			continue
		}
		ps = append(ps, phys{pos, PhysicalColumn{Nullable: c.IsNullable, Added: priv["version_added"], Dropped: priv["version_dropped"]}})
		if priv["version_dropped"] == 0 {
			live[c.Name] = true
		}
	}
	for _, c := range t.Columns {
		stored := !c.Generated || !strings.Contains(strings.ToLower(c.ColumnType), "virtual")
		if stored && !inKey[c.Name] && !live[c.Name] {
			return nil, unsupported("row versions, and the file's SDI does not list column %s yet (written before the last ALTER)", c.Name)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].pos < ps[j].pos })
	out := make([]PhysicalColumn, len(ps))
	for i, p := range ps {
		out[i] = p.c
	}
	return out, nil
}

// parsePrivate reads se_private_data's "key=value;" pairs with numeric values.
func parsePrivate(s string) map[string]int {
	out := map[string]int{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if n, err := strconv.Atoi(v); ok && err == nil {
			out[k] = n
		}
	}
	return out
}
