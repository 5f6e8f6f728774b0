package bufferpool_test

import (
	"testing"

	"github.com/innowarm/innowarm/internal/bufferpool"
)

// A MariaDB 10.11 BUFFER POOL AND MEMORY section, as SHOW ENGINE INNODB STATUS prints it.
const innodbStatusPool = `----------------------
BUFFER POOL AND MEMORY
----------------------
Total large memory allocated 2214592512
Dictionary memory allocated 853192
Buffer pool size   129792
Free buffers       67802
Database pages     61990
Old database pages 22903
Modified db pages  0
Percent of dirty pages(LRU & free pages): 0.000
`

func TestParseLRUOldLen(t *testing.T) {
	n, err := bufferpool.ParseLRUOldLen(innodbStatusPool)
	if err != nil || n != 22903 {
		t.Errorf("old length %d, %v; want %d", n, err, 22903)
	}
	if _, err := bufferpool.ParseLRUOldLen("Buffer pool size 10\n"); err == nil {
		t.Error("a status without the LRU lines parsed")
	}
}
