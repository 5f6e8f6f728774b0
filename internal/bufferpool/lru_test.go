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

func TestHitRate(t *testing.T) {
	cases := []struct {
		name            string
		requests, reads int64
		want            float64 // -1: unavailable
	}{
		{"all from the pool", 1000, 0, 1},
		{"some from disk", 1000, 10, 0.99},
		{"no requests yet", 0, 0, -1},
		// MariaDB 11.8 (MDEV-37152): reads counted without their requests.
		{"counters disagree", 8000, 9246, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, note := bufferpool.HitRate(c.requests, c.reads)
			switch {
			case c.want < 0 && (got != nil || note == ""):
				t.Errorf("HitRate(%d, %d) = %v %q; want unavailable with a reason", c.requests, c.reads, got, note)
			case c.want >= 0 && (got == nil || *got != c.want):
				t.Errorf("HitRate(%d, %d) = %v %q; want %v", c.requests, c.reads, got, note, c.want)
			}
		})
	}
	if text := (bufferpool.Totals{HitRate: nil, HitRateNote: "unavailable: x"}).HitRateText(); text != "hit rate unavailable: x" {
		t.Errorf("text %q", text)
	}
}
