package envcore_test

import (
	"bytes"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/envcore/chromium"
)

// chromiumProc is what /proc says of one process of a browser's tree.
type chromiumProc struct {
	pid        int
	cmdline    string
	uids, gids []string // real, effective, saved, filesystem
	groups     string
	seccomp    string // 2: a seccomp-bpf filter confines it
	noNewPrivs string
	pidNS      int // how many PID namespaces deep it is (1: the host's)
}

func (p chromiumProc) renderer() bool { return strings.Contains(p.cmdline, "--type=renderer") }

// browserTree is root and every process descended from it.
func browserTree(t testing.TB, root int) []chromiumProc {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	parent := map[int]int{}
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		st, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	var out []chromiumProc
	for pid := range parent {
		p := pid
		for p != 0 && p != root {
			p = parent[p]
		}
		if p != root {
			continue
		}
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue // ended meanwhile
		}
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		pr := chromiumProc{pid: pid, cmdline: string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))}
		for _, line := range strings.Split(string(status), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "Uid":
				pr.uids = strings.Fields(v)
			case "Gid":
				pr.gids = strings.Fields(v)
			case "Groups":
				pr.groups = v
			case "Seccomp":
				pr.seccomp = v
			case "NoNewPrivs":
				pr.noNewPrivs = v
			case "NSpid":
				pr.pidNS = len(strings.Fields(v))
			}
		}
		out = append(out, pr)
	}
	if len(out) == 0 {
		t.Fatalf("no process in the tree of pid %d", root)
	}
	return out
}

// browserUID is the uid Chromium should run as: the browser user's when
// the tests run as root, else the tests' own.
func browserUID(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return strconv.Itoa(os.Geteuid())
	}
	u, err := user.Lookup(chromium.DefaultUser)
	if err != nil {
		t.Fatalf("the tests run as root, so Chromium runs as %s, which must exist (make setup creates it): %v", chromium.DefaultUser, err)
	}
	return u.Uid
}

// checkTree checks that every process of the browser runs as the browser
// user with no groups of root's, and that its renderers are (or, with the
// sandbox off, are not) in the sandbox: a PID namespace of their own and a
// seccomp filter.
func checkTree(t *testing.T, root int, sandboxed bool) {
	t.Helper()
	uid := browserUID(t)
	renderers := 0
	for _, p := range browserTree(t, root) {
		for i, id := range p.uids {
			if id != uid {
				t.Errorf("pid %d (%.90s): uid %d is %s, want %s: %v", p.pid, p.cmdline, i, id, uid, p.uids)
			}
		}
		if os.Geteuid() == 0 && (p.gids[0] == "0" || len(strings.Fields(p.groups)) != 0) {
			t.Errorf("pid %d (%.90s) kept root's groups: gid %v, groups %q", p.pid, p.cmdline, p.gids, p.groups)
		}
		if !p.renderer() {
			continue
		}
		renderers++
		confined := p.seccomp == "2" && p.pidNS > 1 && p.noNewPrivs == "1"
		if confined != sandboxed {
			t.Errorf("renderer %d: seccomp %s, %d PID namespaces deep, no_new_privs %s; sandboxed = %v, want %v", p.pid, p.seccomp, p.pidNS, p.noNewPrivs, confined, sandboxed)
		}
	}
	if renderers == 0 {
		t.Errorf("no renderer in the browser's process tree (pid %d)", root)
	}
}

// Chromium runs as an unprivileged user (the browser user when the tests
// run as root) and every renderer is in its sandbox.
func TestBrowserRunsUnprivilegedInItsSandbox(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	checkTree(t, envcore.BrowserPID(browser), true)
}

