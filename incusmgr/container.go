package incusmgr

// Containers: launching a clone of a base, waiting until its site is
// ready, and the warm pool that keeps started clones at hand.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/lxc/incus/v6/shared/api"
	"github.com/webserv-rl/webserv/hosting"
	"go.uber.org/zap"
)

// pid is the container's init process (its network namespace is the
// proxy's way in).
func (m *Manager) pid(name string) (int, error) {
	st, _, err := m.c.GetInstanceState(name)
	if err != nil {
		return 0, fmt.Errorf("state of %s: %w", name, err)
	}
	if st.Pid <= 0 {
		return 0, fmt.Errorf("container %s is %s, not running; its init command may have exited (see `incus info --show-log %s`)", name, st.Status, name)
	}
	return int(st.Pid), nil
}

// container is one running clone.
type container struct {
	name   string
	pid    int
	helped bool // it has the exec helper's devices (exechelper.go)
}

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// launch clones source (a "instance/snapshot" path) into a new container,
// starts it and waits for the site's readiness probe.
func (m *Manager) launch(ctx context.Context, site *hosting.Site, source string) (*container, error) {
	name := "webserv-" + site.Name + "-" + randomSuffix()
	devices := m.rootDevice()
	helper, err := m.helperDevices(name)
	if err != nil {
		return nil, err
	}
	for k, v := range helper {
		devices[k] = v
	}
	cfg := map[string]string{labelRole: "instance", labelSite: site.Name, labelOwner: m.owner, labelHash: ""}
	for k, v := range site.Secrets { // the base has the rest (base.go)
		cfg["environment."+k] = v
	}
	req := api.InstancesPost{
		Name: name, Type: api.InstanceTypeContainer, Start: true,
		Source:      api.InstanceSource{Type: "copy", Source: source, InstanceOnly: true},
		InstancePut: api.InstancePut{Profiles: []string{}, Devices: devices, Config: cfg},
	}
	op, err := m.c.CreateInstance(req)
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil {
		_ = deleteInstance(context.Background(), m.c, name)
		return nil, fmt.Errorf("clone %s: %w", source, err)
	}
	c := &container{name: name, helped: helper != nil}
	if err := m.ready(ctx, site, c, nil); err != nil {
		_ = deleteInstance(context.Background(), m.c, name)
		return nil, err
	}
	return c, nil
}

// ready finds the container's init, brings its loopback up, waits for the
// site to answer and, if then is not nil, calls it with a URL that reaches
// the site while it runs.
func (m *Manager) ready(ctx context.Context, site *hosting.Site, c *container, then func(url string) error) error {
	pid, err := m.pid(c.name)
	if err != nil {
		return err
	}
	if err := loopbackUp(pid); err != nil {
		return err
	}
	c.pid = pid
	p, err := newProxy(site.Port)
	if err != nil {
		return err
	}
	defer p.close()
	p.point(pid)
	if err := hosting.WaitReady(ctx, p.url(), site.Ready); err != nil {
		return fmt.Errorf("container %s: %w", c.name, err)
	}
	if then != nil {
		return then(p.url())
	}
	return nil
}

// take returns a ready container of site: from the warm pool when one is
// waiting, otherwise launched now. Either way the pool is refilled in the
// background.
func (m *Manager) take(ctx context.Context, site *hosting.Site, source string) (*container, error) {
	if m.cfg.Warm <= 0 {
		return m.launch(ctx, site, source)
	}
	m.mu.Lock()
	ch := m.warm[site.Name]
	if ch == nil {
		ch = make(chan *container, m.cfg.Warm)
		m.warm[site.Name] = ch
	}
	m.mu.Unlock()
	defer m.refill(site, source, ch)
	select {
	case c := <-ch:
		return c, nil
	default:
		return m.launch(ctx, site, source)
	}
}

func (m *Manager) refill(site *hosting.Site, source string, ch chan *container) {
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		for len(ch) < cap(ch) {
			select {
			case <-m.closing:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			c, err := m.launch(ctx, site, source)
			cancel()
			if err != nil {
				m.log.Warn("warm pool refill failed", zap.String("site", site.Name), zap.Error(err))
				return
			}
			select {
			case ch <- c:
			default:
				_ = deleteInstance(context.Background(), m.c, c.name)
				return
			}
		}
	}()
}

// drop deletes a container in the background (a reset does not wait).
func (m *Manager) drop(name string) {
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := deleteInstance(ctx, m.c, name); err != nil {
			m.log.Warn("delete container", zap.String("name", name), zap.Error(err))
		}
	}()
}
