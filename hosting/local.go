package hosting

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/webserv-rl/webserv/internal/procstat"
	"go.uber.org/zap"
)

// Local runs each instance as a child process on a free loopback port,
// with its own copy of the site's data directory (a reflink copy where the
// filesystem supports it). It needs nothing but the site's command.
type Local struct {
	log  *zap.Logger
	root string

	mu        sync.Mutex
	instances map[string]*localInstance
}

// NewLocal keeps instance data under root (created if missing).
func NewLocal(log *zap.Logger, root string) (*Local, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	return &Local{log: log, root: root, instances: map[string]*localInstance{}}, nil
}

// Name is "local".
func (l *Local) Name() string { return "local" }

// Start copies the site's data directory and starts the site on it.
func (l *Local) Start(ctx context.Context, site *Site) (Instance, error) {
	if site.Local == nil {
		return nil, fmt.Errorf("site %s has no local command; it runs on the %s backend", site.Name, site.Backend())
	}
	return l.start(ctx, site, site.path(site.Local.DataDir))
}

func (l *Local) start(ctx context.Context, site *Site, from string) (*localInstance, error) {
	id := site.Name + "-" + randomHex(4)
	dir := filepath.Join(l.root, id)
	in := &localInstance{l: l, site: site, id: id, dir: dir, data: filepath.Join(dir, "data")}
	if err := copyTree(ctx, from, in.data); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := in.run(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	l.mu.Lock()
	l.instances[id] = in
	l.mu.Unlock()
	return in, nil
}

// Close stops every instance.
func (l *Local) Close(ctx context.Context) error {
	l.mu.Lock()
	list := make([]*localInstance, 0, len(l.instances))
	for _, in := range l.instances {
		list = append(list, in)
	}
	l.mu.Unlock()
	var errs []error
	for _, in := range list {
		errs = append(errs, in.Stop(ctx))
	}
	return errors.Join(errs...)
}

type localInstance struct {
	l    *Local
	site *Site
	id   string
	dir  string
	data string
	port atomic.Int32 // the loopback port; a restart may move it

	mu   sync.Mutex // serializes the instance's operations
	cmd  *exec.Cmd
	done chan struct{}

	watch atomic.Pointer[exitWatch] // the running process's
	died  atomic.Pointer[error]     // how the running process ended by itself (health.go)
}

// exitWatch is one run of the site's process: stopping is set before the
// instance ends it, so only an exit nobody asked for counts as a death.
type exitWatch struct {
	pid      int
	stopping atomic.Bool
}

func (in *localInstance) ID() string { return in.id }

// Pid is the site process's pid (0 when it is not running).
func (in *localInstance) Pid() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil || in.cmd.Process == nil {
		return 0
	}
	return in.cmd.Process.Pid
}
func (in *localInstance) URL() string { return "http://" + in.addr() }

func (in *localInstance) addr() string { return fmt.Sprintf("127.0.0.1:%d", in.port.Load()) }

// DialContext connects to the site where it listens now: routes that hold
// this dialer follow the instance when a restart moves its port.
func (in *localInstance) DialContext(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", in.addr())
}

// portAttempts bounds the retries of a start whose port was taken.
const portAttempts = 4

// run starts the site's process and waits for its readiness probe: on the
// instance's port (a restart keeps its URL), or a free one at first. A
// port is free when it is chosen but nothing holds it for the site: another
// process (any outgoing connection's ephemeral port, a second instance
// starting at once) may bind it first, and the site then exits. That start
// is tried again on a new port; every other failure is the site's and is
// reported with its log.
func (in *localInstance) run(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		port := int(in.port.Load())
		if port == 0 || attempt > 1 {
			p, err := freePort()
			if err != nil {
				return err
			}
			port = p
			in.port.Store(int32(port))
		}
		err := in.runOn(ctx, port)
		if err == nil || attempt == portAttempts || !errors.Is(err, errExited) || !portTaken(port) {
			return err
		}
		in.l.log.Info("site port taken before the site bound it; starting again on another",
			zap.String("instance", in.id), zap.Int("port", port), zap.Int("attempt", attempt))
	}
}

