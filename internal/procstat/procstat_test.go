package procstat_test

import (
	"testing"
	"time"

	"github.com/webserv-rl/webserv/internal/procstat"
)

// A busy loop shows up as busy time, and busy time never exceeds the
// total.
func TestReadCountsWork(t *testing.T) {
	t0, err := procstat.Read()
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	d, err := procstat.Read()
	if err != nil {
		t.Fatal(err)
	}
	d = d.Sub(t0)
	if d.Busy < 100*time.Millisecond || d.Busy > d.Total || d.Share() <= 0 || d.Share() > 1 {
		t.Errorf("after 200 ms of spinning (%d turns): %+v, share %.2f", x, d, d.Share())
	}
}
