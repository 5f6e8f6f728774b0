package cli

import (
	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
)

// selectionFlags choose tables: -D (from the connection flags), --tables, --exclude,
// --all-databases.
type selectionFlags struct {
	tables  []string
	exclude []string
	all     bool
}

// bind adds the flags. --tables and --exclude are string arrays, each value split by
// catalog.ParsePatterns: pflag's string slices read a value as CSV, which refused a name
// with a '"' even in backticks and split a quoted name at its comma.
func (s *selectionFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&s.tables, "tables", nil, "tables to include, as schema.table globs, comma-separated or repeated (e.g. 'shop.order*'; a name in backticks, as innowarm prints it, is the name itself, commas and all); with -D, tables of the -D schemas only, as mysqldump's db tables: a pattern without a schema is in each, one naming another schema is refused")
	cmd.Flags().StringArrayVar(&s.exclude, "exclude", nil, "tables to leave out, as schema.table or table globs, comma-separated or repeated")
	cmd.Flags().BoolVarP(&s.all, "all-databases", "A", false, "every schema except mysql, sys, information_schema, performance_schema")
}

// filter builds the catalog filter; -D becomes a schema list and is removed from the
// connection options, since it is not one database to connect to.
func (s *selectionFlags) filter(opts *connection.Options) (catalog.Filter, error) {
	var f catalog.Filter
	f.Schemas = catalog.SchemaNames(opts.Database)
	// -D given on the command line bounds --tables; a database= of an option file is only
	// the schema of the patterns without one (Within). Options built by hand (follow's own
	// -D) have no sources: theirs is a flag too.
	src, fromFile := opts.Sources["database"]
	f.Within = !fromFile || src == "flag"
	opts.Database = ""
	f.All = s.all
	for _, raw := range s.tables {
		ps, err := catalog.ParsePatterns(raw)
		if err != nil {
			return f, usagef("--tables: %v", err)
		}
		f.Tables = append(f.Tables, ps...)
	}
	for _, raw := range s.exclude {
		ps, err := catalog.ParsePatterns(raw)
		if err != nil {
			return f, usagef("--exclude: %v", err)
		}
		f.Exclude = append(f.Exclude, ps...)
	}
	return f, nil
}
