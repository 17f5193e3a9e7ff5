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

// PhaseEnv is set by scripts/test.sh to the phase of `make test` that runs
// the test binary: "shared" (beside other tests) or "exclusive" (alone).
const PhaseEnv = "WEBSERV_TEST_PHASE"

// MaxSaturation bounds how long a spinner runs whatever happens to the
// test that started it.
const MaxSaturation = 10 * time.Minute

// Saturate keeps n cores busy until t and its subtests end: n processes
// that spin, each stopping by itself at MaxSaturation or once its parent
// is gone.
//
// A test that saturates the host must run where nothing else competes:
// under `make test` it is named in scripts/exclusive-tests, which runs it
// in the exclusive phase, and Saturate fails it in the shared phase
// (PhaseEnv says which).
func Saturate(t testing.TB, n int) {
	t.Helper()
	if os.Getenv(PhaseEnv) == "shared" {
		t.Fatalf("this test keeps %d cores busy, but it runs in make test's shared phase beside other tests: name it in scripts/exclusive-tests (docs/testing.md)", n)
	}
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
