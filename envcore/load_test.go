package envcore_test

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// spinEnv, set in a child of the test binary, makes TestMain spin on one
// core until the Unix time in nanoseconds it holds, or until its parent
// is gone, instead of running tests (saturate).
const spinEnv = "WEBSERV_TEST_SPIN_UNTIL"

// maxSaturation bounds how long a spinner runs whatever happens to the
// test that started it.
const maxSaturation = 10 * time.Minute

// saturate keeps n cores busy until t and its subtests end: n processes
// that spin, each stopping by itself at maxSaturation or once its parent
// is gone.
func saturate(t *testing.T, n int) {
	t.Helper()
	until := strconv.FormatInt(time.Now().Add(maxSaturation).UnixNano(), 10)
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), spinEnv+"="+until)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a busy process: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}

// spinIfAsked is TestMain's first call: in a process saturate started, it
// spins and exits.
func spinIfAsked() {
	v := os.Getenv(spinEnv)
	if v == "" {
		return
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	until, parent := time.Unix(0, ns), os.Getppid()
	for time.Now().Before(until) && os.Getppid() == parent {
		x := 0
		for i := 0; i < 10_000_000; i++ {
			x += i
		}
		_ = x
	}
	os.Exit(0)
}
