// Package hostingtest checks that a hosting.Backend behaves as the
// environments expect. Both backends run the same Conformance test against
// internal/testsite, a server whose whole state is one file.
package hostingtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
)

// BuildTestSite compiles internal/testsite as a static binary into dir.
func BuildTestSite(t testing.TB, dir string) string {
	return BuildStatic(t, "internal/testsite", filepath.Join(dir, "testsite"))
}

// BuildStatic compiles the repository's package pkg (a path like
// "sites/shop/cmd/shop") as a static binary at out, for the local backend
// and for container images alike. A test process builds each package once:
// later calls link the first build at out (linking a static binary costs
// more than a second of CPU, and the server's tests ask for the shop a
// dozen times).
func BuildStatic(t testing.TB, pkg, out string) string {
	t.Helper()
	bin, err := builds.get(pkg)
	if err == nil {
		err = linkOrCopy(bin, out)
	}
	if err != nil {
		t.Fatalf("build %s: %v", pkg, err)
	}
	return out
}

// builds holds the binaries this test process has built, in a directory
// of their own that RemoveBuilds deletes.
var builds = &buildCache{bins: map[string]*build{}}

type buildCache struct {
	mu   sync.Mutex
	dir  string
	bins map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

func (c *buildCache) get(pkg string) (string, error) {
	c.mu.Lock()
	if c.dir == "" {
		d, err := os.MkdirTemp("", "webserv-testbin-")
		if err != nil {
			c.mu.Unlock()
			return "", err
		}
		c.dir = d
	}
	b := c.bins[pkg]
	if b == nil {
		b = &build{path: filepath.Join(c.dir, filepath.Base(pkg)+"-"+fmt.Sprint(len(c.bins)))}
		c.bins[pkg] = b
	}
	c.mu.Unlock()
	b.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", b.path, "./"+pkg)
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	return b.path, b.err
}

// Main runs a package's tests and then RemoveBuilds, for a TestMain that
// needs nothing else: func TestMain(m *testing.M) { os.Exit(hostingtest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	RemoveBuilds()
	return code
}

// RemoveBuilds deletes what BuildStatic built; a TestMain calls it after
// the tests (the binaries handed out stay, as links of their own).
func RemoveBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir, builds.bins = "", map[string]*build{}
}

// linkOrCopy puts src at dst: a hard link where the file system allows
// one, a copy otherwise.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Get fetches url and returns its body.
func Get(t testing.TB, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func state(t testing.TB, in hosting.Instance) string {
	t.Helper()
	return Get(t, in.URL()+"/")
}

func set(t testing.TB, in hosting.Instance, v string) {
	t.Helper()
	if got := Get(t, in.URL()+"/set?v="+v); got != "ok" {
		t.Fatalf("set %s on %s: %q", v, in.ID(), got)
	}
}

// Conformance runs the behaviour every backend must have. site must run
// internal/testsite with base state "base".
func Conformance(t *testing.T, b hosting.Backend, site *hosting.Site) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Ten instances, started concurrently, each mutated.
	const n = 10
	insts := make([]hosting.Instance, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			insts[i], errs[i] = b.Start(ctx, site)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, in := range insts {
			if in != nil {
				_ = in.Stop(ctx)
			}
		}
	}()
	urls := map[string]bool{}
	for i, in := range insts {
		if got := state(t, in); got != "state=base" {
			t.Fatalf("instance %d starts in %q, want the base state", i, got)
		}
		urls[in.URL()] = true
		set(t, in, fmt.Sprintf("mine-%d", i))
	}
	if len(urls) != n {
		t.Fatalf("instances share URLs: %v", urls)
	}
	// Isolation: no instance sees another's change.
	for i, in := range insts {
		if got, want := state(t, in), fmt.Sprintf("state=mine-%d", i); got != want {
			t.Errorf("instance %d: %q, want %q", i, got, want)
		}
	}

	// Reset one: back to base; the others keep theirs.
	url0 := insts[0].URL()
	if err := insts[0].Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if insts[0].URL() != url0 {
		t.Errorf("reset changed the URL: %s -> %s", url0, insts[0].URL())
	}
	if got := state(t, insts[0]); got != "state=base" {
		t.Errorf("after reset: %q", got)
	}
	if got := state(t, insts[1]); got != "state=mine-1" {
		t.Errorf("a reset disturbed another instance: %q", got)
	}

	// Snapshot a running instance, change it, fork 4 from the snapshot.
	if err := insts[2].Snapshot(ctx, "checkout"); err != nil {
		t.Fatal(err)
	}
	set(t, insts[2], "after-snapshot")
	forks, err := insts[2].Fork(ctx, "checkout", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, f := range forks {
			_ = f.Stop(ctx)
		}
	}()
	if len(forks) != 4 {
		t.Fatalf("fork returned %d instances", len(forks))
	}
	for i, f := range forks {
		if got := state(t, f); got != "state=mine-2" {
			t.Errorf("fork %d starts in %q, want the snapshot's state", i, got)
		}
	}
	set(t, forks[0], "fork-0")
	if got := state(t, forks[1]); got != "state=mine-2" {
		t.Errorf("forks share state: %q", got)
	}
	if got := state(t, insts[2]); got != "state=after-snapshot" {
		t.Errorf("forking changed the parent: %q", got)
	}

	// Restore goes back to the snapshot; an unknown name is a clear error.
	if err := insts[2].Restore(ctx, "checkout"); err != nil {
		t.Fatal(err)
	}
	if got := state(t, insts[2]); got != "state=mine-2" {
		t.Errorf("after restore: %q", got)
	}
	if err := insts[2].Restore(ctx, "nope"); !errors.Is(err, hosting.ErrNoSnapshot) {
		t.Errorf("restore of an unknown snapshot: %v", err)
	}
	if _, err := insts[2].Fork(ctx, "nope", 1); !errors.Is(err, hosting.ErrNoSnapshot) {
		t.Errorf("fork of an unknown snapshot: %v", err)
	}

	// Stop: the instance no longer answers.
	url3 := insts[3].URL()
	if err := insts[3].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	insts[3] = nil
	c := &http.Client{Timeout: 2 * time.Second}
	if resp, err := c.Get(url3 + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("a stopped instance still answers at %s", url3)
	}
}

