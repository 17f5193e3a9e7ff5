package envcore

import (
	"testing"
	"time"
)

// While a page is busy, settle asks it again when its work can first end:
// at a timer's due time, within the idle window for requests, never sooner
// than pollEvery, never later than the idle window or maxPoll.
func TestNextPollWaitsForTheWorkButNotPastTheIdleWindow(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		wake int64
		idle time.Duration
		want time.Duration
	}{
		{"a frame or message, any moment", 0, 500 * ms, pollEvery},
		{"a timer due in 120 ms", 120, 500 * ms, 121 * ms},
		{"a timer due in 2 s", 2000, 500 * ms, maxPoll},
		{"a timer due past a short idle window", 120, 50 * ms, 50 * ms},
		{"requests only", -1, 500 * ms, maxPoll},
		{"requests only, short idle window", -1, 100 * ms, 100 * ms},
		{"requests only, no idle window", -1, 0, pollEvery},
	} {
		if got := (pageSettle{Pending: 1, WakeMs: c.wake}).nextPoll(c.idle); got != c.want {
			t.Errorf("%s (wake_ms %d, idle %s): next poll after %s, want %s", c.name, c.wake, c.idle, got, c.want)
		}
	}
}

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
