package envcore

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-rod/rod/lib/launcher"
	"github.com/ysmood/leakless"
)

// chromiumProcess is one running Chromium: started as its account, in a
// process group of its own, behind leakless (a small guard process that
// kills the browser if the server dies without closing it) when the
// platform has it, with its DevTools protocol on a pipe (pipe.go).
//
// Rod's launcher builds the command line (newLauncher) but does not start
// the process: it offers no way to start it as another user, nor to hand
// it the pipe's file descriptors.
type chromiumProcess struct {
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
func startChromium(ctx context.Context, l *launcher.Launcher, bin string, acct *browserAccount, dirs *browserDirs, env []string) (*chromiumProcess, error) {
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
	p := &chromiumProcess{cmd: cmd, pid: cmd.Process.Pid, exit: make(chan struct{}), dirs: dirs, out: out, acct: acct, conn: conn}
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

// stop ends the process (after grace for it to exit on its own, as after
// Browser.close), then removes its directories.
func (p *chromiumProcess) stop(grace time.Duration) error {
	select {
	case <-p.exit:
	case <-time.After(grace):
	}
	p.kill()
	select {
	case <-p.exit:
	case <-time.After(5 * time.Second):
		return errors.New("chromium did not exit 5 s after SIGKILL")
	}
	return p.dirs.remove()
}

// abort kills a process that failed to start and waits (briefly) for it
// to end, so its directories can go.
func (p *chromiumProcess) abort() {
	p.kill()
	select {
	case <-p.exit:
	case <-time.After(5 * time.Second):
	}
}

// kill sends SIGKILL to the browser's process group (its zygotes,
// renderers and helpers) and to the guard's.
func (p *chromiumProcess) kill() {
	if p.pid > 0 {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}
