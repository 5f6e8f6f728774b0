package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// fixedFloats is a rand.Source whose Float64s are the given values (each rounded down to
// a multiple of 2^-53, as rand.Float64 makes them).
type fixedFloats struct {
	vals []float64
	i    int
}

func (f *fixedFloats) Uint64() uint64 {
	v := f.vals[f.i]
	f.i++
	return uint64(v * (1 << 53))
}

// The keys of sysbench 1.0.20's sb_rand_special for given uniform draws, computed from
// its C source (src/sb_rand.c) in IEEE doubles: they pin the algorithm, including its
// reuse of the first draw for the special key, which leaves the lowest (100-res)% of the
// special window to the bell alone.
func TestSpecialKeysAreSysbenchs(t *testing.T) {
	const n, eps = 1_000_000, 1.0 / (1 << 53)
	halves := []float64{0.25 - eps, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}
	mixed := []float64{0.1, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9}
	cases := []struct {
		n              int64
		iter, pct, res int
		draws          []float64
		want           int64
		what           string
	}{
		{n, 12, 1, 75, []float64{0.25}, 497500, "first special key: rnd = 0.25 is not below 1-res%"},
		{n, 12, 1, 75, []float64{0.75}, 502501, "a special key"},
		{n, 12, 1, 75, []float64{1 - eps}, 505001, "last special key"},
		{n, 12, 1, 75, halves, 500000, "bell: rnd just below 0.25, then 12 draws of 0.5"},
		{n, 12, 1, 75, make([]float64, 13), 1, "bell at its lowest"},
		{n, 12, 1, 75, mixed, 600000, "bell: the mean of 12 draws"},
		{n, 3, 10, 50, []float64{0.6}, 510001, "pct 10, res 50: a special key"},
		{n, 3, 10, 50, []float64{0.4, 0.2, 0.5, 0.8}, 500000, "pct 10, res 50: a bell key of 3 draws"},
		{n, 1, 100, 0, []float64{0, 1 - eps}, 999999, "res 0: the bell of one draw never reaches n"},
		{1000, 12, 0, 100, []float64{0}, 500, "res 100, pct 0: every key special, 0 draws NaN < t"},
		{1000, 12, 0, 100, []float64{1 - eps}, 501, "res 100, pct 0: the window's other key"},
		{1, 12, 1, 75, []float64{0.9}, 1, "one key"},
	}
	for _, c := range cases {
		d := DistSpec{Kind: DistSpecial, SpecIter: c.iter, SpecPct: c.pct, SpecRes: c.res}
		src := &fixedFloats{vals: c.draws}
		if got := d.NewSampler(c.n).Next(rand.New(src)); got != c.want {
			t.Errorf("%s: %s over [1, %d] drew %d, want %d", c.what, d, c.n, got, c.want)
		}
		if src.i != len(c.draws) {
			t.Errorf("%s: used %d uniform draws, want %d", c.what, src.i, len(c.draws))
		}
	}
}

// irwinHallCDF is P(U1+...+Uk <= x) for k independent uniforms on [0, 1).
func irwinHallCDF(x float64, k int) float64 {
	if x <= 0 {
		return 0
	}
	if x >= float64(k) {
		return 1
	}
	sum, binom, fact := 0.0, 1.0, 1.0
	for i := 1; i <= k; i++ {
		fact *= float64(i)
	}
	for j := 0; j <= int(x); j++ {
		if j > 0 {
			binom = binom * float64(k-j+1) / float64(j)
		}
		sum += math.Pow(-1, float64(j)) * binom * math.Pow(x-float64(j), float64(k))
	}
	return sum / fact
}

// specialShare is the share of special's keys in [lo, hi] over [1, n], from its
// definition: res% uniform on the upper res% of the window, the rest 1 + t*(mean of iter
// uniforms).
func specialShare(n, lo, hi int64, iter, pct, res int) float64 {
	t := float64(n - 1)
	d := t * float64(pct) / 100
	off := t/2 - t*float64(pct)/200
	q0 := float64(100-res) / 100
	from, to := q0*(d+1)+off, d+1+off // the special value before truncation
	overlap := math.Max(0, math.Min(to, float64(hi))-math.Max(from, float64(lo-1)))
	special := 0.0
	if to > from {
		special = overlap / (to - from)
	}
	bell := irwinHallCDF(float64(iter)*float64(hi)/t, iter) - irwinHallCDF(float64(iter)*float64(lo-1)/t, iter)
	return float64(res)/100*special + (1-float64(res)/100)*bell
}

