package hosting

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// A local snapshot copies the instance's data directory while nothing of
// the site writes to it. SIGSTOP to the site's process group is not enough
// for every site: a database server's workers lead sessions of their own
// (PostgreSQL's backends and checkpointer call setsid) and would go on
// writing pages while they are copied, and a copy of files changing under
// it is no state the server can recover from. freezeTree stops the group
// and every descendant of the site's process, and waits until each one is
// stopped: the copy then sees the files as one moment left them (a crash
// image, which a database recovers from as after a power cut).

// freezeStopWait bounds the wait for the stopped processes to stop.
const freezeStopWait = 10 * time.Second

// frozen is a stopped process tree, to be resumed by thaw.
type frozen struct {
	pgid int
	pids []int
}

// freezeTree stops process group pgid (led by the site's process) and
// every descendant of it, and returns when all of them are stopped.
func freezeTree(ctx context.Context, pgid int) (*frozen, error) {
	f := &frozen{pgid: pgid}
	_ = syscall.Kill(-pgid, syscall.SIGSTOP)
	sent := map[int]bool{}
	deadline := time.Now().Add(freezeStopWait)
	wait := time.Millisecond
	for {
		procs := processTable()
		running := 0
		for p, pr := range procs {
			if !ours(procs, p, pgid) || pr.state == 'Z' || pr.state == 'X' {
				continue
			}
			if pr.pgrp != pgid && !sent[p] {
				// A worker in a session of its own (a fork of a stopped
				// process would be in the table by now).
				sent[p] = true
				f.pids = append(f.pids, p)
				_ = syscall.Kill(p, syscall.SIGSTOP)
			}
			if pr.state != 'T' && pr.state != 't' {
				running++
			}
		}
		if running == 0 {
			return f, nil
		}
		if time.Now().After(deadline) {
			f.thaw()
			return nil, fmt.Errorf("%d processes of the site (group %d) did not stop within %s for the snapshot", running, pgid, freezeStopWait)
		}
		select {
		case <-ctx.Done():
			f.thaw()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 20*time.Millisecond)
	}
}

// thaw resumes what freezeTree stopped.
func (f *frozen) thaw() {
	_ = syscall.Kill(-f.pgid, syscall.SIGCONT)
	for _, p := range f.pids {
		_ = syscall.Kill(p, syscall.SIGCONT)
	}
}
