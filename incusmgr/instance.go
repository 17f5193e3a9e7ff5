package incusmgr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/lxc/incus/v6/shared/api"

	"github.com/webserv-rl/webserv/hosting"
)

// Instance is one environment's container. Its URL is a loopback listener
// on the host that stays the same when Reset or Restore swap the container
// behind it.
type Instance struct {
	m     *Manager
	site  *hosting.Site
	proxy *proxy

	mu sync.Mutex
	c  *container

	watching atomic.Pointer[initWatch] // the current container's init (health.go)
	died     atomic.Pointer[error]     // how it died by itself
}

var _ hosting.Instance = (*Instance)(nil)

// ID is the current container's name.
func (in *Instance) ID() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.c.name
}

// URL is the instance's loopback address on the host.
func (in *Instance) URL() string { return in.proxy.url() }

// DialContext connects to the site's port inside the current container's
// network namespace, without the loopback listener's extra hop: an
// environment's route reaches the instance this way.
func (in *Instance) DialContext(ctx context.Context) (net.Conn, error) {
	in.proxy.mu.Lock()
	pid := in.proxy.pid
	in.proxy.mu.Unlock()
	if pid == 0 {
		return nil, fmt.Errorf("instance %s is not running; reset the environment", in.ID())
	}
	return dialIn(ctx, pid, fmt.Sprintf("127.0.0.1:%d", in.proxy.port))
}

// Reset swaps in a fresh clone of the base snapshot (a warm one when the
// pool has it) and deletes the old container in the background.
func (in *Instance) Reset(ctx context.Context) error {
	source, err := in.m.base(ctx, in.site)
	if err != nil {
		return err
	}
	c, err := in.m.take(ctx, in.site, source)
	if err != nil {
		return err
	}
	in.swap(c)
	return nil
}

func (in *Instance) swap(c *container) {
	in.watch(c)
	in.mu.Lock()
	old := in.c
	in.c = c
	in.mu.Unlock()
	in.proxy.point(c.pid)
	in.m.mu.Lock()
	delete(in.m.instances, old.name)
	in.m.instances[c.name] = in
	in.m.mu.Unlock()
	in.m.drop(old.name)
}

// Snapshot freezes the container (so its filesystem is consistent),
// snapshots it under name (replacing an older one) and thaws it.
func (in *Instance) Snapshot(ctx context.Context, name string) error {
	if !validSnapshot(name) {
		return fmt.Errorf("snapshot name %q: use letters, digits, - and _ (and not %q): %w", name, baseSnap, hosting.ErrBadSnapshotName)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	c := in.m.c
	cn := in.c.name
	if _, _, err := c.GetInstanceSnapshot(cn, name); err == nil {
		if op, err := c.DeleteInstanceSnapshot(cn, name); err == nil {
			_ = op.WaitContext(ctx)
		}
	}
	if err := in.m.state(ctx, cn, "freeze"); err != nil {
		return err
	}
	op, err := c.CreateInstanceSnapshot(cn, api.InstanceSnapshotsPost{Name: name})
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if uerr := in.m.state(ctx, cn, "unfreeze"); uerr != nil {
		err = errors.Join(err, uerr)
	}
	if err != nil {
		return fmt.Errorf("snapshot %s of %s: %w", name, cn, err)
	}
	return nil
}

// validSnapshot also keeps the base snapshot's name for the manager.
func validSnapshot(s string) bool { return s != baseSnap && hosting.ValidSnapshotName(s) }

func (in *Instance) checkSnapshot(name string) (string, error) {
	in.mu.Lock()
	cn := in.c.name
	in.mu.Unlock()
	if !validSnapshot(name) {
		return cn, fmt.Errorf("snapshot %q: %w", name, hosting.ErrNoSnapshot)
	}
	if _, _, err := in.m.c.GetInstanceSnapshot(cn, name); err != nil {
		return cn, fmt.Errorf("container %s has no snapshot %q: %w", cn, name, hosting.ErrNoSnapshot)
	}
	return cn, nil
}

// Restore stops the container, restores the snapshot and starts it again.
func (in *Instance) Restore(ctx context.Context, name string) error {
	cn, err := in.checkSnapshot(name)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	m := in.m
	in.unwatch()
	if err := m.state(ctx, cn, "stop"); err != nil {
		return err
	}
	inst, etag, err := m.c.GetInstance(cn)
	if err != nil {
		return fmt.Errorf("restore %s: %w", cn, err)
	}
	put := inst.Writable()
	put.Restore = name
	op, err := m.c.UpdateInstance(cn, put, etag)
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("restore %s to %s: %w", cn, name, err)
	}
	if err := m.state(ctx, cn, "start"); err != nil {
		return err
	}
	if err := m.ready(ctx, in.site, in.c, nil); err != nil {
		return err
	}
	in.proxy.point(in.c.pid)
	in.watch(in.c)
	return nil
}

// Fork clones the snapshot into n new instances, started in parallel.
func (in *Instance) Fork(ctx context.Context, name string, n int) ([]hosting.Instance, error) {
	cn, err := in.checkSnapshot(name)
	if err != nil {
		return nil, err
	}
	out := make([]hosting.Instance, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := in.m.launch(ctx, in.site, cn+"/"+name)
			if err != nil {
				errs[i] = err
				return
			}
			p, err := newProxy(in.site.Port)
			if err != nil {
				in.m.drop(c.name)
				errs[i] = err
				return
			}
			p.point(c.pid)
			f := &Instance{m: in.m, site: in.site, proxy: p, c: c}
			f.watch(c)
			in.m.mu.Lock()
			in.m.instances[c.name] = f
			in.m.mu.Unlock()
			out[i] = f
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, f := range out {
			if f != nil {
				_ = f.Stop(ctx)
			}
		}
		return nil, fmt.Errorf("fork %s of %s: %w", name, cn, err)
	}
	return out, nil
}

// Stop closes the listener and deletes the container.
func (in *Instance) Stop(ctx context.Context) error {
	in.unwatch()
	in.proxy.close()
	in.mu.Lock()
	cn := in.c.name
	in.mu.Unlock()
	in.m.mu.Lock()
	delete(in.m.instances, cn)
	in.m.mu.Unlock()
	return deleteInstance(ctx, in.m.c, cn)
}

// state changes a container's state: start, stop, freeze, unfreeze.
func (m *Manager) state(ctx context.Context, name, action string) error {
	req := api.InstanceStatePut{Action: action, Timeout: -1}
	if action == "stop" {
		req.Force = true
	}
	op, err := m.c.UpdateInstanceState(name, req, "")
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, name, err)
	}
	return nil
}