func TestSpecialDistributionShape(t *testing.T) {
	const n, draws = 1_000_000, 400_000
	type span struct {
		what   string
		lo, hi int64
	}
	share := func(d DistSpec, spans []span) []float64 {
		s := d.NewSampler(n)
		r := rand.New(rand.NewPCG(7, 11))
		counts := make([]int, len(spans))
		for i := 0; i < draws; i++ {
			k := s.Next(r)
			if k < 1 || k > n {
				t.Fatalf("%s drew %d, outside [1, %d]", d, k, n)
			}
			for j, sp := range spans {
				if k >= sp.lo && k <= sp.hi {
					counts[j]++
				}
			}
		}
		out := make([]float64, len(spans))
		for j, c := range counts {
			out[j] = float64(c) / draws
		}
		return out
	}
	// sysbench 1.0's default: the special part is the 1% of the ids at the middle, keys
	// 495,000 to 505,001 (t/2 - t/200 + 1 on). It gets the 75% special keys and the bell's
	// 4.8% of the other 25%: 76.2%. The special keys themselves start at 497,500.
	def, err := ParseDist("special")
	if err != nil {
		t.Fatal(err)
	}
	spans := []span{{"special part", 495_000, 505_001}, {"lowest quarter of the special part", 495_000, 497_499}}
	got := share(def, spans)
	if math.Abs(got[0]-0.762) > 0.004 {
		t.Errorf("special (pct 1, res 75, iter 12): %.4f of the keys in its special 1%% of the ids, want 0.762 +- 0.004", got[0])
	}
	if got[1] > 0.006 {
		t.Errorf("special: %.4f of the keys in the lowest quarter of the special part, want the bell's 0.003 alone", got[1])
	}

	for _, c := range []struct{ iter, pct, res int }{{12, 1, 75}, {1, 10, 50}, {3, 5, 90}, {12, 20, 0}, {2, 0, 100}} {
		d := DistSpec{Kind: DistSpecial, SpecIter: c.iter, SpecPct: c.pct, SpecRes: c.res}
		t64 := float64(n - 1)
		mid := int64(t64/2) + 1
		// The special part: 1 + trunc(v) for v in [off, off+d+1), d = t*pct/100.
		off, width := t64/2-t64*float64(c.pct)/200, t64*float64(c.pct)/100+1
		winLo, winHi := 1+int64(off), int64(math.Ceil(off+width))
		spans := []span{
			{"special part", winLo, winHi},
			{"below the special part", 1, winLo - 1},
			{"above the special part", winHi + 1, n},
			{"first tenth of the ids", 1, n / 10},
			{"lower half", 1, mid},
		}
		got := share(d, spans)
		for j, sp := range spans {
			want := specialShare(n, sp.lo, sp.hi, c.iter, c.pct, c.res)
			if math.Abs(got[j]-want) > 0.004 {
				t.Errorf("%s: %s (ids %d..%d) got %.4f of the keys, want %.4f +- 0.004", d, sp.what, sp.lo, sp.hi, got[j], want)
			}
		}
		// At least res% land in the special part, whatever the bell adds.
		if got[0] < float64(c.res)/100-0.004 {
			t.Errorf("%s: %.4f of the keys in the special part, below res %d%%", d, got[0], c.res)
		}
	}
}

