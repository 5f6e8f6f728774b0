package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// A schema innowarm bench creates carries a mark, so that later runs (and `bench cleanup`)
// know they may drop it: a schema comment where the server has them (MariaDB 10.5+), a
// marker table elsewhere. innowarm never drops a schema without the mark, nor a table it
// did not create.
const (
	ownerComment = "created by innowarm bench, which may drop it"
	ownerTable   = "innowarm_bench_owner"
)

// SchemaState is what the server says about a schema.
type SchemaState struct {
	Exists bool
	Owned  bool // carries innowarm bench's mark
}

// schemas checks and changes schemas on behalf of a run.
type schemas struct {
	db  *sql.DB
	srv flavor.Server
	// markerTable forces the marker table even where schema comments exist (tests).
	markerTable bool
}

func newSchemas(c *connection.Conn) *schemas { return &schemas{db: c.DB, srv: c.Server} }

func (s *schemas) comments() bool { return s.srv.SchemaComments() && !s.markerTable }

// State reads whether name exists and whether innowarm bench created it.
func (s *schemas) State(ctx context.Context, name string) (SchemaState, error) {
	var st SchemaState
	q := "SELECT SCHEMA_NAME, '' FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"
	if s.srv.SchemaComments() {
		q = "SELECT SCHEMA_NAME, SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"
	}
	var got, comment string
	err := s.db.QueryRowContext(ctx, q, name).Scan(&got, &comment)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("look up schema %s: %w", sqltext.Ident(name), err)
	}
	st.Exists = true
	if comment == ownerComment {
		st.Owned = true
		return st, nil
	}
	has, err := s.hasTable(ctx, name, ownerTable)
	if err != nil {
		return st, err
	}
	st.Owned = has
	return st, nil
}

func (s *schemas) hasTable(ctx context.Context, schema, table string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look up table %s.%s: %w", sqltext.Ident(schema), sqltext.Ident(table), err)
	}
	return n > 0, nil
}

// CreateOwned creates name with innowarm's mark.
func (s *schemas) CreateOwned(ctx context.Context, sess *connection.Session, name string) error {
	q := "CREATE SCHEMA " + sqltext.Ident(name)
	if s.comments() {
		q += " COMMENT " + sqltext.String(ownerComment)
	}
	if _, err := sess.Exec(ctx, q); err != nil {
		return fmt.Errorf("create schema %s: %w", sqltext.Ident(name), err)
	}
	if !s.comments() {
		mark := "CREATE TABLE " + sqltext.Ident(name) + "." + sqltext.Ident(ownerTable) + " (note VARCHAR(64)) COMMENT " + sqltext.String(ownerComment)
		if _, err := sess.Exec(ctx, mark); err != nil {
			return fmt.Errorf("mark schema %s as innowarm's: %w", sqltext.Ident(name), err)
		}
	}
	return nil
}

// DropOwned drops name after checking, once more, that it carries innowarm's mark.
func (s *schemas) DropOwned(ctx context.Context, sess *connection.Session, name string) error {
	st, err := s.State(ctx, name)
	if err != nil {
		return err
	}
	if !st.Exists {
		return nil
	}
	if !st.Owned {
		return fmt.Errorf("schema %s no longer carries innowarm's mark: not dropping it", sqltext.Ident(name))
	}
	if _, err := sess.Exec(ctx, "DROP SCHEMA IF EXISTS "+sqltext.Ident(name)); err != nil {
		return fmt.Errorf("drop schema %s: %w", sqltext.Ident(name), err)
	}
	return nil
}

// Cleanup drops a schema innowarm bench created (`bench cleanup`), refusing any other.
func Cleanup(ctx context.Context, c *connection.Conn, name string) (dropped bool, err error) {
	s := newSchemas(c)
	st, err := s.State(ctx, name)
	if err != nil {
		return false, err
	}
	if !st.Exists {
		return false, nil
	}
	if !st.Owned {
		return false, usagef("schema %s was not created by innowarm bench: innowarm drops only its own schemas (drop it yourself if you mean to)", sqltext.Ident(name))
	}
	sess, err := c.NewSession(ctx)
	if err != nil {
		return false, err
	}
	defer sess.Close()
	if err := s.DropOwned(ctx, sess, name); err != nil {
		return false, err
	}
	return true, nil
}
