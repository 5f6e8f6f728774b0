package dumpfile

import "testing"

// Only the privileges of a grant count, not the grantee's name: a user called nosuper with
// PROCESS may not set global variables.
func TestGrantsAny(t *testing.T) {
	privs := []string{"ALL PRIVILEGES", "SUPER", "SYSTEM_VARIABLES_ADMIN"}
	for grant, want := range map[string]bool{
		"GRANT PROCESS ON *.* TO `nosuper`@`localhost` IDENTIFIED BY PASSWORD '*8B1B'": false,
		"GRANT SELECT ON `super`.* TO `u`@`%`":                                         false,
		"GRANT PROCESS, SUPER ON *.* TO `u`@`localhost`":                               true,
		"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION":          true,
		"GRANT SYSTEM_VARIABLES_ADMIN ON *.* TO `u`@`%`":                               true,
		"GRANT SUPER ON `db`.* TO `u`@`%`":                                             false,
		"GRANT `superrole` TO `u`@`%`":                                                 false,
	} {
		if got := grantsAny(grant, privs); got != want {
			t.Errorf("%s: %v, want %v", grant, got, want)
		}
	}
}
