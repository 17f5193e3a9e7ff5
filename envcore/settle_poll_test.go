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

// The idle window grows by how late the browser answers: a burst of load
// counts at once, fades within a few answers, is bounded, and a healthy
// host's answers (a millisecond or less) leave the window as configured.
func TestLagGraceFollowsHowLateTheBrowserAnswers(t *testing.T) {
	ms := time.Millisecond
	var l lagWatch
	l.observe(800 * time.Microsecond)
	if got := l.get(); got != 0 {
		t.Fatalf("a healthy host's answer adds %s to the window", got)
	}
	l.observe(90 * ms)
	if got := l.get(); got != 89*ms {
		t.Fatalf("a late answer adds %s, want 89ms at once", got)
	}
	l.observe(ms)
	l.observe(ms)
	if got := l.get(); got != 21*ms+500*time.Microsecond {
		t.Fatalf("after two prompt answers the grace is %s, want it halved twice", got)
	}
	l.observe(10 * time.Second)
	if got := l.get(); got != maxLagGrace-ms {
		t.Fatalf("a starved answer adds %s, want at most %s", got, maxLagGrace)
	}
}
