package similar

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"idle", "idle_ms", 3}, {"kitten", "sitting", 3}, {"tokn", "token", 1},
		{"größe", "grösse", 2}, {"add-to-cart", "add-to-cart", 0}, {"", "abc", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