// errExited marks a site process that ended before it was ready.
var errExited = errors.New("the site's process exited")

// portTaken reports whether another process now listens on port.
func portTaken(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// runOn starts the site's process on port and waits for its readiness probe.
func (in *localInstance) runOn(ctx context.Context, port int) error {
	repl := strings.NewReplacer("{port}", fmt.Sprint(port), "{data}", in.data)
	args := make([]string, len(in.site.Local.Command))
	for i, a := range in.site.Local.Command {
		args[i] = repl.Replace(a)
	}
	if !strings.ContainsRune(args[0], '/') {
		if p, err := exec.LookPath(args[0]); err == nil {
			args[0] = p
		}
	} else {
		args[0] = in.site.path(args[0])
	}
	logf, err := os.OpenFile(filepath.Join(in.dir, "site.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("site log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = in.data
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PORT="+fmt.Sprint(port), "DATA_DIR="+in.data)
	for k, v := range in.site.InstanceEnv() {
		cmd.Env = append(cmd.Env, k+"="+repl.Replace(v))
	}
	// Its own process group, killed with the server: nothing outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start site %s (%s): %w", in.site.Name, args[0], err)
	}
	done := make(chan struct{})
	w := &exitWatch{pid: cmd.Process.Pid}
	in.died.Store(nil)
	go func() {
		_ = cmd.Wait()
		if !w.stopping.Load() {
			err := fmt.Errorf("%w: instance %s: the site's process (pid %d) exited (%s)", ErrDown, in.id, w.pid, cmd.ProcessState)
			in.died.Store(&err)
			in.l.log.Warn("site process exited by itself", zap.String("instance", in.id), zap.Int("pid", w.pid), zap.Stringer("state", cmd.ProcessState))
		}
		close(done)
	}()
	in.cmd, in.done = cmd, done
	in.watch.Store(w)

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-rctx.Done():
		}
	}()
	if err := WaitReady(rctx, in.URL(), in.site.Ready); err != nil {
		select {
		case <-done:
			if ctx.Err() == nil {
				err = fmt.Errorf("%w before it was ready (%s)", errExited, cmd.ProcessState)
			}
		default:
		}
		in.kill()
		return fmt.Errorf("site %s: %w; its log:\n%s", in.site.Name, err, tail(filepath.Join(in.dir, "site.log")))
	}
	if foreignListener(port, cmd.Process.Pid) {
		// Another process answered the probe (portowner.go); the site
		// will not get the port.
		in.kill()
		return fmt.Errorf("site %s: %w: another process answered on port %d before the site bound it", in.site.Name, errExited, port)
	}
	for _, c := range in.site.PostStart {
		if err := in.postStart(ctx, c); err != nil {
			in.kill()
			return err
		}
	}
	return nil
}

