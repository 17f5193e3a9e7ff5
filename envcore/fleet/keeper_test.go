package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Restarts in a row back off: the first is immediate, then 1 s doubling
// to a cap.
func TestRestartsBackOff(t *testing.T) {
	t.Parallel()
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := restartDelay(i + 1); got != w {
			t.Errorf("restart %d in a row: wait %s, want %s", i+1, got, w)
		}
	}
}

// Members that fail to start alike are said once, with how many; failures
// that differ are said per slot.
func TestStartErrorSaysWhichFailed(t *testing.T) {
	t.Parallel()
	noUser := errors.New(`user "webserv-chromium" does not exist`)
	if err := startError([]error{nil, nil}); err != nil {
		t.Errorf("no failures: %v; want nil", err)
	}
	err := startError([]error{noUser, errors.New(noUser.Error())})
	if err == nil || err.Error() != `start browser processes (2 of 2 failed): user "webserv-chromium" does not exist` || !errors.Is(err, noUser) {
		t.Errorf("two alike failures: %v; want them said once", err)
	}
	crashed := errors.New("chromium ended: exit status 1")
	err = startError([]error{noUser, nil, crashed})
	if err == nil || !strings.Contains(err.Error(), "start browser 1 of 3: "+noUser.Error()) || !strings.Contains(err.Error(), "start browser 3 of 3: "+crashed.Error()) ||
		strings.Contains(err.Error(), "browser 2 of 3") || !errors.Is(err, crashed) {
		t.Errorf("two different failures of three: %v; want each, by slot", err)
	}
}
