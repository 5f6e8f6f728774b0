package bufferpool

import (
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/flavor"
)

func TestResidentBound(t *testing.T) {
	srv := flavor.Server{PageSize: 16384, PoolSize: 1 << 30} // 65,536 pages
	part := func(space uint32, size int64) *catalog.Part {
		return &catalog.Part{Space: space, SpaceKnown: true, FileSize: size}
	}
	cases := []struct {
		name string
		cat  *catalog.Catalog
		want int
	}{
		{"no catalog", nil, 0},
		{"small files: their pages", &catalog.Catalog{Tables: []*catalog.Table{
			{Parts: []*catalog.Part{part(5, 100*16384), part(6, 50*16384)}, Aux: []catalog.AuxSpace{{Space: 7, FileSize: 10 * 16384}}},
		}}, 160},
		{"files larger than the pool: the pool's pages", &catalog.Catalog{Tables: []*catalog.Table{
			{Parts: []*catalog.Part{part(5, 10<<30)}},
		}}, 65536},
		{"a file of unknown size: the pool's pages", &catalog.Catalog{Tables: []*catalog.Table{
			{Parts: []*catalog.Part{part(5, 16384), part(6, 0)}},
		}}, 65536},
		{"parts not kept are not counted", &catalog.Catalog{Tables: []*catalog.Table{
			{Parts: []*catalog.Part{part(5, 16384), part(0, 0), {Space: 9}}},
		}}, 1},
	}
	for _, c := range cases {
		if got := residentBound(srv, c.cat); got != c.want {
			t.Errorf("%s: residentBound = %d, want %d", c.name, got, c.want)
		}
	}
}
