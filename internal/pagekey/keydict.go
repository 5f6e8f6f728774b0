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
// definition (5-6 s each at 20,000 tables). A nil cats reads it every time. Where the
// server refuses more connections (max_connections, max_user_connections), its reads run
// one after another instead of failing (ReadKeyDictionaryIn).
func ReadKeyDictionary(ctx context.Context, conn *connection.Conn, cats *catalog.Cache, cat *catalog.Catalog) (KeyDictionary, error) {
	return ReadKeyDictionaryIn(ctx, conn, cats, cat, nil)
}

// ReadKeyDictionaryIn is ReadKeyDictionary with each of its reads, a connection each, run
// in share beside the caller's own reads there (a capture's page list): where the server
// refuses more connections, a read waits for another of share's to end rather than fail,
// so that an account allowed two connections (MAX_USER_CONNECTIONS 2) reads the whole
// dictionary beside a page list. A nil share is one of its own.
func ReadKeyDictionaryIn(ctx context.Context, conn *connection.Conn, cats *catalog.Cache, cat *catalog.Catalog, share *connection.Share) (KeyDictionary, error) {
	if share == nil {
		share = &connection.Share{}
	}
	v, err := cats.Derived("pagekey.KeyDictionary", cat, func(cat *catalog.Catalog) (any, error) {
		spaces := cat.KnownSpaces()
		var d KeyDictionary
		err := together(
			func() error {
				return share.Run(ctx, func() (err error) { d.Files, err = catalog.TablespaceFiles(ctx, conn, spaces); return err })
			},
			func() (err error) { d.Roots, err = indexRoots(ctx, conn, cat, spaces, share); return err },
			func() (err error) { d.Dict, err = loadDictionary(ctx, conn, cat, share); return err })
		return d, err
	})
	if err != nil {
		return KeyDictionary{}, err
	}
	return v.(KeyDictionary), nil
}
