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
