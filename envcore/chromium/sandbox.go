package chromium

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/webserv-rl/webserv/internal/procstat"
)

// DefaultUser is the account Chromium runs as when the server runs
// as root. scripts/setup.sh (make setup) creates it: a system user with no
// login shell, no home and no groups.
//
// Chromium's sandbox (a user and PID namespace and a seccomp filter around
// every renderer) cannot start as root, so a root server used to launch
// the browser with --no-sandbox: a page that exploited a renderer bug then
// ran as root on the host. As an unprivileged user the sandbox is on, and
// what escapes it is that user, not root.
const DefaultUser = "webserv-browser"

// browserAccount is who Chromium runs as.
type browserAccount struct {
	name     string
	uid, gid uint32
	// self: the server's own account (the server is not root), so the
	// browser starts as a plain child process, as any program would.
	self bool
}

// browserAccountFor is who Chromium runs as for opts: when this process is
// root, opts.User or DefaultUser (which must exist and must not be
// root); otherwise this process's own account (opts.User, when given, must
// name it: only root can start a process as someone else).
func browserAccountFor(opts Options) (*browserAccount, error) {
	return accountFor(opts.User, os.Geteuid())
}

func accountFor(name string, euid int) (*browserAccount, error) {
	if euid != 0 {
		me, err := user.LookupId(strconv.Itoa(euid))
		if name != "" && (err != nil || me.Username != name) && name != strconv.Itoa(euid) {
			return nil, fmt.Errorf("browser user %q: the server runs as uid %d, and only a server running as root can start Chromium as another user: leave the browser user unset", name, euid)
		}
		acct := &browserAccount{uid: uint32(euid), gid: uint32(os.Getegid()), self: true}
		if err == nil {
			acct.name = me.Username
		}
		return acct, nil
	}
	if name == "" {
		name = DefaultUser
	}
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("the server runs as root, so Chromium runs as the unprivileged user %q with its sandbox on, and there is no such user: run `make setup` (scripts/setup.sh creates %s), or `useradd --system --no-create-home --shell /usr/sbin/nologin %s`, or name another unprivileged user with --browser-user: %w", name, DefaultUser, name, err)
		}
		return nil, fmt.Errorf("look up browser user %q: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("browser user %q: uid %q, gid %q: %w", name, u.Uid, u.Gid, err)
	}
	if uid == 0 || gid == 0 {
		return nil, fmt.Errorf("browser user %q is root or has root's group (uid %d, gid %d): Chromium must run as an unprivileged user; name one with --browser-user or run `make setup` to create %s", name, uid, gid, DefaultUser)
	}
	return &browserAccount{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// credential is what exec.Cmd needs to start a process as a: nil for the
// server's own account; else a's uid and gid and no supplementary groups
// (root's would otherwise carry over).
func (a *browserAccount) credential() *syscall.Credential {
	if a.self {
		return nil
	}
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
}

// browserDirs are the directories one Chromium process writes to, all
// under one root that Close removes: its profile (--user-data-dir), and,
// when it runs as another user, the HOME and TMPDIR it is given, so that
// nothing it writes lands in the server's home or outlives it in /tmp.
type browserDirs struct {
	root, data, home, tmp string
}

// newBrowserDirs makes a fresh root under the system's temporary
// directory, owned by a and readable by nobody else.
func newBrowserDirs(a *browserAccount) (*browserDirs, error) {
	root, err := os.MkdirTemp("", "webserv-browser-")
	if err != nil {
		return nil, fmt.Errorf("make the browser's directory: %w", err)
	}
	d := &browserDirs{root: root, data: filepath.Join(root, "profile"), home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp")}
	fail := func(err error) (*browserDirs, error) {
		_ = os.RemoveAll(root)
		return nil, err
	}
	for _, dir := range []string{d.data, d.home, d.tmp} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fail(fmt.Errorf("make the browser's directory: %w", err))
		}
	}
	if err := writeOwner(root); err != nil {
		return fail(fmt.Errorf("make the browser's directory: %w", err))
	}
	if a.self {
		return d, nil
	}
	if err := reachable(filepath.Dir(root), a); err != nil {
		return fail(err)
	}
	for _, dir := range []string{root, d.data, d.home, d.tmp} {
		if err := os.Chown(dir, int(a.uid), int(a.gid)); err != nil {
			return fail(fmt.Errorf("give the browser's directory %s to user %s: %w", dir, a.name, err))
		}
	}
	return d, nil
}

