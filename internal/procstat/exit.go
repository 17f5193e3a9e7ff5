package procstat

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// WaitExit returns once process pid has ended (any process, not only a
// child: it waits on a pidfd, an event from the kernel, not a poll of
// /proc), or with ctx's error. A pid that is already gone returns nil.
func WaitExit(ctx context.Context, pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wait for process %d: %w", pid, err)
	}
	done := make(chan error, 1)
	go func() {
		defer unix.Close(fd)
		for {
			// A pidfd is readable once its process has ended.
			_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			done <- err
			return
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("wait for process %d: %w", pid, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("process %d still runs: %w", pid, ctx.Err())
	}
}
