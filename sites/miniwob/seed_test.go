package miniwob

import "testing"

// The expected values are NumPy's (2.4.6):
// np.random.RandomState(seed).randint(0, 1000000).
func TestPageSeedIsNumPysFirstRandint(t *testing.T) {
	for seed, want := range map[int64]int64{0: 985772, 1: 128037, 2: 875688, 3: 71530, 42: 121958, 12345: 741858, 4294967295: 944547} {
		got, err := PageSeed(seed)
		if err != nil || got != want {
			t.Errorf("PageSeed(%d) = %d, %v; want %d", seed, got, err, want)
		}
	}
	for _, bad := range []int64{-1, 1 << 32} {
		if _, err := PageSeed(bad); err == nil {
			t.Errorf("PageSeed(%d) took a seed NumPy refuses", bad)
		}
	}
}
