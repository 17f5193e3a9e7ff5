package procstat_test

import (
	"bufio"
	"os"
	"os/exec"
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

// A process's tree counts the CPU of its children, running and ended, and
// not that of unrelated processes; a process that does not exist is an
// error.
func TestTreeCPUCountsDescendants(t *testing.T) {
	// A shell that runs a busy child to its end, says so, and waits for
	// its input to close.
	cmd, ready := heldChild(t, `sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; echo done; read x`)
	<-ready
	tree, err := procstat.TreeCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if tree < 100*time.Millisecond {
		t.Errorf("a shell whose child counted to 300000: %s of CPU in its tree", tree)
	}
	own, err := procstat.TreeCPU(os.Getpid())
	if err != nil || own < tree {
		t.Errorf("the test process's tree (the shell's parent): %s, %v; want at least the shell's %s", own, err, tree)
	}
	if _, err := procstat.TreeCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

// A process's tree counts the memory its children hold; a process that
// does not exist is an error.
func TestTreeRSSCountsDescendants(t *testing.T) {
	before, err := procstat.TreeRSS(os.Getpid())
	if err != nil || before <= 0 {
		t.Fatalf("the test process's memory: %d, %v", before, err)
	}
	// A child that holds 64 MB of a string it built, says so, and waits
	// for its input to close.
	cmd, ready := heldChild(t, `x=$(head -c 67108864 /dev/zero | tr '\0' a); echo ready; read y; echo ${#x}`)
	<-ready
	tree, err := procstat.TreeRSS(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if tree < 64<<20 {
		t.Errorf("a shell holding a 64 MB string: %d MB in its tree", tree>>20)
	}
	if own, err := procstat.TreeRSS(os.Getpid()); err != nil || own < before+tree/2 {
		t.Errorf("the test process's tree (the shell's parent): %d MB, %v; want at least %d MB", own>>20, err, (before+tree/2)>>20)
	}
	if _, err := procstat.TreeRSS(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

// heldChild starts `sh -c script`, whose first line of output says it is
// ready and which then reads its input: ready is closed at that line, and
// the input is closed (the child ends) with the test.
func heldChild(t *testing.T, script string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		_, _ = bufio.NewReader(out).ReadString('\n')
	}()
	return cmd, ready
}
