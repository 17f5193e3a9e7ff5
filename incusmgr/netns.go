package incusmgr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Containers get no network device. The browser reaches a site through a
// loopback listener on the host, one per instance; each connection it
// accepts is dialed from inside the container's network namespace to the
// site's port on the container's own 127.0.0.1. An Incus proxy device does
// the same job but adds about a second to every start; this adds nothing
// to the start and a setns per connection.

// inNetns runs fn on a thread that has entered the network namespace of
// process pid, then moves the thread back. Sockets fn creates belong to
// that namespace for their whole life.
func inNetns(pid int, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own network namespace: %w", err)
	}
	defer orig.Close()
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open the container's network namespace: %w", err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter the container's network namespace (needs root): %w", err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is in the wrong namespace: keep it locked so the
		// runtime retires it instead of reusing it.
		return errors.Join(ferr, fmt.Errorf("leave the container's network namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// loopbackUp brings up the container's lo: with the site as PID 1 nothing
// else would, and connections to 127.0.0.1 inside fail.
func loopbackUp(pid int) error {
	return inNetns(pid, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("read lo flags: %w", err)
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("bring lo up: %w", err)
		}
		return nil
	})
}

// dialIn connects to addr as seen from inside the namespace of pid.
func dialIn(ctx context.Context, pid int, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(pid, func() error {
		// The socket is created here, on the locked thread; connecting
		// may finish on another thread, which does not matter.
		d := net.Dialer{Timeout: 5 * time.Second}
		var err error
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// proxy is an instance's loopback listener on the host.
type proxy struct {
	l    net.Listener
	port int // the site's port inside the container

	mu    sync.Mutex
	pid   int
	conns map[net.Conn]struct{}
}

func newProxy(port int) (*proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	p := &proxy{l: l, port: port, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *proxy) url() string { return "http://" + p.l.Addr().String() }

// point sends new connections to the container of pid and ends the ones
// open to the previous container.
func (p *proxy) point(pid int) {
	p.mu.Lock()
	old := p.conns
	p.pid, p.conns = pid, map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range old {
		_ = c.Close()
	}
}

func (p *proxy) close() {
	_ = p.l.Close()
	p.point(0)
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid == 0 {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *proxy) handle(c net.Conn) {
	p.mu.Lock()
	pid := p.pid
	p.mu.Unlock()
	if pid == 0 {
		_ = c.Close()
		return
	}
	in, err := dialIn(context.Background(), pid, fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c) || !p.track(in) {
		_ = c.Close()
		_ = in.Close()
		return
	}
	defer p.untrack(c)
	defer p.untrack(in)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(in, c)
	go pipe(c, in)
	<-done
	<-done
	_ = c.Close()
	_ = in.Close()
}
