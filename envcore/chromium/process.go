package chromium

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/leakless"
)

// Process is one running Chromium: started as its account, in a
// process group of its own, behind leakless (a small guard process that
// kills the browser if the server dies without closing it) when the
// platform has it, with its DevTools protocol on a pipe (pipe.go).
//
// Rod's launcher builds the command line (newLauncher) but does not start
// the process: it offers no way to start it as another user, nor to hand
// it the pipe's file descriptors.
type Process struct {
	cmd  *exec.Cmd
	pid  int // the browser's own process (the guard's child)
	exit chan struct{}
	dirs *browserDirs
	out  *outputTail
	acct *browserAccount
	conn *pipeConn // DevTools: Chromium's fds 3 and 4
	// sandboxed: started without --no-sandbox.
	sandboxed bool
}

// startChromium runs bin with l's switches as acct, its profile, HOME and
// TMPDIR in dirs, its DevTools protocol on a pipe, and returns the
// process. ctx bounds the start only. The guard (leakless) gets the
// pipe's ends as its fds 3 and 4 and, having no close-on-exec flag on
// them, passes them to the browser it starts, as the chromium wrapper
// script does to the binary.
func startChromium(ctx context.Context, l *launcher.Launcher, bin string, acct *browserAccount, dirs *browserDirs, env []string) (*Process, error) {
	args := l.FormatArgs()
	var guard *leakless.Launcher
	var cmd *exec.Cmd
	if leakless.Support() {
		guard = leakless.New()
		cmd = guard.Command(bin, args...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	conn, theirs, err := devtoolsPipes()
	if err != nil {
		return nil, err
	}
	out := &outputTail{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: acct.credential()}
	cmd.Env = env
	if !acct.self {
		cmd.Dir = dirs.home // the server's working directory may be closed to the browser's user
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = theirs
	err = cmd.Start()
	for _, f := range theirs {
		_ = f.Close() // the browser's now: its end of file comes when the browser ends
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, pid: cmd.Process.Pid, exit: make(chan struct{}), dirs: dirs, out: out, acct: acct, conn: conn}
	go func() {
		_ = cmd.Wait()
		close(p.exit)
		// A child of the browser that outlives it must not keep the
		// connection open: its end is the browser's.
		conn.Close()
	}()
	if guard != nil {
		select {
		case p.pid = <-guard.Pid():
		case <-p.exit:
			// A browser that ends at once can end the guard before its
			// report of the browser's pid is read: take the report if it
			// comes (the guard's connection is closed, so it comes now or
			// never), so the error names the browser's end, not the guard's.
			select {
			case p.pid = <-guard.Pid():
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			p.abort()
			return nil, fmt.Errorf("start chromium: %w", ctx.Err())
		}
		if msg := guard.Err(); msg != "" || p.pid == cmd.Process.Pid {
			p.abort()
			return nil, fmt.Errorf("start chromium behind leakless: %s", firstNonEmpty(msg, "the guard process ended before starting the browser"))
		}
	}
	return p, nil
}

// outputTail keeps the last outputTailSize bytes Chromium wrote to its
// stdout and stderr, for the error of a launch that failed.
type outputTail struct {
	mu  sync.Mutex
	buf []byte
}

const outputTailSize = 8 << 10

func (o *outputTail) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	if len(o.buf) > outputTailSize {
		o.buf = append(o.buf[:0], o.buf[len(o.buf)-outputTailSize:]...)
	}
	return len(p), nil
}

func (o *outputTail) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.TrimSpace(string(o.buf))
}

// explainLaunchFailure adds what to do to a launch failure that came from
// Chromium's sandbox.
func explainLaunchFailure(err error, acct *browserAccount) error {
	if !strings.Contains(strings.ToLower(err.Error()), "sandbox") {
		return err
	}
	who := "the server's user"
	if !acct.self {
		who = "user " + acct.name
	}
	return fmt.Errorf("chromium's output speaks of its sandbox, which it starts as %s and which needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 on Debian kernels; in a container, a seccomp profile that allows clone/unshare of user namespaces; on Ubuntu, kernel.apparmor_restrict_unprivileged_userns=0). Only where that cannot be had, run with --no-sandbox (BrowserOptions.NoSandbox), which leaves every renderer unconfined: %w", who, err)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// PID is the process's id: the guard's child, which may be the wrapper
// script that starts the binary (MainPID is the browser itself).
func (p *Process) PID() int { return p.pid }

// Dir is the directory that holds the process's profile, HOME and TMPDIR,
// removed by Stop.
func (p *Process) Dir() string { return p.dirs.root }

// User names the account the process runs as.
func (p *Process) User() string { return p.acct.name }

// Sandboxed is whether the process was started with its sandbox on.
func (p *Process) Sandboxed() bool { return p.sandboxed }

// Pipe is the server's end of the DevTools pipe, for Connect.
func (p *Process) Pipe() cdp.WebSocketable { return p.conn }

// Closed is closed once the DevTools pipe is: the browser ended (on its
// own, or by Kill or Stop).
func (p *Process) Closed() <-chan struct{} { return p.conn.closed }

// Stop ends the process (after grace for it to exit on its own, as after
// Browser.close), then removes its directories.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exit:
	case <-time.After(grace):
	}
	p.Kill()
	select {
	case <-p.exit:
	case <-time.After(5 * time.Second):
		return errors.New("chromium did not exit 5 s after SIGKILL")
	}
	return p.dirs.remove()
}

// abort kills a process that failed to start and waits (briefly) for it
// to end, so its directories can go.
func (p *Process) abort() {
	p.Kill()
	select {
	case <-p.exit:
	case <-time.After(5 * time.Second):
	}
}

// Kill sends SIGKILL to the browser's process group (its zygotes,
// renderers and helpers) and to the guard's; Closed tells when it ended.
func (p *Process) Kill() {
	if p.pid > 0 {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// MainPID is Chromium's browser process, as Chromium itself names it
// over rb, p's DevTools connection. PID can be a wrapper (Debian's chromium and chromium-headless-shell
// are shell scripts that start the binary as their child), and no reading
// of /proc tells the browser from a process it has just forked: until
// that child execs (a zygote, a utility), it has the browser's own command
// line. On a loaded host that window is long, and a pid taken in it named
// such a child (the network service, a zygote), so a kill meant for the
// browser (a health report's, a test's) ended the child instead, and the
// browser lived on, without zygotes unable to start pages (StartsPages).
// When Chromium does not answer, PID is the best guess.
func (proc *Process) MainPID(ctx context.Context, rb *rod.Browser) int {
	info, err := proto.SystemInfoGetProcessInfo{}.Call(rb.Context(ctx))
	if err == nil {
		for _, p := range info.ProcessInfo {
			if p.Type == "browser" {
				return p.ID
			}
		}
	}
	return proc.pid
}

// Connect starts rod's CDP client on conn (proc's Pipe, or a wrapper of
// it), bound to life, and waits, within ctx, for the browser to answer its
// first command: a browser that ends before it does (a bad switch, a
// sandbox that cannot start) fails with what it printed.
func (proc *Process) Connect(ctx, life context.Context, conn cdp.WebSocketable) (*rod.Browser, error) {
	client := cdp.New().Start(conn)
	rb := rod.New().Client(client).Context(life)
	err := rb.Connect()
	if err == nil {
		_, err = proto.BrowserGetVersion{}.Call(rb.Context(ctx))
	}
	if err == nil {
		return rb, nil
	}
	// A browser that did not answer is usually ending (a pipe that broke on
	// read or on write): give it a moment to exit, so the error says what
	// it printed instead of the pipe's own complaint.
	select {
	case <-proc.exit:
	case <-time.After(5 * time.Second):
	}
	select {
	case <-proc.exit:
		err = fmt.Errorf("chromium ended before it answered on its DevTools pipe; it printed: %s", firstNonEmpty(proc.out.String(), "nothing"))
	default:
		err = fmt.Errorf("chromium did not answer on its DevTools pipe: %w (it printed: %s)", err, firstNonEmpty(proc.out.String(), "nothing"))
	}
	return nil, explainLaunchFailure(err, proc.acct)
}
