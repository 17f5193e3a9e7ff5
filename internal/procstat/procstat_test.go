package procstat_test

import (
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
	// A shell that runs a busy child to its end and then waits.
	cmd := exec.Command("sh", "-c", `sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; sleep 5`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var tree time.Duration
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		var err error
		if tree, err = procstat.TreeCPU(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if tree >= 100*time.Millisecond {
			break
		}
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
	// A child that holds 64 MB of a string it built, then waits.
	cmd := exec.Command("sh", "-c", `x=$(head -c 67108864 /dev/zero | tr '\0' a); sleep 5; echo ${#x}`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var tree int64
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && tree < 64<<20; time.Sleep(50 * time.Millisecond) {
		if tree, err = procstat.TreeRSS(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
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
