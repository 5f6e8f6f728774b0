package catalog

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
)

// filesMayBeReadable says whether the server's datadir can be read here: innowarm may run
// on the database host, whose tablespace files the load reads (sizesFromFiles). A datadir
// of the same path on another host passes too; the files themselves decide.
func filesMayBeReadable(srv flavor.Server) bool {
	return srv.Datadir != "" && unix.Access(srv.Datadir, unix.R_OK|unix.X_OK) == nil
}

// TablespaceFiles maps the given tablespaces to their data files (absolute paths; relative
// ones are under the datadir), from the server's dictionary. Spaces without a file listed
// are left out.
func TablespaceFiles(ctx context.Context, conn *connection.Conn, spaces map[uint32]bool) (map[uint32]string, error) {
	srv := conn.Server
	rows, err := conn.DB.QueryContext(ctx, srv.TablespaceFilesQuery())
	if err != nil {
		return nil, fmt.Errorf("read the tablespace files: %w", err)
	}
	defer rows.Close()
	out := map[uint32]string{}
	for rows.Next() {
		var space uint32
		var path string
		if err := rows.Scan(&space, &path); err != nil {
			return nil, fmt.Errorf("read the tablespace files: %w", err)
		}
		if spaces[space] {
			if !filepath.IsAbs(path) {
				path = filepath.Join(srv.Datadir, path)
			}
			out[space] = path
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the tablespace files: %w", err)
	}
	return out, nil
}
