package procstat_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/internal/procstat"
)

// WaitExit returns when the process ends, and not before.
func TestWaitExitWaitsForTheEnd(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := procstat.WaitExit(short, cmd.Process.Pid); err == nil {
		t.Fatal("WaitExit returned while the process ran")
	}
	_ = cmd.Process.Kill()
	<-reaped
	if err := procstat.WaitExit(context.Background(), cmd.Process.Pid); err != nil {
		t.Fatalf("after the process ended: %v", err)
	}
}

// TCPListeners finds the socket a process listens on.
func TestTCPListenersFindsAListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := procstat.TCPListeners([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[os.Getpid()]) == 0 {
		t.Fatalf("no listener found for this process, which listens on %s", l.Addr())
	}
}
