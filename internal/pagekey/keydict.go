package pagekey

import (
	"context"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
)

// KeyDictionary is what reading pages by key needs of the server's dictionary for a
// catalog's tables: the tablespaces' files, their indexes' roots, the columns' stored types.
type KeyDictionary struct {
	Files map[uint32]string
	Roots map[uint32]map[string]IndexRoot
	Dict  *Dictionary
}

// ReadKeyDictionary reads it for every table part of cat whose tablespace is known, its
// three reads at once. Through cats it is read once per cached catalog load, for the whole
// load (catalog.Cache.Derived): repeated captures and follow's rounds would otherwise read
// it each time, and on MySQL INNODB_TABLES, INDEXES and COLUMNS build every table's InnoDB
// definition (5-6 s each at 20,000 tables). A nil cats reads it every time.
func ReadKeyDictionary(ctx context.Context, conn *connection.Conn, cats *catalog.Cache, cat *catalog.Catalog) (KeyDictionary, error) {
	v, err := cats.Derived("pagekey.KeyDictionary", cat, func(cat *catalog.Catalog) (any, error) {
		spaces := cat.KnownSpaces()
		var d KeyDictionary
		err := together(
			func() (err error) { d.Files, err = catalog.TablespaceFiles(ctx, conn, spaces); return err },
			func() (err error) { d.Roots, err = IndexRoots(ctx, conn, cat, spaces); return err },
			func() (err error) { d.Dict, err = LoadDictionary(ctx, conn, cat); return err })
		return d, err
	})
	if err != nil {
		return KeyDictionary{}, err
	}
	return v.(KeyDictionary), nil
}