func TestRandSpecOptions(t *testing.T) {
	ptr := func(v int) *int { return &v }
	base := func() Options {
		o := Defaults()
		o.Schema, o.Workload, o.Dist = "s", WorkloadPointSelect, "special"
		return o
	}
	p, err := NewPlan(base())
	if err != nil || p.Key != (DistSpec{Kind: DistSpecial, SpecIter: 12, SpecPct: 1, SpecRes: 75}) {
		t.Fatalf("--dist special: %+v, %v; want sysbench 1.0.20's 12, 1, 75", p, err)
	}
	o := base()
	o.RandSpecPct, o.RandSpecRes, o.RandSpecIter = ptr(5), ptr(90), ptr(1)
	if p, err = NewPlan(o); err != nil || p.Key != (DistSpec{Kind: DistSpecial, SpecIter: 1, SpecPct: 5, SpecRes: 90}) {
		t.Fatalf("--rand-spec-pct 5 --rand-spec-res 90 --rand-spec-iter 1: %+v, %v", p.Key, err)
	}
	if s := p.Key.String(); s != "special(pct=5,iter=1,res=90)" {
		t.Errorf("String() = %q", s)
	}
	o = base()
	o.RandSpecPct, o.RandSpecRes = ptr(0), ptr(100) // the bounds are allowed
	if p, err = NewPlan(o); err != nil || p.Key.SpecPct != 0 || p.Key.SpecRes != 100 || p.Key.SpecIter != 12 {
		t.Errorf("pct 0, res 100: %+v, %v", p.Key, err)
	}
	bad := map[string]func(o *Options){
		"iter 0":         func(o *Options) { o.RandSpecIter = ptr(0) },
		"iter 1001":      func(o *Options) { o.RandSpecIter = ptr(1001) },
		"pct -1":         func(o *Options) { o.RandSpecPct = ptr(-1) },
		"pct 101":        func(o *Options) { o.RandSpecPct = ptr(101) },
		"res -1":         func(o *Options) { o.RandSpecRes = ptr(-1) },
		"res 101":        func(o *Options) { o.RandSpecRes = ptr(101) },
		"with zipf":      func(o *Options) { o.Dist = "zipf"; o.RandSpecPct = ptr(5) },
		"with uniform":   func(o *Options) { o.Dist = ""; o.RandSpecIter = ptr(5) },
		"without --dist": func(o *Options) { o.Dist = ""; o.RandSpecRes = ptr(5) },
		"query run":      func(o *Options) { o.Workload, o.Dist, o.Query = "", "", "select 1"; o.RandSpecRes = ptr(5) },
		"special:5":      func(o *Options) { o.Dist = "special:5" },
	}
	for name, mutate := range bad {
		o := base()
		mutate(&o)
		_, err := NewPlan(o)
		if err == nil || exitcode.Of(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line usage error", name, err)
		}
	}
}

// The flags reach the clients: a read-write run keyed special with pct 0 and res 100
// draws every id from the middle two (500 and 501 of 1,000), so no other row changes,
// and the rows it re-inserts get their k from the same keys, as sysbench's get_id() gives
// them (they were uniform over the table).
func TestSpecialFlagsReachTheWorkload(t *testing.T) {
	s, rows := preparedRows(t)
	before := rows()
	const events = 40
	rep := benchJSON(t, "--create-schema="+s, "--workload=read-write", "--dist=special", "--rand-spec-pct=0",
		"--rand-spec-res=100", "--rand-spec-iter=3", "--concurrency=1", "--events=40")
	if rep.Dist != "special(pct=0,iter=3,res=100)" || len(rep.Runs) != 1 || rep.Runs[0].Events != events {
		t.Fatalf("dist %q, runs %+v", rep.Dist, rep.Runs)
	}
	after := rows()
	if len(after) != len(before) {
		t.Fatalf("%d rows after, %d before", len(after), len(before))
	}
	for id, was := range before {
		if now := after[id]; now != was && id != 500 && id != 501 {
			t.Errorf("id %d changed (k %d -> %d): a key outside the special part was drawn", id, was.k, now.k)
		}
	}
	// Each event deletes 500 or 501 and inserts it back with k drawn from {500, 501}; the
	// indexed UPDATEs after the last such insert add at most one each. (That one of them
	// is never deleted in 40 events has odds of 2^-39.)
	for _, id := range []int64{500, 501} {
		if k := after[id].k; k < 500 || k > 501+events {
			t.Errorf("id %d: k %d after the run, want a key of the special part (500 or 501) plus at most %d UPDATEs of k+1", id, k, events)
		}
	}
}

// sbRow is a prepared table's row: its k and c.
type sbRow struct {
	k int64
	c string
}

// preparedRows prepares a schema of one 1,000-row table for a read-write run, and returns
// it with what reads its rows, by id.
func preparedRows(t *testing.T) (string, func() map[int64]sbRow) {
	t.Helper()
	s := sandboxtest.Schema(t) + "_sb"
	c := sandboxtest.Conn(t)
	ctx := context.Background()
	if _, err := Prepare(ctx, c, PrepareOptions{Schema: s, Tables: 1, Rows: 1000}, logx.New(&strings.Builder{}, true)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Cleanup(ctx, c, s) })
	return s, func() map[int64]sbRow {
		res, err := c.DB.Query("SELECT id, k, c FROM " + sqltext.Table(s, "sbtest1"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		m := map[int64]sbRow{}
		for res.Next() {
			var id int64
			var r sbRow
			if err := res.Scan(&id, &r.k, &r.c); err != nil {
				t.Fatal(err)
			}
			m[id] = r
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
}
