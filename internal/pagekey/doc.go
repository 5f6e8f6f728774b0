// Package pagekey reads index keys from InnoDB pages as they are in a tablespace file: the
// key of each record of a leaf or non-leaf page, each node pointer's child page, and from
// an index's non-leaf pages the key range of every page below them. Keys come out as
// portable typed values (internal/keys).
//
// What it reads: records in ROW_FORMAT=COMPACT and DYNAMIC (one format for keys) and
// REDUNDANT, on pages of 4 to 64 KiB; ROW_FORMAT=COMPRESSED pages (KEY_BLOCK_SIZE 1 to 16
// KiB, as the file's FSP flags say), which Source inflates as InnoDB's page_zip_decompress
// does, modification log applied, into the COMPACT page the records are then read from
// (both servers write one compressed format, and no instant ALTER headers in it);
// clustered indexes (the primary key, a unique NOT NULL key, or InnoDB's hidden
// DB_ROW_ID) and secondary ones (their columns, then the primary key's they do not hold
// whole); prefix key parts; after instant ADD/DROP COLUMN, MariaDB's REC_STATUS_INSTANT
// records and metadata record (the null bitmap's size from the root page's PAGE_INSTANT
// and, after columns were dropped or reordered, the metadata BLOB) and MySQL 8.0.29+'s row
// versions (from the file's serialized dictionary, SDI). Differences between the two
// servers' records are in RecordFormat; the dictionary views each reads are in
// internal/flavor.
//
// What it does not: tables upgraded with MySQL 8.0.12's instant columns (INSTANT_COLS >
// 0), MariaDB 5.3's and MySQL 5.5's temporal formats, spatial and full-text indexes,
// functional key parts; each is an ErrUnsupported with the reason. Pages are read as they
// are on disk: what the server changed since it last wrote a page is not there yet.
//
// Use (phase 2 of issue 21 descends a target's own B-tree with it):
//
//	dict, err := pagekey.LoadDictionary(ctx, conn, cat)          // once per catalog
//	src, err := pagekey.OpenSource(path, conn.Server.PageSize)   // a table part's file
//	layouts, errs := dict.Layouts(table, part, src, clusteredRoot)
//	l := layouts[indexName]                                      // nil: errs[indexName] says why
//	root, _ := src.Page(rootPage)
//	ptrs, err := l.NodePointers(root)                            // keys and child pages, in key order
//	// descend: the child whose range holds the key; compare with keys.CompareKeys where
//	// keys.Comparable says so, else on the server with keys.Literal
//	tree, err := pagekey.ReadTree(src, l, indexID, rootPage)     // every page's Span, decoded
//	n, err := pagekey.Ranges(src, l, indexID, rootPage, opts, each) // chosen pages' ranges as text
package pagekey
