package cli

import (
	"strings"

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

func (s *selectionFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&s.tables, "tables", nil, "tables to include, as schema.table globs, comma-separated or repeated (e.g. 'shop.order*'; a name quoted with backticks, as innowarm prints it, is the name itself)")
	cmd.Flags().StringSliceVar(&s.exclude, "exclude", nil, "tables to leave out, as schema.table or table globs")
	cmd.Flags().BoolVarP(&s.all, "all-databases", "A", false, "every schema except mysql, sys, information_schema, performance_schema")
}

// filter builds the catalog filter; -D becomes a schema list and is removed from the
// connection options, since it is not one database to connect to.
func (s *selectionFlags) filter(opts *connection.Options) (catalog.Filter, error) {
	var f catalog.Filter
	for _, d := range strings.Split(opts.Database, ",") {
		if d = strings.TrimSpace(d); d != "" {
			f.Schemas = append(f.Schemas, d)
		}
	}
	opts.Database = ""
	f.All = s.all
	for _, raw := range s.tables {
		p, err := catalog.ParsePattern(raw)
		if err != nil {
			return f, usagef("--tables: %v", err)
		}
		f.Tables = append(f.Tables, p)
	}
	for _, raw := range s.exclude {
		p, err := catalog.ParsePattern(raw)
		if err != nil {
			return f, usagef("--exclude: %v", err)
		}
		f.Exclude = append(f.Exclude, p)
	}
	return f, nil
}
