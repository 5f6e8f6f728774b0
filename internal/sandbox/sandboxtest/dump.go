package sandboxtest

import (
	"os"
	"testing"
	"time"
)

// DumpPool has the shared server write its whole buffer-pool list to its dump file (for a
// load after a restart) and returns once the file is written, with the file's path. The
// dump status's "completed" is no proof: it may be an earlier dump's, and the file an
// earlier test's (a test that restored "no file" as an empty one made the server's load
// after a restart find nothing, and a make test run failed so). So the file is set aside
// first and waited for: the server writes it under another name and renames it when done.
// The server's own file, or its absence, is restored when the test ends.
func DumpPool(t testing.TB) string {
	t.Helper()
	conn := Conn(t)
	path := conn.Server.DumpFilePath()
	saved := path + ".sandboxtest-saved"
	hadOriginal := os.Rename(path, saved) == nil
	t.Cleanup(func() {
		if hadOriginal {
			_ = os.Rename(saved, path)
		} else {
			_ = os.Remove(path)
		}
	})
	Exec(t, "SET GLOBAL innodb_buffer_pool_dump_pct = 100", "SET GLOBAL innodb_buffer_pool_dump_now = ON")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			return path
		}
		if time.Now().After(deadline) {
			status := "unknown"
			if err := conn.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_dump_status'").Scan(new(string), &status); err != nil {
				status = err.Error()
			}
			t.Fatalf("the server did not write its dump %s within 2 minutes (dump status %q)", path, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
