package pagekey

import (
	"context"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/ibd"
)

// IndexRoot is an index's id and root page in its tablespace.
type IndexRoot = catalog.IndexRoot

// IndexRoots reads the id and root page of every index in the given tablespaces, by space
// and index name: from the server's dictionary view, and, for the partitions of cat's tables
// that the view does not list (MySQL 8+ lists no index of a partition in INNODB_INDEXES),
// from the partitioned table's serialized dictionary (SDI) in its partitions' files, which
// needs innowarm on the database host. Partitions whose roots neither gives are left out:
// their keys are not read, and callers say so.
//
// The view's answer is kept with cat's load (catalog.KnownRoots): a space read once for the
// load is not read again.
func IndexRoots(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, spaces map[uint32]bool) (map[uint32]map[string]IndexRoot, error) {
	return indexRoots(ctx, conn, cat, spaces, nil)
}

// indexRoots is IndexRoots with its reads in share (connection.Share).
func indexRoots(ctx context.Context, conn *connection.Conn, cat *catalog.Catalog, spaces map[uint32]bool, share *connection.Share) (map[uint32]map[string]IndexRoot, error) {
	if len(spaces) == 0 {
		return map[uint32]map[string]IndexRoot{}, nil
	}
	out, missing := cat.KnownRoots(spaces)
	if len(missing) > 0 {
		var read map[uint32]map[string]IndexRoot
		err := share.Run(ctx, func() (err error) { read, err = readIndexRoots(ctx, conn, missing); return err })
		if err != nil {
			return nil, err
		}
		cat.RememberRoots(missing, false, read)
		for space, byName := range read {
			out[space] = byName
		}
	}
	if cat == nil {
		return out, nil
	}
	// Partitioned tables with a wanted partition the view does not list.
	var unlisted []*catalog.Table
	all := map[uint32]bool{}
	for _, t := range cat.Tables {
		missing := false
		for _, p := range t.Parts {
			if p.Name != "" && p.SpaceKnown && spaces[p.Space] && len(out[p.Space]) == 0 {
				missing = true
			}
		}
		if !missing {
			continue
		}
		unlisted = append(unlisted, t)
		for _, p := range t.Parts {
			if p.SpaceKnown {
				all[p.Space] = true
			}
		}
	}
	if len(unlisted) == 0 {
		return out, nil
	}
	var files map[uint32]string
	err := share.Run(ctx, func() (err error) { files, err = catalog.TablespaceFiles(ctx, conn, all); return err })
	if err != nil {
		return out, nil //nolint:nilerr // the view's roots stand; the partitions stay without keys
	}
	for _, t := range unlisted {
		// The table's SDI is in one of its partitions' files (most often the first's by space id).
		for _, p := range t.Parts {
			path := files[p.Space]
			if !p.SpaceKnown || path == "" {
				continue
			}
			roots, found := sdiPartitionRoots(path, conn.Server.PageSize, t.Name)
			if !found {
				continue
			}
			for space, byName := range roots {
				if spaces[space] && len(out[space]) == 0 {
					out[space] = byName
				}
			}
			break
		}
	}
	return out, nil
}

// readIndexRoots reads the dictionary view's roots of the given tablespaces.
func readIndexRoots(ctx context.Context, conn *connection.Conn, spaces []uint32) (map[uint32]map[string]IndexRoot, error) {
	ids := make([]string, 0, len(spaces))
	for _, s := range spaces {
		ids = append(ids, strconv.FormatUint(uint64(s), 10))
	}
	sess, err := conn.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	return catalog.ReadIndexRoots(ctx, sess, conn.Server, " WHERE SPACE IN ("+strings.Join(ids, ",")+")")
}

// sdiPartitionRoots reads, from a tablespace file's SDI, the root page of every index of
// every partition (and subpartition) of the partitioned table named table, by space; found
// says whether the file's SDI holds that table. ibd reads the SDI, following it off its
// page where it is too long for one (many partitions, long comments).
func sdiPartitionRoots(path string, pageSize int, table string) (map[uint32]map[string]IndexRoot, bool) {
	roots, found, err := ibd.PartitionRoots(path, pageSize, table)
	if err != nil || !found {
		return nil, false
	}
	out := make(map[uint32]map[string]IndexRoot, len(roots))
	for space, byName := range roots {
		out[space] = make(map[string]IndexRoot, len(byName))
		for name, ix := range byName {
			out[space][name] = IndexRoot{ID: ix.ID, Root: ix.Root}
		}
	}
	return out, true
}
