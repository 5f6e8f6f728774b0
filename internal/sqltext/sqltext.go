// Package sqltext writes names and values into SQL text, for the statements that cannot
// take placeholders (identifiers never can).
package sqltext

import "strings"

// Ident quotes a schema, table, index or column name: backticks, with any backtick inside
// doubled. Both MariaDB and MySQL read it so whatever sql_mode says.
func Ident(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// Table is `schema`.`table`.
func Table(schema, table string) string {
	return Ident(schema) + "." + Ident(table)
}

var stringEscapes = strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)

// String quotes a string literal (for statements such as EXPLAIN of a built statement).
// It assumes the server's default sql_mode, where a backslash escapes (not
// NO_BACKSLASH_ESCAPES).
func String(s string) string {
	return "'" + stringEscapes.Replace(s) + "'"
}
