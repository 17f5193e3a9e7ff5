package envcore

import (
	"testing"
	"time"
)

// A quiet page is asked again once the idle window has passed since its
// last event; events that arrived while the round asked the page (a
// navigation the question waited on) restart the window, never lengthen it
// (a step used to return up to a second past its content after a
// navigation).
func TestQuietWaitIsAtMostOneIdleWindow(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name        string
		idle, quiet time.Duration
		want        time.Duration
	}{
		{"just quiet", 50 * ms, 0, 50 * ms},
		{"quiet for part of the window", 50 * ms, 20 * ms, 30 * ms},
		{"events during the round", 50 * ms, -900 * ms, 50 * ms},
	} {
		if got := quietWait(c.idle, c.quiet); got != c.want {
			t.Errorf("%s (idle %s, quiet %s): waits %s, want %s", c.name, c.idle, c.quiet, got, c.want)
		}
	}
}
