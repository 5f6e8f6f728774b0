package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/innowarm/innowarm/internal/ibd"
	"github.com/innowarm/innowarm/internal/sandbox"
)

// FilePagesOfType counts the pages of the tablespace file at path whose FIL_PAGE_TYPE is
// typ, as they are on disk (18 is MySQL's FIL_PAGE_SDI_BLOB: an SDI too long for its page).
func FilePagesOfType(t testing.TB, path string, pageSize int, typ uint16) int {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var pages []uint32
	for p := range uint32(st.Size() / int64(pageSize)) {
		pages = append(pages, p)
	}
	n := 0
	if err := ibd.ReadHeaders(path, pageSize, pages, func(_ uint32, h ibd.Header) {
		if h.Type == typ {
			n++
		}
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// InnowarmFilesIn lists the files of a data directory whose names say they are innowarm's
// (a borrowed dump file, its list), but the sandbox's own mark, which stays for its life.
func InnowarmFilesIn(datadir string) []string {
	all, _ := filepath.Glob(filepath.Join(datadir, "*innowarm*"))
	var out []string
	for _, f := range all {
		if filepath.Base(f) != sandbox.DataDirMark {
			out = append(out, f)
		}
	}
	return out
}
