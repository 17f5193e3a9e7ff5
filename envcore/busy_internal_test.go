package envcore

import (
	"testing"
	"time"
)

// The CPU limit charges a page the main-thread CPU time it used without a
// break, not the wall time: a page spinning on a host whose other
// processes leave it a third of a core has used a third of what an idle
// host would charge, and one that takes a break starts over.
func TestBusyChargesCPUTimeNotWallTime(t *testing.T) {
	var tb tab
	at := time.Unix(1000, 0)
	sample := func(task, thread time.Duration) time.Duration {
		t.Helper()
		return tb.busySample(task, thread, at)
	}
	sample(0, 0)
	// Busy all the time (task time = wall time), a third of a core: 3 s of
	// wall are 1 s of CPU.
	for i := 1; i <= 3; i++ {
		at = at.Add(time.Second)
		got := sample(time.Duration(i)*time.Second, time.Duration(i)*time.Second/3)
		if want := time.Duration(i) * time.Second / 3; got != want {
			t.Fatalf("after %d s busy on a third of a core: charged %v, want %v (the CPU it used)", i, got, want)
		}
	}
	// A whole core for a second: charged in full.
	at = at.Add(time.Second)
	if got, want := sample(4*time.Second, 2*time.Second), 2*time.Second; got != want {
		t.Fatalf("a second on a whole core after that: charged %v, want %v", got, want)
	}
	// A break (tasks for half the interval) starts the run over.
	at = at.Add(time.Second)
	if got := sample(4*time.Second+500*time.Millisecond, 2*time.Second+500*time.Millisecond); got != 0 {
		t.Fatalf("after a break: charged %v, want 0", got)
	}
	if got := tb.busyFor(); got != 0 {
		t.Fatalf("busyFor after a break: %v", got)
	}
}