// reachable checks that a can walk down to dir: every directory on the way
// must let others (or a's own uid) search it. A TMPDIR under /root would
// otherwise give the browser a profile it cannot open, and Chromium's own
// error says nothing of why.
func reachable(dir string, a *browserAccount) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("browser directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		ok = ok && (fi.Mode().Perm()&0o001 != 0 || (st.Uid == a.uid && fi.Mode().Perm()&0o100 != 0))
		if !ok {
			return fmt.Errorf("user %s, whom Chromium runs as, cannot enter %s (mode %v), on the way to its directory under %s: set TMPDIR to a directory everyone can enter, such as /tmp", a.name, p, fi.Mode().Perm(), dir)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// ownerFile, in a browser directory's root, names the server process that
// made it: its pid and start time (field 22 of /proc/<pid>/stat), so that a
// later launch can tell a directory whose server died without Close (a
// SIGKILL, a crash) from one in use, even once the pid is reused.
const ownerFile = "server"

// processStart is pid's start time, in clock ticks since boot ("" when the
// process is gone).
func processStart(pid int) string {
	p, err := procstat.ReadProcess(pid)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(p.Start, 10)
}

func writeOwner(root string) error {
	me := os.Getpid()
	return os.WriteFile(filepath.Join(root, ownerFile), []byte(strconv.Itoa(me)+" "+processStart(me)+"\n"), 0o600)
}

// removeStaleBrowserDirs removes the browser directories under parent
// whose server process is gone, and returns how many. Directories without
// an owner file (being made right now) are left alone.
func removeStaleBrowserDirs(parent string) int {
	dirs, _ := filepath.Glob(filepath.Join(parent, "webserv-browser-*"))
	n := 0
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, start, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		p, err := strconv.Atoi(pid)
		if err != nil || p <= 0 || processStart(p) == start && start != "" {
			continue
		}
		if os.RemoveAll(d) == nil {
			n++
		}
	}
	return n
}

func (d *browserDirs) remove() error {
	if err := os.RemoveAll(d.root); err != nil {
		return fmt.Errorf("remove the browser's directory: %w", err)
	}
	return nil
}

// browserEnvKeep are the variables of the server's environment a browser
// running as another user still gets: what finds programs and libraries,
// the locale and time zone, fonts, and the display for --show. Nothing
// else passes: the server's environment can hold secrets ($WEBSERV_TOKEN,
// cloud credentials) that a compromised renderer could read from its own
// memory.
var browserEnvKeep = []string{"PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
	"FONTCONFIG_FILE", "FONTCONFIG_PATH", "CHROMIUM_FLAGS"}

// browserEnv is the environment of Chromium run as a: the server's own
// for its own account (as any child process gets); else the variables of
// browserEnvKeep and a HOME, TMPDIR and XDG directories inside d.
func browserEnv(a *browserAccount, d *browserDirs, environ []string) []string {
	if a.self {
		return nil // exec.Cmd: the server's environment
	}
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		for _, keep := range browserEnvKeep {
			if k == keep || (strings.HasSuffix(keep, "*") && strings.HasPrefix(k, strings.TrimSuffix(keep, "*"))) {
				env = append(env, kv)
				break
			}
		}
	}
	return append(env, "HOME="+d.home, "TMPDIR="+d.tmp, "USER="+a.name, "LOGNAME="+a.name,
		"XDG_CONFIG_HOME="+filepath.Join(d.home, ".config"), "XDG_CACHE_HOME="+filepath.Join(d.home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(d.home, ".local", "share"))
}
