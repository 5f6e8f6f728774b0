package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// kvTable prints aligned "name  value" lines.
func kvTable(w io.Writer, rows [][2]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	tw.Flush()
}
