package flavor

// LeafStatCountsLOBPages says whether mysql.innodb_index_stats' n_leaf_pages of a clustered
// index counts the off-page BLOB/TEXT pages allocated from its leaf segment: MySQL's does (a
// table of 200 rows with 40 KB bodies reports 600 leaf pages for a 1-page tree); MariaDB's
// counts the B-tree's leaves. Found live on MySQL 9.7 (the zoo's LOB table).
func (s Server) LeafStatCountsLOBPages() bool { return !s.IsMariaDB() }
