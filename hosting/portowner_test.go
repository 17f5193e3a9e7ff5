package hosting

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// The listener of a port is told apart by who holds it: this process's own
// is not foreign to itself, and is foreign to an unrelated process (as a
// second instance's site that lost the bind to the first).
func TestForeignListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if foreignListener(port, os.Getpid()) {
		t.Errorf("this process's own listener on %d is foreign to it", port)
	}
	other := exec.Command("sleep", "600")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	if !foreignListener(port, other.Process.Pid) {
		t.Errorf("the listener on %d, this test's, is not foreign to an unrelated process %d", port, other.Process.Pid)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	if foreignListener(freePort, other.Process.Pid) {
		t.Errorf("a port nobody listens on has a foreign listener")
	}
}
