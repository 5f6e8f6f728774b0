package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// Key distributions of --dist.
const (
	DistUniform = "uniform"
	DistZipf    = "zipf"
	DistPareto  = "pareto"
	DistHotset  = "hotset"
	// DistSpecial is sysbench 1.0's "special" --rand-type (its default there; sysbench
	// removed it after 1.0.20).
	DistSpecial = "special"
	// DistGaussian is sysbench's "gaussian" --rand-type: the mean of --rand-spec-iter
	// uniform draws over the whole range, a bell centred on its middle.
	DistGaussian = "gaussian"
)

// sysbench 1.0.20's defaults of --rand-spec-iter, --rand-spec-pct and --rand-spec-res.
const (
	DefaultSpecIter = 12
	DefaultSpecPct  = 1
	DefaultSpecRes  = 75
)

// DistSpec is a parsed --dist.
type DistSpec struct {
	Kind string
	// S is the zipf exponent (default 0.8, sysbench's --rand-zipfian-exp), H the pareto
	// shape (default 0.2, sysbench's --rand-pareto-h: 80% of the accesses go to the first
	// 20% of the keys).
	S, H float64
	// RowsPct of the keys (the lowest ids) get AccessPct of the accesses.
	RowsPct, AccessPct float64
	// SpecIter, SpecPct and SpecRes are special's --rand-spec-iter, --rand-spec-pct and
	// --rand-spec-res: SpecRes% of the keys come from the SpecPct% of the range at its
	// middle, the others are the mean of SpecIter uniform draws over the whole range.
	SpecIter, SpecPct, SpecRes int
}

func (d DistSpec) String() string {
	switch d.Kind {
	case DistZipf:
		return fmt.Sprintf("zipf:%g", d.S)
	case DistPareto:
		return fmt.Sprintf("pareto:%g", d.H)
	case DistHotset:
		return fmt.Sprintf("hotset:%g:%g", d.RowsPct, d.AccessPct)
	case DistSpecial:
		return fmt.Sprintf("special(pct=%d,iter=%d,res=%d)", d.SpecPct, d.SpecIter, d.SpecRes)
	case DistGaussian:
		return fmt.Sprintf("gaussian(iter=%d)", d.SpecIter)
	}
	return DistUniform
}

const distHelp = "uniform, zipf[:S] (S > 0, default 0.8; also zipfian[:S]), pareto[:H] (0 < H < 1, default 0.2), gaussian (tuned by --rand-spec-iter), special (tuned by --rand-spec-pct, --rand-spec-iter and --rand-spec-res) or hotset:ROWS_PCT:ACCESS_PCT (e.g. hotset:1:90)"

