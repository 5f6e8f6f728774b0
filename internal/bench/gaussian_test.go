package bench

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// The keys of sysbench's sb_rand_gaussian (src/sb_rand.c, 1.0.20 and 1.1) for given
// uniform draws, computed from its C source in IEEE doubles: a + (uint32)(sum(u*t) *
// (1/iter)), t = b-a+1. Before, --dist gaussian was refused: a sysbench command line with
// --rand-type=gaussian had no equivalent.
func TestGaussianKeysAreSysbenchs(t *testing.T) {
	const n, eps = 1_000_000, 1.0 / (1 << 53)
	fill := func(v float64, k int) []float64 {
		out := make([]float64, k)
		for i := range out {
			out[i] = v
		}
		return out
	}
	cases := []struct {
		n     int64
		iter  int
		draws []float64
		want  int64
		what  string
	}{
		{n, 12, fill(0.5, 12), 500001, "the middle: 12 draws of 0.5"},
		{n, 12, fill(0, 12), 1, "the lowest key"},
		{n, 12, fill(1-eps, 12), n, "the highest key"},
		{n, 12, []float64{0.1, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.9, 0.9, 0.9, 0.9, 0.9}, 533334, "the mean of 12 draws"},
		{1000, 3, []float64{0.4, 0.2, 0.5}, 367, "3 draws"},
		{10, 1, []float64{0.999}, 10, "one draw: uniform"},
		{1, 12, fill(0.7, 12), 1, "one key"},
	}
	for _, c := range cases {
		d := DistSpec{Kind: DistGaussian, SpecIter: c.iter}
		src := &fixedFloats{vals: c.draws}
		if got := d.NewSampler(c.n).Next(rand.New(src)); got != c.want {
			t.Errorf("%s: %s over [1, %d] drew %d, want %d", c.what, d, c.n, got, c.want)
		}
		if src.i != len(c.draws) {
			t.Errorf("%s: used %d uniform draws, want %d", c.what, src.i, len(c.draws))
		}
	}
}

// The shape: the mean of iter uniforms over the range (Irwin-Hall), whatever iter.
func TestGaussianDistributionShape(t *testing.T) {
	const n, draws = 1_000_000, 300_000
	for _, iter := range []int{1, 2, 12, 50} {
		d := DistSpec{Kind: DistGaussian, SpecIter: iter}
		s := d.NewSampler(n)
		r := rand.New(rand.NewPCG(3, 5))
		spans := [][2]int64{{1, n / 10}, {n/2 - n/100, n/2 + n/100}, {n / 4, n / 2}, {n - n/20, n}}
		counts := make([]int, len(spans))
		for i := 0; i < draws; i++ {
			k := s.Next(r)
			if k < 1 || k > n {
				t.Fatalf("%s drew %d, outside [1, %d]", d, k, n)
			}
			for j, sp := range spans {
				if k >= sp[0] && k <= sp[1] {
					counts[j]++
				}
			}
		}
		for j, sp := range spans {
			// key k = 1 + floor(n * mean): k <= hi when n*mean < hi.
			want := stableIrwinHall(float64(iter)*float64(sp[1])/n, iter) - stableIrwinHall(float64(iter)*float64(sp[0]-1)/n, iter)
			if got := float64(counts[j]) / draws; math.Abs(got-want) > 0.004 {
				t.Errorf("%s: ids %d..%d got %.4f of the keys, want %.4f +- 0.004", d, sp[0], sp[1], got, want)
			}
		}
	}
}

// stableIrwinHall is irwinHallCDF computed from the nearer end: its alternating sum loses
// every digit in the upper tail of many uniforms.
func stableIrwinHall(x float64, k int) float64 {
	if x > float64(k)/2 {
		return 1 - irwinHallCDF(float64(k)-x, k)
	}
	return irwinHallCDF(x, k)
}

func TestGaussianOptions(t *testing.T) {
	ptr := func(v int) *int { return &v }
	base := func() Options {
		o := Defaults()
		o.Schema, o.Workload, o.Dist = "s", WorkloadPointSelect, "gaussian"
		return o
	}
	p, err := NewPlan(base())
	if err != nil || p.Key != (DistSpec{Kind: DistGaussian, SpecIter: 12}) || p.Key.String() != "gaussian(iter=12)" {
		t.Fatalf("--dist gaussian: %+v, %v; want sysbench's 12 iterations", p, err)
	}
	o := base()
	o.RandSpecIter = ptr(4)
	if p, err = NewPlan(o); err != nil || p.Key != (DistSpec{Kind: DistGaussian, SpecIter: 4}) {
		t.Fatalf("--dist gaussian --rand-spec-iter 4: %+v, %v", p.Key, err)
	}
	// sysbench 1.1's name of zipf carries over.
	o = base()
	o.Dist = "zipfian:1.1"
	if p, err = NewPlan(o); err != nil || p.Key != (DistSpec{Kind: DistZipf, S: 1.1}) {
		t.Fatalf("--dist zipfian:1.1: %+v, %v", p.Key, err)
	}
	for name, mutate := range map[string]func(o *Options){
		"pct":        func(o *Options) { o.RandSpecPct = ptr(5) },
		"res":        func(o *Options) { o.RandSpecRes = ptr(50) },
		"iter 0":     func(o *Options) { o.RandSpecIter = ptr(0) },
		"gaussian:3": func(o *Options) { o.Dist = "gaussian:3" },
	} {
		o := base()
		mutate(&o)
		_, err := NewPlan(o)
		if err == nil || exitcode.Of(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line usage error", name, err)
		}
	}
}

// --dist gaussian with --rand-spec-iter reaches the clients: with 1000 iterations over
// 1,000 rows the bell's standard deviation is 9 ids, so a read-write run changes only rows
// near the middle (none beyond 11 standard deviations).
func TestGaussianReachesTheWorkload(t *testing.T) {
	s, rows := preparedRows(t)
	before := rows()
	rep := benchJSON(t, "--create-schema="+s, "--workload=read-write", "--dist=gaussian", "--rand-spec-iter=1000", "--concurrency=1", "--events=40")
	if rep.Dist != "gaussian(iter=1000)" || len(rep.Runs) != 1 || rep.Runs[0].Events != 40 {
		t.Fatalf("dist %q, runs %+v", rep.Dist, rep.Runs)
	}
	after := rows()
	changed := 0
	for id, was := range before {
		if after[id] != was {
			changed++
			if id < 400 || id > 600 {
				t.Errorf("id %d changed: a key far outside the bell was drawn", id)
			}
		}
	}
	if changed == 0 {
		t.Error("the run changed no row")
	}
}
