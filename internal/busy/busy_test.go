package busy

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fatal records what a test would fail with and ends its goroutine, as
// testing.T's Fatalf does.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A test that saturates the host in make test's shared phase fails at
// once, saying where it belongs, and starts no spinner.
func TestSaturateRefusesTheSharedPhase(t *testing.T) {
	t.Setenv(PhaseEnv, "shared")
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Saturate(f, 2)
	}()
	<-done
	if !strings.Contains(f.msg, "scripts/exclusive-tests") {
		t.Fatalf("Saturate in the shared phase: %q, want a failure naming scripts/exclusive-tests", f.msg)
	}
}
