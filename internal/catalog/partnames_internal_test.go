package catalog

import (
	"regexp"
	"testing"

	"github.com/innowarm/innowarm/internal/flavor"
)

// The names of a table's parts as each server writes them, measured: MySQL 9.7 lower-cases
// partition and subpartition names (with its utf8mb3_general_ci, which maps İ to i and
// keeps ẞ), keeps the table's case and writes other characters as @XXXX or a short code in
// file names; MariaDB keeps every name as written.
func TestPartNamesAsEachServerWritesThem(t *testing.T) {
	mysql := flavor.Server{Kind: flavor.MySQL, Version: flavor.Version{Major: 9, Minor: 7, Patch: 4}}
	mysql57 := flavor.Server{Kind: flavor.MySQL, Version: flavor.Version{Major: 5, Minor: 7, Patch: 44}}
	mariadb := flavor.Server{Kind: flavor.MariaDB, Version: flavor.Version{Major: 10, Minor: 11, Patch: 9}}
	for _, c := range []struct {
		srv                 flavor.Server
		table, part, sub    string
		stats               string
		innodb              string // the name InnoDB's dictionary lists (db "p4")
		otherTable, another string // names partFilenamePattern must not match
	}{
		{mysql, "t", "Lo", "", "t#p#lo", "p4/t#p#lo", "p4/T#p#lo", "p4/t#p#lo#sp#x"},
		{mysql, "Tc", "Lo", "SubA", "Tc#p#lo#sp#suba", "p4/Tc#p#lo#sp#suba", "p4/tc#p#lo#sp#suba", "p4/Tc#p#lo#sp#sub"},
		{mysql, "s", "hi x", "sub b-ü", "s#p#hi x#sp#sub b-ü", "p4/s#p#hi@0020x#sp#sub@0020b@002d@1o", "", "p4/s#p#hi@0020x#sp#sub@0020b@002d@0fc"},
		{mysql, "Tc", "ÜBER Ö", "", "Tc#p#über ö", "p4/Tc#p#@1ober@0020@1i", "", ""},
		{mysql, "u", "İx", "", "u#p#ix", "p4/u#p#ix", "", ""},
		{mysql, "u", "ǅz", "", "u#p#ǆz", "p4/u#p#@obz", "", ""},
		{mysql, "u", "Ab$C", "", "u#p#ab$c", "p4/u#p#ab@0024c", "", "p4/u#p#Ab@0024C"},
		{mysql, "u", "Ⅻ", "", "u#p#ⅻ", "p4/u#p#@r9", "", ""},
		{mariadb, "u", "ǅzⅫ", "", "u#P#ǅzⅫ", "p4/u#P#@01c5z@R9", "p4/U#P#@01c5z@R9", ""},
		{mysql57, "t", "Lo", "", "t#P#Lo", "p4/t#P#Lo", "", "p4/t#P#lo"},
		{mariadb, "t", "Lo", "", "t#P#Lo", "p4/t#P#Lo", "p4/T#P#Lo", "p4/t#P#lo"},
		{mariadb, "s", "Lo", "sub b-ü", "s#P#Lo#SP#sub b-ü", "p4/s#P#Lo#SP#sub@0020b@002d@1o", "", "p4/s#P#lo#SP#sub@0020b@002d@1o"},
	} {
		if got := partStatsName(c.srv, c.table, c.part, c.sub); got != c.stats {
			t.Errorf("%s %s %s/%s: stats name %q, want %q", c.srv.Kind, c.table, c.part, c.sub, got, c.stats)
		}
		re := regexp.MustCompile("^" + filenamePattern("p4") + "/" + internalName(c.srv, c.table, &Part{Partition: c.part, Subpartition: c.sub}) + "$")
		if !re.MatchString(c.innodb) {
			t.Errorf("%s %s %s/%s: %s does not match %q", c.srv.Kind, c.table, c.part, c.sub, re, c.innodb)
		}
		for _, other := range []string{c.otherTable, c.another} {
			if other != "" && re.MatchString(other) {
				t.Errorf("%s %s %s/%s: %s matches %q too", c.srv.Kind, c.table, c.part, c.sub, re, other)
			}
		}
	}

	// A letter MySQL keeps where Go lower-cases it: the statistics of ẞy are found by the
	// names lower-cased alike, among the rows of the part's own table.
	f := statsByFold{}
	for _, n := range []string{"U#p#ẞy", "u#p#ẞy", "u#p#other"} {
		f.add("p4", n)
	}
	if got := partStatsName(mysql, "u", "ẞy", ""); got != "u#p#ßy" {
		t.Fatalf("Go's lower case of ẞy: %q", got)
	}
	if name, ok := f.find(mysql, "p4", "u", "u#p#ßy"); !ok || name != "u#p#ẞy" {
		t.Errorf("find u#p#ßy: %q %v, want u#p#ẞy", name, ok)
	}
	if name, ok := f.find(mysql, "p5", "u", "u#p#ßy"); ok {
		t.Errorf("find in another schema: %q", name)
	}
	re := regexp.MustCompile("^" + internalName(mysql, "u", &Part{Partition: "ẞy"}) + "$")
	if !re.MatchString("u#p#@1e9ey") {
		t.Errorf("%s does not match MySQL's u#p#@1e9ey", re)
	}
}
