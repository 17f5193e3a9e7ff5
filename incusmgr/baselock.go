package incusmgr

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Several processes of one host may share an Incus daemon and so a site's
// base (servers, and `go test` running packages side by side): the base's
// name is the same in each. Without a lock between them, one process that
// finds the base container without its snapshot, because another is still
// preparing it, would delete it under the other (or fail to: "cannot remove
// a volume that has snapshots"). lockBase serialises the check and the
// preparation across processes with a file lock in the host's temporary
// directory; processes on other hosts sharing one remote daemon are not
// covered (each host prepares its own base name only if its definition
// differs).

// baseLockDir is where the base locks live.
func baseLockDir() string { return filepath.Join(os.TempDir(), "webserv-incus-locks") }

// lockBase takes the host-wide lock of the base called name, waiting until
// it is free or ctx ends; the returned func releases it.
func lockBase(ctx context.Context, name string) (func(), error) {
	dir := baseLockDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock the base %s: %w", name, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the base %s: %w", name, err)
	}
	got := make(chan error, 1)
	go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock the base %s: %w", name, err)
		}
		// Closing the file releases the lock.
		return func() { f.Close() }, nil
	case <-ctx.Done():
		go func() {
			<-got
			f.Close()
		}()
		return nil, fmt.Errorf("wait for another process preparing the base %s: %w", name, ctx.Err())
	}
}
