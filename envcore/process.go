package envcore

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/go-rod/rod/lib/launcher"
	"github.com/ysmood/leakless"
)

// chromiumProcess is one running Chromium: started as its account, in a
// process group of its own, behind leakless (a small guard process that
// kills the browser if the server dies without closing it) when the
// platform has it.
//
// Rod's launcher builds the command line (newLauncher) but does not start
// the process: it offers no way to start it as another user.
type chromiumProcess struct {
	cmd  *exec.Cmd
	pid  int // the browser's own process (the guard's child)
	exit chan struct{}
	dirs *browserDirs
	out  *launcher.URLParser
	acct *browserAccount
	// sandboxed: started without --no-sandbox.
	sandboxed bool
}

// startChromium runs bin with l's switches as acct, its profile, HOME and
// TMPDIR in dirs, and returns the process and its DevTools WebSocket URL.
// ctx bounds the start only.
func startChromium(ctx context.Context, l *launcher.Launcher, bin string, acct *browserAccount, dirs *browserDirs, env []string) (*chromiumProcess, string, error) {
	args := l.FormatArgs()
	var guard *leakless.Launcher
	var cmd *exec.Cmd
	if leakless.Support() {
		guard = leakless.New()
		cmd = guard.Command(bin, args...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	out := launcher.NewURLParser().Context(ctx)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: acct.credential()}
	cmd.Env = env
	if !acct.self {
		cmd.Dir = dirs.home // the server's working directory may be closed to the browser's user
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	p := &chromiumProcess{cmd: cmd, pid: cmd.Process.Pid, exit: make(chan struct{}), dirs: dirs, out: out, acct: acct}
	go func() {
		_ = cmd.Wait()
		close(p.exit)
	}()
	if guard != nil {
		select {
		case p.pid = <-guard.Pid():
		case <-p.exit:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			p.abort()
			return nil, "", fmt.Errorf("start chromium: %w", ctx.Err())
		}
		if msg := guard.Err(); msg != "" || p.pid == cmd.Process.Pid {
			p.abort()
			return nil, "", fmt.Errorf("start chromium behind leakless: %s", firstNonEmpty(msg, "the guard process ended before starting the browser"))
		}
	}
	var u string
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case u = <-out.URL:
	case <-p.exit:
		err = out.Err()
	}
	if err == nil {
		u, err = launcher.ResolveURL(u)
	}
	if err != nil {
		p.abort()
		return nil, "", explainLaunchFailure(err, acct)
	}
	return p, u, nil
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
