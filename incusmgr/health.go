package incusmgr

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/webserv-rl/webserv/hosting"
)

// A container dies with its init process: `incus stop --force`, the site's
// server (PID 1 in the container) exiting, the OOM killer. Each instance
// watches its container's init through a pidfd, which turns readable when
// the process exits, waited on by the runtime's poller: no goroutine
// blocked in a system call, no request to the daemon. Check asks the
// daemon for the container's state.

// initWatch is one watched run of a container: stopping is set before the
// manager stops or replaces it, so only a death nobody asked for counts.
type initWatch struct {
	name     string
	pid      int
	f        *os.File
	stopping atomic.Bool
}

// watch starts watching c's init. An instance whose init cannot be
// watched (a kernel without pidfds) is left to Check and the readiness
// probe.
func (in *Instance) watch(c *container) {
	in.unwatch()
	fd, err := unix.PidfdOpen(c.pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		in.m.log.Debug("cannot watch a container's init", zap.String("container", c.name), zap.Error(err))
		return
	}
	w := &initWatch{name: c.name, pid: c.pid, f: os.NewFile(uintptr(fd), "pidfd")}
	in.died.Store(nil)
	in.watching.Store(w)
	go in.await(w)
}

// await waits for w's process to exit and records it as the instance's
// death unless the manager was stopping it.
func (in *Instance) await(w *initWatch) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(p, 0)
		exited = n > 0 && p[0].Revents&unix.POLLIN != 0
		return exited
	})
	if err != nil || !exited || w.stopping.Load() {
		return
	}
	derr := fmt.Errorf("%w: container %s stopped: its init process (pid %d) exited", hosting.ErrDown, w.name, w.pid)
	in.died.Store(&derr)
	in.m.log.Warn("container stopped by itself", zap.String("container", w.name), zap.Int("pid", w.pid))
}

// unwatch stops watching the current container: the manager is about to
// stop, restore or replace it.
func (in *Instance) unwatch() {
	if w := in.watching.Swap(nil); w != nil {
		w.stopping.Store(true)
		_ = w.f.Close()
	}
}

// Down is how the container died, when its init exited by itself.
func (in *Instance) Down() error {
	if p := in.died.Load(); p != nil {
		return *p
	}
	return nil
}

// Check asks the daemon for the container's state: it must be running
// (or frozen by a snapshot) with the init the instance knows.
func (in *Instance) Check(ctx context.Context) error {
	if err := in.Down(); err != nil {
		return err
	}
	in.mu.Lock()
	name, pid := in.c.name, in.c.pid
	in.mu.Unlock()
	st, _, err := in.m.c.GetInstanceState(name)
	if err != nil {
		return fmt.Errorf("%w: container %s: its state could not be read: %v", hosting.ErrDown, name, err)
	}
	if st.Status != "Running" && st.Status != "Frozen" {
		return fmt.Errorf("%w: container %s is %s", hosting.ErrDown, name, st.Status)
	}
	if int(st.Pid) != pid {
		return fmt.Errorf("%w: container %s was restarted (init pid %d, was %d)", hosting.ErrDown, name, st.Pid, pid)
	}
	return nil
}
