package bench

// libcRandom reproduces glibc's random() (the default TYPE_3 additive feedback generator):
// mysqlslap builds its auto-generated INSERT and UPDATE statements with random() before it
// seeds it, so with seed 1 the generated values, and so the SQL text, match mariadb-slap's
// byte for byte. Keeping them identical lets a run be compared with a mysqlslap run on the
// same data, and lets --only-print be diffed against `mariadb-slap --only-print`.
type libcRandom struct {
	ring [31]int32
	f, b int // front and rear positions in the ring
}

func newLibcRandom(seed uint32) *libcRandom {
	g := &libcRandom{}
	g.seed(seed)
	return g
}

func (g *libcRandom) seed(seed uint32) {
	if seed == 0 {
		seed = 1
	}
	// r[i] = 16807 * r[i-1] mod (2^31 - 1), with Schrage's method as glibc does.
	word := int32(seed)
	g.ring[0] = word
	for i := 1; i < 31; i++ {
		hi := word / 127773
		lo := word % 127773
		word = 16807*lo - 2836*hi
		if word < 0 {
			word += 2147483647
		}
		g.ring[i] = word
	}
	g.f, g.b = 3, 0 // the front pointer leads the rear one by SEP_3 = 3
	for i := 0; i < 310; i++ {
		g.next()
	}
}

// next returns the next value in [0, 2^31).
func (g *libcRandom) next() int32 {
	v := uint32(g.ring[g.f]) + uint32(g.ring[g.b])
	g.ring[g.f] = int32(v)
	g.f++
	if g.f == 31 {
		g.f = 0
	}
	g.b++
	if g.b == 31 {
		g.b = 0
	}
	return int32(v >> 1)
}