// LocalSite builds internal/testsite and returns a validated local site
// definition for it, with base state "base" in a data directory under a
// test temp dir.
func LocalSite(t testing.TB) *hosting.Site {
	t.Helper()
	dir := t.TempDir()
	bin := BuildTestSite(t, dir)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "state"), []byte("base"), 0o644); err != nil {
		t.Fatal(err)
	}
	def := "name: testsite\ndescription: one-file state\nlocal:\n  command: [" + bin + "]\n  data_dir: data\nready:\n  path: /ready\n"
	if err := os.WriteFile(filepath.Join(dir, "testsite.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := hosting.LoadSite(filepath.Join(dir, "testsite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ExecConformance checks a backend's hosting.Execer: prog is the test
// site's program as the instance sees it, file a path (as FetchFile takes
// it) a command may write. A command's status and output come back as its
// result, not as an error; running past the timeout or writing more than
// the bound is an error; a written file can be fetched.
func ExecConformance(t *testing.T, b hosting.Backend, site *hosting.Site, prog, file string) {
	ctx := t.Context()
	in, err := b.Start(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Stop(context.WithoutCancel(ctx))
	ex, ok := in.(hosting.Execer)
	if !ok {
		t.Fatalf("%s instances cannot run commands", b.Name())
	}
	res, err := ex.Exec(ctx, hosting.ExecRequest{Command: []string{prog, "exec-say", "hello"}, Env: map[string]string{"X": "there", "CODE": "3"}})
	if err != nil || res.ExitCode != 3 || string(res.Stdout) != "hello there\n" || string(res.Stderr) != "to stderr\n" {
		t.Errorf("exec-say: %+v (stdout %q, stderr %q), %v", res, res.Stdout, res.Stderr, err)
	}
	if _, err := ex.Exec(ctx, hosting.ExecRequest{Command: []string{prog, "exec-sleep", "5000"}, Timeout: 300 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "no exit within 300ms") {
		t.Errorf("a command past its timeout: %v", err)
	}
	if _, err := ex.Exec(ctx, hosting.ExecRequest{Command: []string{prog, "exec-spew", "5000"}, MaxOutput: 1000}); !errors.Is(err, hosting.ErrExecOutput) {
		t.Errorf("a command writing past the bound: %v", err)
	}
	if _, err := ex.Exec(ctx, hosting.ExecRequest{Command: []string{"/nonexistent/program"}}); err == nil {
		t.Errorf("a program that does not exist ran")
	}
	if res, err := ex.Exec(ctx, hosting.ExecRequest{Command: []string{prog, "exec-write", file, "written"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec-write: %+v %v", res, err)
	}
	p, err := ex.FetchFile(ctx, file, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "written" {
		t.Errorf("fetched %q, %v", got, err)
	}
	if _, err := ex.FetchFile(ctx, "no/such/file", t.TempDir()); err == nil {
		t.Errorf("fetching a missing file succeeded")
	}
}
