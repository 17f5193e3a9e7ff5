package miniwob

import "fmt"

// PageSeed is the seed BrowserGym's MiniWoB task gives the page
// (Math.seedrandom) for an episode reset with seed: the first draw of
// NumPy's legacy np.random.RandomState(seed).randint(0, 1000000)
// (browsergym/miniwob/base.py, AbstractMiniwobTask.setup). Like NumPy, it
// takes seeds 0 to 2^32-1.
func PageSeed(seed int64) (int64, error) {
	if seed < 0 || seed > 1<<32-1 {
		return 0, fmt.Errorf("seed %d: MiniWoB episodes take seeds 0 to 4294967295 (NumPy's RandomState, as BrowserGym seeds them)", seed)
	}
	mt := newMT19937(uint32(seed))
	// randint(0, 1000000) draws 32-bit words, keeps the bits under the
	// smallest mask covering 999999 (2^20-1), and rejects values above it.
	const span, mask = 1000000 - 1, 1<<20 - 1
	for {
		if v := mt.next() & mask; v <= span {
			return int64(v), nil
		}
	}
}

// mt19937 is the Mersenne Twister (Matsumoto and Nishimura, 1998) seeded
// as its reference init_genrand does, which NumPy's legacy seeding of an
// integer uses.
type mt19937 struct {
	state [624]uint32
	i     int
}

func newMT19937(seed uint32) *mt19937 {
	m := &mt19937{i: 624}
	m.state[0] = seed
	for i := 1; i < 624; i++ {
		prev := m.state[i-1]
		m.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	return m
}

func (m *mt19937) next() uint32 {
	if m.i >= 624 {
		m.twist()
	}
	y := m.state[m.i]
	m.i++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

func (m *mt19937) twist() {
	const upper, lower, matrix = 0x80000000, 0x7fffffff, 0x9908b0df
	for k := 0; k < 624; k++ {
		y := m.state[k]&upper | m.state[(k+1)%624]&lower
		v := m.state[(k+397)%624] ^ (y >> 1)
		if y&1 != 0 {
			v ^= matrix
		}
		m.state[k] = v
	}
	m.i = 0
}
