package pagekey

import "fmt"

// ZipLogEntries inflates page n of a compressed tablespace and says how many records its
// modification log gave back: tests check that the pages they read carry a log.
func ZipLogEntries(s *Source, n uint32) (int, error) {
	if s.zipSize == 0 {
		return 0, fmt.Errorf("the file's pages are not compressed")
	}
	raw := make([]byte, s.zipSize)
	if _, err := s.r.ReadAt(raw, int64(n)*int64(s.zipSize)); err != nil {
		return 0, err
	}
	return s.logical(raw, make(Page, s.PageSize))
}

// StoredTable says what the dictionary read of table id: its row format, its instant
// columns and row versions, and its indexes' fields (nil when it has no such table).
func (d *Dictionary) StoredTable(id uint64) (format string, instant, versions int, indexFields map[string][]string, ok bool) {
	st := d.tables[id]
	if st == nil {
		return "", 0, 0, nil, false
	}
	return st.rowFormat, st.instantCols, st.versions, st.indexFields, true
}

// StoredColumns gives table id's stored columns by name and the stored ones' order.
func (d *Dictionary) StoredColumns(id uint64) (map[string]StoredColumn, []string) {
	st := d.tables[id]
	if st == nil {
		return nil, nil
	}
	return st.columns, st.order
}
