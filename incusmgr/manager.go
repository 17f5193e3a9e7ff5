package incusmgr

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	incus "github.com/lxc/incus/v6/client"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting"
)

// Labels on every instance the manager creates (Incus user.* config keys).
const (
	labelRole  = "user.webserv.role"  // "base" or "instance"
	labelSite  = "user.webserv.site"  // site name
	labelOwner = "user.webserv.owner" // host:pid:start of the server that made it
	labelHash  = "user.webserv.hash"  // hash of the site definition (bases)
	baseSnap   = "base"
)

// Config configures the Incus connection and placement.
type Config struct {
	// Socket is the local daemon's unix socket ("" for the default).
	Socket string
	// Remote is an https:// URL of a remote Incus or cluster; when set,
	// ClientCert/ClientKey (and ServerCert unless the CA is trusted) are
	// PEM file paths.
	Remote                            string
	ClientCert, ClientKey, ServerCert string
	// Target places new instances on this cluster member.
	Target string
	// Pool is the storage pool (btrfs or ZFS, for copy-on-write clones).
	// Default "webserv".
	Pool string
	// Warm is how many started, ready instances to keep per site, so
	// Start and Reset rarely wait for a container to boot.
	Warm int
	// ExecHelper is the statically linked executable mounted into
	// containers to run their commands (exechelper.go): one that links this
	// package, such as the webserv binary or incusmgr/internal/exechelper
	// built with CGO_ENABLED=0. Default: this process's executable when it
	// is statically linked; else commands stream over Incus's exec
	// websockets (with a warning). A path given that cannot serve is an
	// error of Connect.
	ExecHelper string
}

// Manager runs site instances as Incus containers cloned copy-on-write
// from a per-site base snapshot. It implements hosting.Backend.
type Manager struct {
	log   *zap.Logger
	c     incus.InstanceServer
	cfg   Config
	owner string
	// helper is the executable mounted into containers to run commands
	// (exechelper.go); "" when commands use Incus's exec websockets.
	helper string

	mu        sync.Mutex
	bases     map[string]string // site -> "base-instance/snapshot"
	baseLocks map[string]*sync.Mutex
	warm      map[string]chan *container
	instances map[string]*Instance
	bg        sync.WaitGroup
	closing   chan struct{}
}

// Connect returns a manager on the configured Incus, after removing
// instances an earlier server on this host leaked (see GC).
func Connect(ctx context.Context, log *zap.Logger, cfg Config) (*Manager, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.Pool == "" {
		cfg.Pool = "webserv"
	}
	c, err := Client(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Target != "" {
		c = c.UseTarget(cfg.Target)
	}
	if _, _, err := c.GetStoragePool(cfg.Pool); err != nil {
		return nil, fmt.Errorf("incus storage pool %q: %w; create one with scripts/incus-setup.sh or `incus storage create %s btrfs`", cfg.Pool, err, cfg.Pool)
	}
	m := &Manager{
		log: log, c: c, cfg: cfg, owner: Owner(),
		bases: map[string]string{}, baseLocks: map[string]*sync.Mutex{},
		warm: map[string]chan *container{}, instances: map[string]*Instance{},
		closing: make(chan struct{}),
	}
	switch {
	case cfg.Remote != "" && cfg.ExecHelper != "":
		return nil, fmt.Errorf("incus: ExecHelper %s: a remote Incus cannot mount a file of this host; leave ExecHelper empty with Remote", cfg.ExecHelper)
	case cfg.ExecHelper != "":
		var why string
		if m.helper, why = helperExecutable(cfg.ExecHelper); m.helper == "" {
			return nil, fmt.Errorf("incus: ExecHelper cannot run commands in containers: %s; build it with CGO_ENABLED=0 (go build -o PATH ./incusmgr/internal/exechelper), or leave ExecHelper empty", why)
		}
	case cfg.Remote == "":
		exe, err := os.Executable()
		why := ""
		if err != nil {
			why = err.Error()
		} else {
			m.helper, why = helperExecutable(exe)
		}
		if m.helper == "" {
			log.Warn("commands in containers will stream their output over Incus's exec websockets, which can lose it on a loaded host", zap.String("why", why))
		}
	}
	if removed, err := GC(ctx, c, false); err != nil {
		log.Warn("collecting leaked instances failed", zap.Error(err))
	} else if len(removed) > 0 {
		log.Info("removed instances an earlier run leaked", zap.Strings("instances", removed))
	}
	return m, nil
}

// Client opens an Incus client for cfg: the local daemon, or cfg.Remote
// with its certificates. Its requests run under the context it was opened
// with, so that is the background, not a caller's ctx.
func Client(cfg Config) (incus.InstanceServer, error) {
	if cfg.Remote == "" {
		c, err := incus.ConnectIncusUnix(cfg.Socket, nil)
		if err != nil {
			return nil, fmt.Errorf("connect to the local incus daemon: %w; is incusd running? (scripts/incus-setup.sh starts it)", err)
		}
		return serialize(c), nil
	}
	read := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		b, err := os.ReadFile(p)
		return string(b), err
	}
	cert, err1 := read(cfg.ClientCert)
	key, err2 := read(cfg.ClientKey)
	srv, err3 := read(cfg.ServerCert)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("incus remote certificates: %w", err)
	}
	c, err := incus.ConnectIncus(cfg.Remote, &incus.ConnectionArgs{TLSClientCert: cert, TLSClientKey: key, TLSServerCert: srv})
	if err != nil {
		return nil, fmt.Errorf("connect to incus at %s: %w", cfg.Remote, err)
	}
	return serialize(c), nil
}

// Name is "incus".
func (m *Manager) Name() string { return "incus" }

// Start returns a ready instance of site, cloned from its base snapshot
// (prepared on first use).
func (m *Manager) Start(ctx context.Context, site *hosting.Site) (hosting.Instance, error) {
	if site.Incus == nil {
		return nil, fmt.Errorf("site %s has no incus image; it runs on the %s backend", site.Name, site.Backend())
	}
	source, err := m.base(ctx, site)
	if err != nil {
		return nil, err
	}
	p, err := newProxy(site.Port)
	if err != nil {
		return nil, err
	}
	c, err := m.take(ctx, site, source)
	if err != nil {
		p.close()
		return nil, err
	}
	in := &Instance{m: m, site: site, proxy: p, c: c}
	in.watch(c)
	p.point(c.pid)
	m.mu.Lock()
	m.instances[in.ID()] = in
	m.mu.Unlock()
	return in, nil
}

// Close deletes every instance this manager started and its warm pools.
func (m *Manager) Close(ctx context.Context) error {
	close(m.closing)
	m.mu.Lock()
	list := make([]*Instance, 0, len(m.instances))
	for _, in := range m.instances {
		list = append(list, in)
	}
	warm := m.warm
	m.warm = map[string]chan *container{}
	m.mu.Unlock()
	var errs []error
	for _, in := range list {
		errs = append(errs, in.Stop(ctx))
	}
	m.bg.Wait()
	for _, ch := range warm {
	drain:
		for {
			select {
			case c := <-ch:
				errs = append(errs, deleteInstance(ctx, m.c, c.name))
			default:
				break drain
			}
		}
	}
	return errors.Join(errs...)
}
