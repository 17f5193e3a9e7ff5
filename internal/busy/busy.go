// Package busy keeps a test's host saturated: tests of behaviour that must
// hold on a loaded machine (settle, commands in containers) run beside n
// spinning processes of their own, bounded in time and stopping when the
// test does.
//
// A test binary using Saturate calls SpinIfAsked first in its TestMain.
package busy

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// spinEnv, set in a child of the test binary, makes SpinIfAsked spin on
// one core until the Unix time in nanoseconds it holds, or until its
// parent is gone, instead of running tests.
const spinEnv = "WEBSERV_TEST_SPIN_UNTIL"

// MaxSaturation bounds how long a spinner runs whatever happens to the
// test that started it.
const MaxSaturation = 10 * time.Minute

// Saturate keeps n cores busy until t and its subtests end: n processes
// that spin, each stopping by itself at MaxSaturation or once its parent
// is gone.
func Saturate(t testing.TB, n int) {
	t.Helper()
	until := strconv.FormatInt(time.Now().Add(MaxSaturation).UnixNano(), 10)
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

// SpinIfAsked is TestMain's first call: in a process Saturate started, it
// spins and exits.
func SpinIfAsked() {
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