func (in *localInstance) postStart(ctx context.Context, c []string) error {
	if len(c) == 0 {
		return nil
	}
	repl := strings.NewReplacer("{url}", in.site.Origin, "{port}", fmt.Sprint(in.port.Load()), "{data}", in.data)
	args := make([]string, len(c))
	for i, a := range c {
		args[i] = repl.Replace(a)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = in.data
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("site %s: post-start %q: %w: %s", in.site.Name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// kill ends the process group and waits for the process.
func (in *localInstance) kill() {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	if w := in.watch.Load(); w != nil {
		w.stopping.Store(true)
	}
	pgid := in.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT) // a stopped (hung) site takes its SIGTERM now
	select {
	case <-in.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-in.done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // children that ignored SIGTERM
	in.cmd = nil
}

// Reset restarts the site on a fresh copy of the base data.
func (in *localInstance) Reset(ctx context.Context) error {
	return in.restart(ctx, in.site.path(in.site.Local.DataDir))
}

func (in *localInstance) restart(ctx context.Context, from string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.kill()
	if err := os.RemoveAll(in.data); err != nil {
		return fmt.Errorf("reset %s: %w", in.id, err)
	}
	if err := copyTree(ctx, from, in.data); err != nil {
		return err
	}
	return in.run(ctx)
}

// Snapshot stops the site's processes (its process group and every
// descendant, freeze.go) so the data directory does not change while it is
// copied, then resumes them.
func (in *localInstance) Snapshot(ctx context.Context, name string) error {
	if !ValidSnapshotName(name) {
		return fmt.Errorf("snapshot name %q: use letters, digits, - and _: %w", name, ErrBadSnapshotName)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	dst := filepath.Join(in.dir, "snapshots", name)
	_ = os.RemoveAll(dst)
	if in.cmd != nil {
		f, err := freezeTree(ctx, in.cmd.Process.Pid)
		if err != nil {
			return fmt.Errorf("snapshot %s of %s: %w", name, in.id, err)
		}
		defer f.thaw()
	}
	return copyTree(ctx, in.data, dst)
}

func (in *localInstance) snapshotDir(name string) (string, error) {
	d := filepath.Join(in.dir, "snapshots", name)
	if !ValidSnapshotName(name) {
		return "", fmt.Errorf("snapshot name %q: %w", name, ErrNoSnapshot)
	}
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("instance %s has no snapshot %q: %w", in.id, name, ErrNoSnapshot)
	}
	return d, nil
}

// Restore restarts the site on a copy of the snapshot.
func (in *localInstance) Restore(ctx context.Context, name string) error {
	d, err := in.snapshotDir(name)
	if err != nil {
		return err
	}
	return in.restart(ctx, d)
}

// Fork starts n instances on copies of the snapshot, in parallel.
func (in *localInstance) Fork(ctx context.Context, name string, n int) ([]Instance, error) {
	d, err := in.snapshotDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]Instance, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			f, err := in.l.start(ctx, in.site, d)
			if err != nil {
				errs[i] = fmt.Errorf("fork %d of %d: %w", i+1, n, err)
				return
			}
			out[i] = f
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, x := range out {
			if x != nil {
				_ = x.Stop(ctx)
			}
		}
		return nil, err
	}
	return out, nil
}

// Stop kills the process group and deletes the instance's directory.
func (in *localInstance) Stop(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.kill()
	in.l.mu.Lock()
	delete(in.l.instances, in.id)
	in.l.mu.Unlock()
	if err := os.RemoveAll(in.dir); err != nil {
		return fmt.Errorf("remove %s: %w", in.dir, err)
	}
	return nil
}

// copyTree copies src into dst (created), with reflinks where the
// filesystem can share blocks (btrfs, XFS) and a plain copy elsewhere.
func copyTree(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if src == "" {
		return nil
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("site data directory: %w", err)
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", src+"/.", dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w: %s", src, dst, err, bytes.TrimSpace(out))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Down is how the site's process ended, when it exited by itself.
func (in *localInstance) Down() error {
	if p := in.died.Load(); p != nil {
		return *p
	}
	return nil
}

// Check looks at the process now: one that is gone or a zombie not yet
// reaped has died, though its exit may not have been seen yet.
func (in *localInstance) Check(context.Context) error {
	if err := in.Down(); err != nil {
		return err
	}
	w := in.watch.Load()
	if w == nil || w.stopping.Load() {
		return fmt.Errorf("%w: instance %s has no running site process", ErrDown, in.id)
	}
	pid := w.pid
	p, err := procstat.ReadProcess(pid)
	if err != nil {
		return fmt.Errorf("%w: instance %s: the site's process (pid %d) is gone", ErrDown, in.id, pid)
	}
	if p.State == 'Z' || p.State == 'X' {
		return fmt.Errorf("%w: instance %s: the site's process (pid %d) exited", ErrDown, in.id, pid)
	}
	return nil
}
