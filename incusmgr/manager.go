package incusmgr

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"
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
}

// Manager runs site instances as Incus containers cloned copy-on-write
// from a per-site base snapshot. It implements hosting.Backend.
type Manager struct {
	log   *zap.Logger
	c     incus.InstanceServer
	cfg   Config
	owner string

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

// Owner identifies this server process in instance labels.
func Owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%d", host, os.Getpid(), processStart(os.Getpid()))
}

// processStart is the start time of pid in clock ticks since boot (0 if
// unknown), so a reused pid is not taken for the same process.
func processStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// ownerAlive reports whether the owner label names a live process of
// this host. Owners on other hosts count as alive: they are not ours.
func ownerAlive(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	start, _ := strconv.ParseUint(parts[2], 10, 64)
	return processStart(pid) == start && start != 0
}

// GC deletes instances labelled by WebServ whose server is gone. With all,
// it deletes every WebServ instance, bases included. It returns their names.
func GC(ctx context.Context, c incus.InstanceServer, all bool) ([]string, error) {
	list, err := c.GetInstances(api.InstanceTypeContainer)
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	var removed []string
	var errs []error
	for _, in := range list {
		role := in.Config[labelRole]
		if role == "" {
			continue
		}
		if !all && (role != "instance" || ownerAlive(in.Config[labelOwner])) {
			continue
		}
		if err := deleteInstance(ctx, c, in.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, in.Name)
	}
	return removed, errors.Join(errs...)
}

