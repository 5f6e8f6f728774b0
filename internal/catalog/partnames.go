package catalog

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/innowarm/innowarm/internal/flavor"
)

// partNamesLowered says whether the server writes partition and subpartition names in lower
// case in InnoDB's names of a table's parts: MySQL 8.0+ does, in its dictionary, the
// tablespace's file and mysql.innodb_index_stats (PARTITION Lo of t is "t#p#lo",
// "t#p#lo.ibd"; measured on 9.7 with lower_case_table_names 0), while the table's own
// name keeps its case. MariaDB and MySQL 5.7 keep them as written ("t#P#Lo"). MySQL 8.0
// brought the lower-case separators with it, so the flavor's separator says which.
func partNamesLowered(srv flavor.Server) bool {
	return srv.PartitionSeparator() == strings.ToLower(srv.PartitionSeparator())
}

// storedPartName is a partition's or subpartition's name as the server writes it in
// InnoDB's names of the table's parts. MySQL lower-cases it as its utf8mb3_general_ci does,
// which leaves some letters as they are that Go lower-cases (U+1E9E ẞ, Unicode's later
// additions): lookups by it fall back to comparing names lower-cased here
// (statsByFold, partFilenamePattern).
func storedPartName(srv flavor.Server, name string) string {
	if !partNamesLowered(srv) {
		return name
	}
	return strings.ToLower(name)
}

// partStatsName is the part's table name in mysql.innodb_index_stats: the table's, then
// the partition's and subpartition's as the server writes them ("t#p#lo#sp#lo_a" on MySQL
// 8.0+, "t#P#Lo#SP#Lo_A" on MariaDB).
func partStatsName(srv flavor.Server, table, partition, subpartition string) string {
	name := table
	if partition != "" {
		name += srv.PartitionSeparator() + storedPartName(srv, partition)
		if subpartition != "" {
			name += srv.SubpartitionSeparator() + storedPartName(srv, subpartition)
		}
	}
	return name
}

// partFilenamePattern is filenamePattern for a partition's or subpartition's name as the
// server writes it in its dictionary's names: on MySQL 8.0+ in lower case, where each
// letter Go lower-cases differently from the server may also be as written.
func partFilenamePattern(srv flavor.Server, name string) string {
	if !partNamesLowered(srv) {
		return filenamePattern(name)
	}
	var b strings.Builder
	for _, r := range name {
		lower := unicode.ToLower(r)
		switch {
		case lower == r:
			b.WriteString(filenamePattern(string(r)))
		case r < 128:
			b.WriteString(regexp.QuoteMeta(string(lower)))
		default:
			b.WriteString("(?:" + filenamePattern(string(lower)) + "|" + filenamePattern(string(r)) + ")")
		}
	}
	return b.String()
}

// statsByFold finds a part's statistics where the server lower-cased its partition's name
// otherwise than Go (storedPartName): among the rows of its schema whose table name
// lower-cased equals the part's, the one of the part's own table (whose name keeps its
// case). Keyed by schema and lower-cased name.
type statsByFold map[[2]string][]string

func (f statsByFold) add(schema, name string) {
	k := [2]string{schema, strings.ToLower(name)}
	for _, n := range f[k] {
		if n == name {
			return
		}
	}
	f[k] = append(f[k], name)
}

// find gives the server's name for the part statsName of schema.table, if any.
func (f statsByFold) find(srv flavor.Server, schema, table, statsName string) (string, bool) {
	prefix := table + srv.PartitionSeparator()
	for _, name := range f[[2]string{schema, strings.ToLower(statsName)}] {
		if strings.HasPrefix(name, prefix) {
			return name, true
		}
	}
	return "", false
}
