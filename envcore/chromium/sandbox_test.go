package chromium

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// uidFor is the uid accountFor gives name when the effective uid is euid,
// for tests of what a root server refuses when the test does not run as
// root.
func uidFor(name string, euid int) (uid int, err error) {
	a, err := accountFor(name, euid)
	if err != nil {
		return 0, err
	}
	return int(a.uid), nil
}

// browserUID is the uid Chromium should run as: the browser user's when
// the tests run as root, else the tests' own.
func browserUID(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return strconv.Itoa(os.Geteuid())
	}
	u, err := user.Lookup(DefaultUser)
	if err != nil {
		t.Fatalf("the tests run as root, so Chromium runs as %s, which must exist (make setup creates it): %v", DefaultUser, err)
	}
	return u.Uid
}

// A root server starts Chromium only as an existing unprivileged user and
// says how to make one; a server that is not root cannot switch users.
func TestBrowserUserChecks(t *testing.T) {
	t.Parallel()
	_, err := accountFor("webserv-no-such-user", 0)
	if err == nil || !strings.Contains(err.Error(), "make setup") || !strings.Contains(err.Error(), "useradd") || !strings.Contains(err.Error(), "webserv-no-such-user") {
		t.Errorf("a missing browser user: %v; want an error naming it and saying to run make setup or useradd", err)
	}
	if _, err := uidFor("root", 0); err == nil || !strings.Contains(err.Error(), "is root or has root's group") {
		t.Errorf("root as the browser user: %v; want it refused", err)
	}
	if _, err := uidFor(DefaultUser, 4242); err == nil || !strings.Contains(err.Error(), "only a server running as root") {
		t.Errorf("another user from a server that is not root: %v; want it refused", err)
	}
	if uid, err := uidFor("", 4242); err != nil || uid != 4242 {
		t.Errorf("a server that is not root: uid %d, %v; want its own uid 4242", uid, err)
	}
	if os.Geteuid() == 0 {
		uid, err := uidFor("", 0)
		if err != nil || strconv.Itoa(uid) != browserUID(t) {
			t.Errorf("the default browser user: uid %d, %v; want %s's %s", uid, err, DefaultUser, browserUID(t))
		}
	}
}

// A root server whose TMPDIR the browser's user cannot enter refuses to
// launch and says so, instead of Chromium failing on a profile it cannot
// open.
func TestBrowserDirectoryMustBeReachable(t *testing.T) {
	closed := filepath.Join(t.TempDir(), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", closed)
	p, err := Start(testCtx(t), zap.NewNop(), Bin(Options{}), Options{})
	if os.Geteuid() != 0 { // the browser runs as the tests' own user, who can enter it
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Stop(0)
		return
	}
	if err == nil {
		_ = p.Stop(0)
		t.Fatal("launched with a TMPDIR the browser's user cannot enter")
	}
	if !strings.Contains(err.Error(), "cannot enter "+closed) || !strings.Contains(err.Error(), "TMPDIR") {
		t.Errorf("error %q; want it to name %s and say to set TMPDIR", err, closed)
	}
	if left, _ := filepath.Glob(filepath.Join(closed, "webserv-browser-*")); len(left) != 0 {
		t.Errorf("the refused launch left %v", left)
	}
}

// A start removes the directories of browsers whose server died without
// closing them (SIGKILL, a crash), and leaves those of live servers and
// those being made.
func TestLaunchRemovesStaleBrowserDirectories(t *testing.T) {
	tmp := t.TempDir()
	for _, d := range []string{filepath.Dir(tmp), tmp} { // the browser's user walks through them
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	startOf := func(pid int) string {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))[19]
	}
	owners := map[string]string{
		"webserv-browser-dead":   strconv.Itoa(gone.ProcessState.Pid()) + " 12345",
		"webserv-browser-reused": "1 1", // pid 1 lives, but started at another time than this owner
		"webserv-browser-live":   "1 " + startOf(1),
		"webserv-browser-new":    "", // no owner file yet
	}
	for name, owner := range owners {
		if err := os.MkdirAll(filepath.Join(tmp, name, "profile"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(tmp, name, "server"), []byte(owner+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, err := Start(testCtx(t), zap.NewNop(), Bin(Options{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	own := p.Dir()
	for name, wantKept := range map[string]bool{"webserv-browser-dead": false, "webserv-browser-reused": false, "webserv-browser-live": true, "webserv-browser-new": true} {
		_, err := os.Stat(filepath.Join(tmp, name))
		if kept := err == nil; kept != wantKept {
			t.Errorf("%s (owner %q): kept = %v, want %v", name, owners[name], kept, wantKept)
		}
	}
	if filepath.Dir(own) != tmp {
		t.Errorf("the browser's directory %s is not under TMPDIR %s", own, tmp)
	}
	_ = p.Stop(0)
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("after Stop, %s is still there (%v)", own, err)
	}
}
