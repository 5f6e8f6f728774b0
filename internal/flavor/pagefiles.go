package flavor

// TablespaceFilesQuery lists every file-per-table tablespace's id and data file path (relative
// paths are under the datadir): MariaDB's INNODB_SYS_TABLESPACES has the file name (10.5+),
// MySQL keeps paths in INNODB_DATAFILES (INNODB_SYS_DATAFILES before 8.0).
func (s Server) TablespaceFilesQuery() string {
	if s.IsMariaDB() {
		return "SELECT SPACE, FILENAME FROM information_schema.INNODB_SYS_TABLESPACES"
	}
	return "SELECT SPACE, PATH FROM " + s.dictTable("INNODB_SYS_DATAFILES", "INNODB_DATAFILES")
}

// IndexRootsQuery lists every index's id, name, tablespace, root page and table id from
// the server's dictionary (the same columns on both: INNODB_SYS_INDEXES and INNODB_INDEXES).
func (s Server) IndexRootsQuery() string {
	return "SELECT INDEX_ID, NAME, SPACE, PAGE_NO, TABLE_ID FROM " + s.IndexesTable()
}

// FreeTargetExpr is the page cleaner's free-page target as a SQL expression:
// innodb_lru_scan_depth per buffer pool instance (MariaDB 10.5+ has one instance and no
// innodb_buffer_pool_instances variable, so the instances are counted). Below it the server
// evicts from the LRU tail in the background, so a warm that fills the pool past it has its
// own pages evicted.
func (s Server) FreeTargetExpr() string {
	return "@@innodb_lru_scan_depth * (SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_POOL_STATS)"
}

// PoolInstancesQuery lists each buffer pool instance's LRU length and old sublist length
// (MariaDB 10.5+ has one instance; MySQL has up to 64).
func (s Server) PoolInstancesQuery() string {
	return "SELECT POOL_ID, DATABASE_PAGES, OLD_DATABASE_PAGES FROM information_schema.INNODB_BUFFER_POOL_STATS ORDER BY POOL_ID"
}

// ColumnsTable lists every InnoDB column with TABLE_ID, NAME, POS, MTYPE, PRTYPE and LEN:
// how the engine stores it.
func (s Server) ColumnsTable() string { return s.dictTable("INNODB_SYS_COLUMNS", "INNODB_COLUMNS") }

// FieldsTable lists each index's key fields as InnoDB stores them (INDEX_ID, NAME, POS),
// which can hold columns STATISTICS does not show: MariaDB appends a system-versioned
// table's row_end to its primary and unique keys.
func (s Server) FieldsTable() string { return s.dictTable("INNODB_SYS_FIELDS", "INNODB_FIELDS") }

// InstantColumnsExpr is two columns of TablesTable: MySQL's INSTANT_COLS (tables upgraded
// with 8.0.12's instant ADD COLUMN) and TOTAL_ROW_VERSIONS (8.0.29's instant ADD/DROP);
// 0 where the server has neither. MariaDB's instant ALTER history is only in the clustered
// index's root page and its metadata record.
func (s Server) InstantColumnsExpr() string {
	switch {
	case s.IsMariaDB() || !s.Version.AtLeast(8, 0, 12):
		return "0, 0"
	case !s.Version.AtLeast(8, 0, 29):
		return "INSTANT_COLS, 0"
	}
	return "INSTANT_COLS, TOTAL_ROW_VERSIONS"
}