// ParseDist reads --dist.
func ParseDist(spec string) (DistSpec, error) {
	spec = strings.ToLower(strings.TrimSpace(spec))
	if spec == "" {
		return DistSpec{Kind: DistUniform}, nil
	}
	parts := strings.Split(spec, ":")
	if parts[0] == "zipfian" {
		parts[0] = DistZipf // sysbench 1.1's name of it, so its --rand-type carries over
	}
	bad := func(why string) (DistSpec, error) {
		return DistSpec{}, exitcode.BadValue("Dist", "%q: %s; want %s", spec, why, distHelp)
	}
	num := func(s string) (float64, bool) {
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	switch parts[0] {
	case DistUniform:
		if len(parts) != 1 {
			return bad("uniform takes no parameter")
		}
		return DistSpec{Kind: DistUniform}, nil
	case DistSpecial:
		// Its parameters are flags named as sysbench's, so a sysbench command line's
		// --rand-spec-* carry over as they are.
		if len(parts) != 1 {
			return bad("special takes no parameter here: give --rand-spec-pct, --rand-spec-iter and --rand-spec-res")
		}
		return DistSpec{Kind: DistSpecial, SpecIter: DefaultSpecIter, SpecPct: DefaultSpecPct, SpecRes: DefaultSpecRes}, nil
	case DistGaussian:
		if len(parts) != 1 {
			return bad("gaussian takes no parameter here: give --rand-spec-iter, as to sysbench")
		}
		return DistSpec{Kind: DistGaussian, SpecIter: DefaultSpecIter}, nil
	case DistZipf, DistPareto:
		d := DistSpec{Kind: DistZipf, S: 0.8}
		if parts[0] == DistPareto {
			d = DistSpec{Kind: DistPareto, H: 0.2}
		}
		if len(parts) > 2 {
			return bad(parts[0] + " takes one parameter")
		}
		if len(parts) == 1 {
			return d, nil
		}
		v, ok := num(parts[1])
		switch {
		case d.Kind == DistZipf && (!ok || v <= 0 || v > 100):
			return bad("the zipf exponent must be a number above 0")
		case d.Kind == DistPareto && (!ok || v <= 0 || v >= 1):
			return bad("the pareto shape h must lie between 0 and 1")
		case d.Kind == DistZipf:
			d.S = v
		default:
			d.H = v
		}
		return d, nil
	case DistHotset:
		if len(parts) != 3 {
			return bad("hotset needs ROWS_PCT:ACCESS_PCT")
		}
		rows, ok1 := num(parts[1])
		access, ok2 := num(parts[2])
		if !ok1 || !ok2 || rows <= 0 || rows > 100 || access < 0 || access > 100 {
			return bad("ROWS_PCT must lie in (0, 100] and ACCESS_PCT in [0, 100]")
		}
		return DistSpec{Kind: DistHotset, RowsPct: rows, AccessPct: access}, nil
	}
	return bad("unknown distribution")
}

// Sampler draws keys in [1, N].
type Sampler interface {
	Next(r *rand.Rand) int64
}

// NewSampler builds a sampler of d over [1, n].
func (d DistSpec) NewSampler(n int64) Sampler {
	if n < 1 {
		n = 1
	}
	switch d.Kind {
	case DistZipf:
		return newZipf(n, d.S)
	case DistPareto:
		return pareto{n: n, power: math.Log(d.H) / math.Log(1-d.H)}
	case DistHotset:
		hot := int64(math.Round(float64(n) * d.RowsPct / 100))
		hot = min(max(hot, 1), n)
		return hotset{n: n, hot: hot, p: d.AccessPct / 100}
	case DistSpecial:
		return newSpecial(n, d.SpecIter, d.SpecPct, d.SpecRes)
	case DistGaussian:
		return gaussian{n: n, iter: max(d.SpecIter, 1), t: float64(n), iterMult: 1.0 / float64(max(d.SpecIter, 1))}
	}
	return uniform{n: n}
}

type uniform struct{ n int64 }

func (u uniform) Next(r *rand.Rand) int64 { return 1 + r.Int64N(u.n) }

// pareto is sysbench's: the first key + n * U^(log h / log(1-h)).
type pareto struct {
	n     int64
	power float64
}

func (p pareto) Next(r *rand.Rand) int64 {
	k := 1 + int64(float64(p.n)*math.Pow(r.Float64(), p.power))
	return min(k, p.n)
}

// hotset sends a share p of the accesses to the first hot keys, uniformly, and the others
// uniformly to the remaining keys.
type hotset struct {
	n, hot int64
	p      float64
}

func (h hotset) Next(r *rand.Rand) int64 {
	if h.hot >= h.n || r.Float64() < h.p {
		return 1 + r.Int64N(h.hot)
	}
	return h.hot + 1 + r.Int64N(h.n-h.hot)
}

// special is sysbench 1.0.20's sb_rand_special over [1, n], computed as it does
// (src/sb_rand.c), so that a run keyed like sysbench's default touches the same ids.
// t = n-1. A first uniform draw rnd decides: when rnd*t*100/(100-res) < t, that is with
// probability (100-res)%, the key is 1 + t times the mean of iter further uniform draws (a
// bell over the whole range, centred on its middle); otherwise it is 1 + rnd*(d+1) +
// t/2 - d/2 with d = t*pct/100: the pct% "special" window at the middle of the range. As
// sysbench reuses rnd there, which is then at least (100-res)/100, the special keys fill
// only the upper res% of that window (ids 497,500 to 505,001 of 1,000,000 by default).
type special struct {
	n         int64
	iter      int
	t         float64
	iterMult  float64 // 1/iter, multiplied as sysbench does rather than divided
	rangeSize float64 // t*100/(100-res): +Inf at res = 100, when every key is special
	d, offset float64 // the special window's width less one, and its start
}

func newSpecial(n int64, iter, pct, res int) special {
	t := float64(n - 1)
	s := special{n: n, iter: iter, t: t, iterMult: 1.0 / float64(iter)}
	if res >= 100 {
		s.rangeSize = math.Inf(1)
	} else {
		s.rangeSize = t * (100.0 / (100.0 - float64(res)))
	}
	s.d = t * (float64(pct) / 100.0)
	s.offset = t/2 - float64(t*(float64(pct)/200.0))
	return s
}

func (s special) Next(r *rand.Rand) int64 {
	rnd := r.Float64()
	// The explicit float64 conversions keep Go from fusing a multiply and an add (it may on
	// arm64), so the keys round as sysbench's C does.
	//
	// At res = 100 rangeSize is +Inf, as sysbench's 100/(100-res) is, and rnd*rangeSize
	// (NaN at rnd = 0) never compares below t: every key is special. At n = 1, t is 0 and
	// so is the key's offset.
	if rnd*s.rangeSize < s.t {
		sum := 0.0
		for i := 0; i < s.iter; i++ {
			sum += r.Float64()
		}
		// sysbench adds a to the double before it truncates: so here.
		return int64(1 + float64(float64(sum*s.t)*s.iterMult))
	}
	k := 1 + int64(float64(rnd*(s.d+1))+s.offset)
	// sysbench's window ends below t+1, so this only guards rounding at pct = 100.
	return min(k, s.n)
}

// gaussian is sysbench's sb_rand_gaussian over [1, n] (src/sb_rand.c, the same in 1.0.20
// and 1.1): 1 + the truncated mean of iter uniform draws over [0, n), each scaled before it
// is summed, as sysbench does, so that the keys round as its do. iter is --rand-spec-iter
// (12 by default): the larger, the narrower the bell (its standard deviation is
// n/sqrt(12*iter)).
type gaussian struct {
	n        int64
	iter     int
	t        float64 // b - a + 1
	iterMult float64 // 1/iter, multiplied as sysbench does rather than divided
}

func (g gaussian) Next(r *rand.Rand) int64 {
	sum := 0.0
	for i := 0; i < g.iter; i++ {
		// The explicit conversion keeps Go from fusing the multiply into the add (it may on
		// arm64): sysbench's C rounds the product first.
		sum += float64(r.Float64() * g.t)
	}
	k := 1 + int64(float64(sum*g.iterMult))
	// sum < iter*n, but 1/iter is inexact: the product could round up to n itself.
	return min(k, g.n)
}

// zipf draws rank k in [1, n] with probability proportional to 1/k^s, by rejection
// inversion (Hörmann and Derflinger, "Rejection-inversion to generate variates from
// monotone discrete distributions", 1996), in the form that holds for every s > 0: the
// method sysbench's --rand-type=zipfian uses.
type zipf struct {
	n           int64
	s           float64
	hIntegralX1 float64
	hIntegralN  float64
	shortcut    float64
	oneMinusS   float64
}

func newZipf(n int64, s float64) *zipf {
	z := &zipf{n: n, s: s, oneMinusS: 1 - s}
	z.hIntegralX1 = z.hIntegral(1.5) - 1
	z.hIntegralN = z.hIntegral(float64(n) + 0.5)
	z.shortcut = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	return z
}

func (z *zipf) Next(r *rand.Rand) int64 {
	for {
		u := z.hIntegralN + r.Float64()*(z.hIntegralX1-z.hIntegralN)
		x := z.hIntegralInverse(u)
		k := int64(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > z.n {
			k = z.n
		}
		if float64(k)-x <= z.shortcut || u >= z.hIntegral(float64(k)+0.5)-z.h(float64(k)) {
			return k
		}
	}
}

// hIntegral is the integral of the hat function: ((x^(1-s)) - 1) / (1-s), or log x at s=1.
func (z *zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1OverX(z.oneMinusS*lx) * lx
}

func (z *zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

func (z *zipf) hIntegralInverse(x float64) float64 {
	t := x * z.oneMinusS
	if t < -1 {
		t = -1 // numerical safety: the log below must stay defined
	}
	return math.Exp(log1pOverX(t) * x)
}

// expm1OverX is (e^x - 1)/x, continuous at 0.
func expm1OverX(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x/2*(1+x/3*(1+x/4))
}

// log1pOverX is log(1+x)/x, continuous at 0.
func log1pOverX(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}
