package procstat_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/internal/procstat"
)

// A command name with spaces and parentheses does not shift the fields
// after it.
func TestParseStatCountsFieldsAfterTheName(t *testing.T) {
	line := "4242 (web (serv) 2) S 17 4240 4240 0 -1 4194560 300 0 0 0 250 50 7 3 20 0 9 0 123456 10000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	p, err := procstat.ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procstat.Process{PID: 4242, Parent: 17, Group: 4240, State: 'S', Start: 123456,
		CPU: 3 * time.Second, Children: 100 * time.Millisecond, RSS: 500 * int64(os.Getpagesize())}
	if p != want {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
	for _, bad := range []string{"", "4242 no parentheses S 1 2", "4242 (short) S 17 4240", "4242 (x) S seventeen 4240 4240 0 -1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 0 0"} {
		if _, err := procstat.ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) succeeded", bad)
		}
	}
}

// This process reads as itself: its parent and group, a start time that
// stays the same, before a child's; a process that is gone is an error.
func TestReadProcessReadsALiveProcess(t *testing.T) {
	me, err := procstat.ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if me.PID != os.Getpid() || me.Parent != os.Getppid() || me.Group != syscall.Getpgrp() || me.Start == 0 || me.State == 0 {
		t.Errorf("this process read as %+v (pid %d, parent %d, group %d)", me, os.Getpid(), os.Getppid(), syscall.Getpgrp())
	}
	again, err := procstat.ReadProcess(os.Getpid())
	if err != nil || again.Start != me.Start {
		t.Errorf("start time changed: %d then %d (%v)", me.Start, again.Start, err)
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child, err := procstat.ReadProcess(cmd.Process.Pid)
	if err != nil || child.Parent != os.Getpid() || child.Start < me.Start {
		t.Errorf("child read as %+v (%v); this process started at %d", child, err, me.Start)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if p, err := procstat.ReadProcess(cmd.Process.Pid); err == nil {
		t.Errorf("a reaped process read as %+v", p)
	}
}