// The full browser (what --show runs) is sandboxed the same way.
func TestFullChromiumRunsInItsSandbox(t *testing.T) {
	t.Parallel()
	b, err := envcore.Launch(testCtx(t), zap.NewNop(), envcore.BrowserOptions{Bin: chromium.DefaultChromium})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env := b.NewEnv(envcore.Config{})
	defer env.Close()
	obs, _, err := env.Reset(testCtx(t), site.URL+"/a.html")
	if err != nil {
		t.Fatal(err)
	}
	if obs.URL != site.URL+"/a.html" {
		t.Errorf("the full browser is at %q, want the page", obs.URL)
	}
	checkTree(t, envcore.BrowserPID(b), true)
}

// --no-sandbox is an opt-in, through BrowserOptions.NoSandbox or a switch,
// and each logs a warning; the browser still runs as the browser user.
func TestNoSandboxIsOptInAndWarns(t *testing.T) {
	t.Parallel()
	for _, opts := range []envcore.BrowserOptions{{NoSandbox: true}, {Flags: []string{"--no-sandbox"}}} {
		core, logs := observer.New(zap.WarnLevel)
		b, err := envcore.Launch(testCtx(t), zap.New(core), opts)
		if err != nil {
			t.Fatal(err)
		}
		env := b.NewEnv(envcore.Config{})
		if _, _, err := env.Reset(testCtx(t), site.URL+"/a.html"); err != nil {
			t.Fatal(err)
		}
		checkTree(t, envcore.BrowserPID(b), false)
		warned := logs.FilterMessageSnippet("sandbox is off").Len()
		_ = env.Close()
		_ = b.Close()
		if warned != 1 {
			t.Errorf("%+v: %d warnings that the sandbox is off, want 1: %v", opts, warned, logs.All())
		}
	}
	// The sandboxed default warns of nothing.
	core, logs := observer.New(zap.WarnLevel)
	b, err := envcore.Launch(testCtx(t), zap.New(core), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if logs.Len() != 0 {
		t.Errorf("a sandboxed launch warned: %v", logs.All())
	}
}

// The browser's profile, HOME and TMPDIR are one directory that belongs to
// the browser's user and goes away on Close, with every process of the
// browser. A browser run as another user gets none of the server's other
// environment (which may hold secrets).
func TestBrowserDirectoryAndEnvironment(t *testing.T) {
	t.Setenv("WEBSERV_TOKEN", "not-for-the-browser")
	b, err := envcore.Launch(testCtx(t), zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env := b.NewEnv(envcore.Config{})
	defer env.Close()
	if _, _, err := env.Reset(testCtx(t), site.URL+"/a.html"); err != nil {
		t.Fatal(err)
	}
	dir, pid := envcore.BrowserDir(b), envcore.BrowserPID(b)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if owner := strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)); owner != browserUID(t) || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: owner uid %s, mode %v; want uid %s, 0700", dir, owner, fi.Mode().Perm(), browserUID(t))
	}
	profiles, _ := filepath.Glob(filepath.Join(dir, "profile", "*"))
	if len(profiles) == 0 {
		t.Errorf("Chromium wrote no profile under %s", dir)
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	vars := strings.Split(string(environ), "\x00")
	if os.Geteuid() == 0 {
		for _, kv := range vars {
			if strings.HasPrefix(kv, "WEBSERV_TOKEN=") {
				t.Errorf("the browser, run as %s, was given the server's %s", chromium.DefaultUser, kv)
			}
			if k, v, _ := strings.Cut(kv, "="); (k == "HOME" || k == "TMPDIR") && !strings.HasPrefix(v, dir+"/") {
				t.Errorf("%s=%s, want a directory under %s", k, v, dir)
			}
		}
	}
	tree := browserTree(t, pid)
	_ = env.Close()
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Close, %s is still there (%v)", dir, err)
	}
	for _, p := range tree {
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline"); err == nil && bytes.Equal(bytes.ReplaceAll(st, []byte{0}, []byte{' '}), []byte(p.cmdline)) {
			t.Errorf("after Close, pid %d (%.90s) still runs", p.pid, p.cmdline)
		}
	}
}