func deleteInstance(ctx context.Context, c incus.InstanceServer, name string) error {
	if op, err := c.UpdateInstanceState(name, api.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
		_ = op.WaitContext(ctx)
	}
	op, err := c.DeleteInstance(name)
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil {
		// Another process (a second gc, a server's own cleanup) may be
		// deleting it at the same moment: gone is gone.
		if api.StatusErrorCheck(err, 404) {
			return nil
		}
		for i := 0; i < 100 && ctx.Err() == nil; i++ {
			if _, _, gerr := c.GetInstance(name); api.StatusErrorCheck(gerr, 404) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
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

// ---- bases ------------------------------------------------------------------

// siteHash identifies a base: the site's definition and the image its alias
// points at now (fingerprint), so re-importing an image under the same
// alias prepares a new base.
func siteHash(site *hosting.Site, fingerprint string) string {
	b, _ := json.Marshal(struct {
		I *hosting.IncusRun
		P int
		E map[string]string
		S [][]string
		L hosting.Limits
		O string
		F string
	}{site.Incus, site.Port, site.Env, site.PostStart, site.Limits, site.Origin, fingerprint})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// base returns the copy source of site's base snapshot, preparing it once:
// a container from the site's image, started, post-start commands run,
// stopped, and snapshotted. A base whose definition changed is rebuilt.
func (m *Manager) base(ctx context.Context, site *hosting.Site) (string, error) {
	m.mu.Lock()
	if src, ok := m.bases[site.Name]; ok {
		m.mu.Unlock()
		return src, nil
	}
	lock := m.baseLocks[site.Name]
	if lock == nil {
		lock = &sync.Mutex{}
		m.baseLocks[site.Name] = lock
	}
	m.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	m.mu.Lock()
	src, ok := m.bases[site.Name]
	m.mu.Unlock()
	if ok {
		return src, nil
	}

	var fingerprint string
	if a, _, err := m.c.GetImageAlias(site.Incus.Image); err == nil {
		fingerprint = a.Target
	}
	hash := siteHash(site, fingerprint)
	// The name carries the definition's hash: two servers (or tests) with
	// different definitions of one site name each keep their own base,
	// instead of rebuilding, and so deleting, the other's under it.
	name := "webserv-base-" + site.Name + "-" + hash[:12]
	src = name + "/" + baseSnap
	if in, _, err := m.c.GetInstance(name); err == nil {
		if in.Config[labelHash] == hash {
			if _, _, err := m.c.GetInstanceSnapshot(name, baseSnap); err == nil {
				m.mu.Lock()
				m.bases[site.Name] = src
				m.mu.Unlock()
				return src, nil
			}
		}
		if err := deleteInstance(ctx, m.c, name); err != nil {
			return "", err
		}
	}
	t0 := time.Now()
	if err := m.prepareBase(ctx, site, name, hash); err != nil {
		_ = deleteInstance(context.Background(), m.c, name)
		return "", fmt.Errorf("prepare the base of site %s: %w", site.Name, err)
	}
	m.log.Info("base snapshot ready", zap.String("site", site.Name), zap.Duration("took", time.Since(t0)))
	m.mu.Lock()
	m.bases[site.Name] = src
	m.mu.Unlock()
	return src, nil
}

func (m *Manager) prepareBase(ctx context.Context, site *hosting.Site, name, hash string) error {
	cfg, err := m.containerConfig(site)
	if err != nil {
		return err
	}
	cfg[labelRole], cfg[labelSite], cfg[labelHash] = "base", site.Name, hash
	req := api.InstancesPost{
		Name: name, Type: api.InstanceTypeContainer, Start: true,
		Source:      api.InstanceSource{Type: "image", Alias: site.Incus.Image},
		InstancePut: api.InstancePut{Profiles: []string{}, Config: cfg, Devices: m.rootDevice()},
	}
	op, err := m.c.CreateInstance(req)
	if err != nil {
		return fmt.Errorf("create from image %q: %w (import it with `webserv image import`)", site.Incus.Image, err)
	}
	if err := op.WaitContext(ctx); err != nil {
		return fmt.Errorf("create from image %q: %w", site.Incus.Image, err)
	}
	err = m.ready(ctx, site, &container{name: name}, func(url string) error {
		for _, cmd := range site.PostStart {
			if err := m.exec(ctx, name, cmd, site.Origin); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if op, err := m.c.UpdateInstanceState(name, api.InstanceStatePut{Action: "stop", Timeout: 30, Force: true}, ""); err != nil {
		return fmt.Errorf("stop base: %w", err)
	} else if err := op.WaitContext(ctx); err != nil {
		return fmt.Errorf("stop base: %w", err)
	}
	op, err = m.c.CreateInstanceSnapshot(name, api.InstanceSnapshotsPost{Name: baseSnap})
	if err != nil {
		return fmt.Errorf("snapshot base: %w", err)
	}
	return op.WaitContext(ctx)
}

// containerConfig is the Incus config of a site's containers: the init
// command (the image's, from `webserv image import`, or the site's), its
// environment, working directory and limits.
func (m *Manager) containerConfig(site *hosting.Site) (map[string]string, error) {
	props := map[string]string{}
	if alias, _, err := m.c.GetImageAlias(site.Incus.Image); err == nil {
		if img, _, err := m.c.GetImage(alias.Target); err == nil {
			props = img.Properties
		}
	} else {
		return nil, fmt.Errorf("no incus image %q: import it with `webserv image import --alias %s IMAGE.tar`", site.Incus.Image, site.Incus.Image)
	}
	command := site.Incus.Command
	if len(command) == 0 && props[propCmd] != "" {
		_ = json.Unmarshal([]byte(props[propCmd]), &command)
	}
	cfg := map[string]string{}
	var raw []string
	if len(command) > 0 {
		raw = append(raw, "lxc.init.cmd = "+quoteInit(command))
	}
	if wd := props[propWorkdir]; wd != "" {
		raw = append(raw, "lxc.init.cwd = "+wd)
	}
	if len(raw) > 0 {
		cfg["raw.lxc"] = strings.Join(raw, "\n")
	}
	env := map[string]string{}
	if props[propEnv] != "" {
		_ = json.Unmarshal([]byte(props[propEnv]), &env)
	}
	for k, v := range site.Env {
		env[k] = v
	}
	for k, v := range env {
		cfg["environment."+k] = v
	}
	if site.Limits.Memory != "" {
		cfg["limits.memory"] = site.Limits.Memory
	}
	if site.Limits.CPU != "" {
		cfg["limits.cpu"] = site.Limits.CPU
	}
	if site.Limits.Processes > 0 {
		cfg["limits.processes"] = strconv.Itoa(site.Limits.Processes)
	}
	return cfg, nil
}

// quoteInit writes a command for lxc.init.cmd, which splits on spaces and
// honours double quotes.
func quoteInit(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"") {
			a = `"` + strings.ReplaceAll(a, `"`, `\"`) + `"`
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func (m *Manager) rootDevice() map[string]map[string]string {
	return map[string]map[string]string{"root": {"type": "disk", "path": "/", "pool": m.cfg.Pool}}
}

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

func (m *Manager) exec(ctx context.Context, name string, cmd []string, url string) error {
	args := make([]string, len(cmd))
	for i, a := range cmd {
		args[i] = strings.ReplaceAll(a, "{url}", url)
	}
	var out strings.Builder
	done := make(chan bool)
	op, err := m.c.ExecInstance(name, api.InstanceExecPost{Command: args, WaitForWS: true}, &incus.InstanceExecArgs{Stdout: &out, Stderr: &out, DataDone: done})
	if err != nil {
		return fmt.Errorf("post-start %q: %w", strings.Join(args, " "), err)
	}
	if err := op.WaitContext(ctx); err != nil {
		return fmt.Errorf("post-start %q: %w", strings.Join(args, " "), err)
	}
	<-done
	if code, ok := op.Get().Metadata["return"].(float64); ok && code != 0 {
		return fmt.Errorf("post-start %q exited %d: %s", strings.Join(args, " "), int(code), out.String())
	}
	return nil
}

// ---- containers -------------------------------------------------------------

// container is one running clone.
type container struct {
	name string
	pid  int
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
	req := api.InstancesPost{
		Name: name, Type: api.InstanceTypeContainer, Start: true,
		Source: api.InstanceSource{Type: "copy", Source: source, InstanceOnly: true},
		InstancePut: api.InstancePut{Profiles: []string{}, Devices: m.rootDevice(), Config: map[string]string{
			labelRole: "instance", labelSite: site.Name, labelOwner: m.owner, labelHash: "",
		}},
	}
	op, err := m.c.CreateInstance(req)
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil {
		_ = deleteInstance(context.Background(), m.c, name)
		return nil, fmt.Errorf("clone %s: %w", source, err)
	}
	c := &container{name: name}
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
