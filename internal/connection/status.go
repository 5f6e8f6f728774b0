package connection

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// GlobalStatus reads the named global status variables as integers, keyed by lower-case
// name. It fails when the server lacks one of them or reports a value that is not a number:
// callers compare counters, and a missing one would read as zero.
func (c *Conn) GlobalStatus(ctx context.Context, names ...string) (map[string]int64, error) {
	out, err := c.SomeGlobalStatus(ctx, names...)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[strings.ToLower(n)]; !ok {
			return nil, fmt.Errorf("the server reports no status variable %s", n)
		}
	}
	return out, nil
}

// SomeGlobalStatus is GlobalStatus for counters a flavor or version may lack: those the
// server does not report are absent from the map, not an error.
func (c *Conn) SomeGlobalStatus(ctx context.Context, names ...string) (map[string]int64, error) {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	q := "SHOW GLOBAL STATUS WHERE Variable_name IN (?" + strings.Repeat(", ?", max(len(names)-1, 0)) + ")"
	rows, err := c.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", strings.Join(names, ", "), err)
	}
	defer rows.Close()
	out := make(map[string]int64, len(names))
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("read %s: %w", strings.Join(names, ", "), err)
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("status %s is %q, not a number", name, value)
		}
		out[strings.ToLower(name)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", strings.Join(names, ", "), err)
	}
	return out, nil
}
