package incusmgr_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/internal/busy"
)

// These tests need a running incusd with a btrfs pool named "webserv"
// (scripts/incus-setup.sh, run by `make test`). They do not skip: a
// machine that cannot run Incus fails them.

// The aliases (and so the site and base container names) carry a suffix
// of this run: other packages' tests and other checkouts' runs use the
// same incusd at the same time.
var (
	dockerAlias = "webserv-test-docker-" + runID
	ociAlias    = "webserv-test-oci-" + runID
)

var (
	client incus.InstanceServer
	// siteImage is internal/testsite's image, built once by TestMain.
	siteImage v1.Image
)

func TestMain(m *testing.M) {
	busy.SpinIfAsked()
	if alias := os.Getenv("WEBSERV_GC_CHILD"); alias != "" {
		dockerAlias = alias
		leakInstances()
		return
	}
	var err error
	client, err = incus.ConnectIncusUnix("", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "incus:", err, "(run scripts/incus-setup.sh)")
		os.Exit(1)
	}
	dir, _ := os.MkdirTemp("", "incusmgr-test-")
	code := 1
	if err := importTestImages(dir); err != nil {
		fmt.Fprintln(os.Stderr, "test images:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	hostingtest.RemoveBuilds()
	if err := removeTestImages(); err != nil {
		fmt.Fprintln(os.Stderr, "clean up:", err)
		code = 1
	}
	os.Exit(code)
}

// importTestImages writes the image as a docker-save tarball and as an OCI
// layout, and imports both.
func importTestImages(dir string) error {
	bin := hostingtest.BuildTestSite(&testing.T{}, dir)
	img, err := hostingtest.SiteImage(bin)
	if err != nil {
		return err
	}
	siteImage = img
	saved := filepath.Join(dir, "testsite.tar")
	if err := tarball.WriteToFile(saved, name.MustParseReference("webserv/testsite:latest"), img); err != nil {
		return err
	}
	p, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"})); err != nil {
		return err
	}
	ctx := context.Background()
	info, err := incusmgr.ImportImage(ctx, client, saved, dockerAlias)
	if err != nil {
		return err
	}
	if info.Port != 8080 || !slices.Equal(info.Command, []string{"/app/testsite"}) || info.Env["DATA_DIR"] != "/data" {
		return fmt.Errorf("imported image info = %+v", info)
	}
	_, err = incusmgr.ImportImage(ctx, client, filepath.Join(dir, "oci"), ociAlias)
	return err
}

// removeTestImages deletes the base containers of the test sites and the
// test aliases, with their images unless another alias (another package's
// test importing the same content) still names them.
func removeTestImages() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	list, err := client.GetInstances(api.InstanceTypeContainer)
	errs = append(errs, err)
	for _, alias := range []string{dockerAlias, ociAlias} {
		for _, in := range list {
			if in.Config["user.webserv.role"] == "base" && in.Config["user.webserv.site"] == site(alias).Name {
				errs = append(errs, deleteContainer(ctx, in.Name))
			}
		}
		errs = append(errs, incusmgr.RemoveImage(ctx, client, alias))
	}
	return errors.Join(errs...)
}

// deleteContainer stops and deletes a container; a missing one is fine.
func deleteContainer(ctx context.Context, name string) error {
	if op, err := client.UpdateInstanceState(name, api.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
		_ = op.WaitContext(ctx)
	}
	op, err := client.DeleteInstance(name)
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil && !api.StatusErrorCheck(err, http.StatusNotFound) {
		return fmt.Errorf("delete container %s: %w", name, err)
	}
	return nil
}

// runID tells this test process's Incus objects from other processes'.
var runID = randomHex()

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// unique is prefix with a random suffix: a name no other test uses.
func unique(prefix string) string {
	return prefix + "-" + randomHex()
}

func site(alias string) *hosting.Site {
	s := &hosting.Site{Name: "t-" + strings.TrimPrefix(alias, "webserv-test-"), Incus: &hosting.IncusRun{Image: alias}, Port: 8080,
		Ready: hosting.Probe{Path: "/ready"}, Limits: hosting.Limits{Memory: "256MiB", Processes: 100}}
	if err := s.Validate(); err != nil {
		panic(err)
	}
	return s
}

func connect(t *testing.T, cfg incusmgr.Config) *incusmgr.Manager {
	t.Helper()
	if cfg.ExecHelper == "" && cfg.Remote == "" {
		cfg.ExecHelper = execHelper(t)
	}
	m, err := incusmgr.Connect(t.Context(), nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close manager: %v", err)
		}
	})
	return m
}

func TestIncusBackendConformance(t *testing.T) {
	hostingtest.Conformance(t, connect(t, incusmgr.Config{}), site(dockerAlias))
}

func TestImportedImagesRunUnmodified(t *testing.T) {
	m := connect(t, incusmgr.Config{})
	for _, alias := range []string{dockerAlias, ociAlias} {
		in, err := m.Start(t.Context(), site(alias))
		if err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
		if got := hostingtest.Get(t, in.URL()+"/"); got != "state=base" {
			t.Errorf("%s: %q", alias, got)
		}
		// The whiteout of the second layer deleted junk/old.
		if _, _, err := client.GetInstanceFile(in.ID(), "/junk/old"); err == nil {
			t.Errorf("%s: the whiteout was not applied", alias)
		}
		// No network device: the container has only its loopback.
		inst, _, err := client.GetInstance(in.ID())
		if err != nil {
			t.Fatal(err)
		}
		for name, d := range inst.ExpandedDevices {
			if d["type"] == "nic" {
				t.Errorf("%s: container has a NIC %q", alias, name)
			}
		}
		if inst.Config["limits.memory"] != "256MiB" {
			t.Errorf("%s: limits not applied: %v", alias, inst.Config)
		}
		if err := in.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWarmPoolServesStartsAndResets(t *testing.T) {
	m := connect(t, incusmgr.Config{Warm: 2})
	s := site(dockerAlias)
	in, err := m.Start(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	hostingtest.Get(t, in.URL()+"/set?v=dirty")
	first := in.ID()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && countInstances(t, s.Name) < 3 {
		time.Sleep(100 * time.Millisecond)
	}
	if n := countInstances(t, s.Name); n < 3 {
		t.Fatalf("warm pool not filled: %d containers", n)
	}
	if err := in.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if in.ID() == first {
		t.Error("reset kept the old container")
	}
	if got := hostingtest.Get(t, in.URL()+"/"); got != "state=base" {
		t.Errorf("after a warm reset: %q", got)
	}
}

func countInstances(t *testing.T, siteName string) int {
	list, err := client.GetInstances(api.InstanceTypeContainer)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range list {
		if in.Config["user.webserv.site"] == siteName && in.Config["user.webserv.role"] == "instance" && in.Config["user.webserv.owner"] == incusmgr.Owner() {
			n++
		}
	}
	return n
}

// leakInstances runs in a child process: it starts two instances and is
// killed before it can clean up.
func leakInstances() {
	m, err := incusmgr.Connect(context.Background(), nil, incusmgr.Config{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	for i := 0; i < 2; i++ {
		in, err := m.Start(context.Background(), site(dockerAlias))
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("STARTED", in.ID())
	}
	fmt.Println("READY")
	time.Sleep(time.Hour)
}

// lockedBuffer is a buffer that one goroutine writes while another reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestGCRemovesWhatAKilledServerLeaked(t *testing.T) {
	ours, err := connect(t, incusmgr.Config{}).Start(t.Context(), site(dockerAlias))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBSERV_GC_CHILD="+dockerAlias)
	var out lockedBuffer // the child writes it while the test reads it
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(out.String(), "READY") && !strings.Contains(out.String(), "ERR") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	var leaked []string
	for _, line := range strings.Split(out.String(), "\n") {
		if id, ok := strings.CutPrefix(line, "STARTED "); ok {
			leaked = append(leaked, id)
		}
	}
	if len(leaked) != 2 {
		t.Fatalf("child did not start its instances:\n%s", out.String())
	}
	removed, err := incusmgr.GC(t.Context(), client, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range leaked {
		if _, _, err := client.GetInstance(id); err == nil {
			t.Errorf("gc left %s (removed %v)", id, removed)
		} else if !slices.Contains(removed, id) {
			// Every incusmgr.Connect collects leaked instances, and other
			// packages' tests connect at the same time.
			t.Logf("%s was collected by a concurrent gc", id)
		}
	}
	if slices.Contains(removed, ours.ID()) {
		t.Errorf("gc removed an instance of a live server")
	}
	if got := hostingtest.Get(t, ours.URL()+"/"); got != "state=base" {
		t.Errorf("live instance after gc: %q", got)
	}
}

// Commands run in the container (tasks' setup and check verifiers), and
// its files can be fetched (the state evaluator's db:).
func TestIncusExec(t *testing.T) {
	hostingtest.ExecConformance(t, connect(t, incusmgr.Config{}), site(dockerAlias), "/app/testsite", "/data/out.txt")
}

// A container stopped with force (as a person would) is seen dead, with
// its name; a reset brings a fresh container.
func TestIncusInstanceReportsItsDeath(t *testing.T) {
	hostingtest.HealthConformance(t, connect(t, incusmgr.Config{}), site(dockerAlias), func(t *testing.T, in hosting.Instance) {
		if out, err := exec.Command("incus", "stop", "--force", in.ID()).CombinedOutput(); err != nil {
			t.Fatalf("incus stop --force %s: %v: %s", in.ID(), err, out)
		}
	})
}

// Servers of one host share the Incus daemon and so a site's base: four
// managers (as four servers, or test packages run side by side) starting a
// site whose base does not exist yet all get an instance, and one base is
// prepared, none deleted under another's preparation. Each has secrets
// of its own (as the bundled shop's EVAL_TOKEN, new at every server
// start): they are no part of the base, and each instance has its own
// server's.
func TestManagersOfOneHostShareABase(t *testing.T) {
	s := site(dockerAlias)
	s.Name = unique("t-shared")
	t.Cleanup(func() {
		list, err := client.GetInstances(api.InstanceTypeContainer)
		if err != nil {
			t.Error(err)
			return
		}
		for _, in := range list {
			if in.Config["user.webserv.site"] == s.Name && in.Config["user.webserv.role"] == "base" {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := deleteContainer(ctx, in.Name); err != nil {
					t.Errorf("delete the test's base %s: %v", in.Name, err)
				}
				cancel()
			}
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		m := connect(t, incusmgr.Config{})
		// Each server has a secret of its own (as the bundled shop's
		// EVAL_TOKEN): no part of the base, but in every instance.
		mine := *s
		mine.Secrets = map[string]string{"X": "secret-" + strconv.Itoa(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := m.Start(t.Context(), &mine)
			if err != nil {
				errs[i] = err
				return
			}
			res, err := in.(hosting.Execer).Exec(t.Context(), hosting.ExecRequest{Command: []string{"/app/testsite", "exec-say", "hi"}})
			if want := "hi secret-" + strconv.Itoa(i) + "\n"; err == nil && string(res.Stdout) != want {
				err = fmt.Errorf("the instance's environment gave %q, want %q", res.Stdout, want)
			}
			errs[i] = errors.Join(err, in.Stop(t.Context()))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("manager %d: %v", i, err)
		}
	}
	list, err := client.GetInstances(api.InstanceTypeContainer)
	if err != nil {
		t.Fatal(err)
	}
	bases := 0
	for _, in := range list {
		if in.Config["user.webserv.site"] == s.Name && in.Config["user.webserv.role"] == "base" {
			bases++
		}
	}
	if bases != 1 {
		t.Errorf("%d base containers of site %s, want 1", bases, s.Name)
	}
}

// execHelper is the exec helper the tests' managers mount into
// containers: "" (the default: this test binary) when the test binary is
// statically linked, as under make test; else, as under a plain go test
// with cgo, incusmgr/internal/exechelper built with CGO_ENABLED=0.
func execHelper(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return hostingtest.BuildStatic(t, "incusmgr/internal/exechelper", filepath.Join(t.TempDir(), "exechelper"))
		}
	}
	return ""
}

// An exec helper that cannot run in a container (dynamically linked, not
// an executable, missing) is refused when the manager connects, saying
// what to build; it is not left to fail inside every container.
func TestABadExecHelperIsRefused(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "helper")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/bin/true":                     "is dynamically linked",
		notExec:                         "is not an executable file",
		filepath.Join(t.TempDir(), "x"): "no such file",
	} {
		_, err := incusmgr.Connect(t.Context(), nil, incusmgr.Config{ExecHelper: path})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Errorf("ExecHelper %s: %v, want an error saying %q and what to build", path, err, want)
		}
	}
}

// helpedInstance starts a test site's instance whose commands run through
// the exec helper, stopped when t ends.
func helpedInstance(t *testing.T) hosting.Execer {
	t.Helper()
	in, err := connect(t, incusmgr.Config{}).Start(t.Context(), site(dockerAlias))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Stop(context.WithoutCancel(t.Context())) })
	return in.(hosting.Execer)
}

// A command's output arrives whole however loaded the host is: Incus's
// own exec streams lose it when a command writes and exits while the
// daemon's reader is descheduled (exechelper.go). Two cores spin beside
// 60 commands; every one's stdout, stderr and exit code are exact.
func TestIncusExecOutputSurvivesALoadedHost(t *testing.T) {
	ex := helpedInstance(t)
	busy.Saturate(t, 2)
	for i := range 60 {
		res, err := ex.Exec(t.Context(), hosting.ExecRequest{Command: []string{"/app/testsite", "exec-say", "hello"}, Env: map[string]string{"X": strconv.Itoa(i), "CODE": "3"}})
		if want := "hello " + strconv.Itoa(i) + "\n"; err != nil || res.ExitCode != 3 || string(res.Stdout) != want || string(res.Stderr) != "to stderr\n" {
			t.Errorf("run %d: exit %d, stdout %q (want %q), stderr %q, %v", i, res.ExitCode, res.Stdout, want, res.Stderr, err)
		}
	}
}

// A command past its timeout is killed with what it started, not left
// running in the container: its process is gone from the host when Exec
// returns.
func TestIncusExecKillsACommandPastItsTimeout(t *testing.T) {
	ex := helpedInstance(t)
	mark := strconv.Itoa(600000 + os.Getpid()%100000) // this test's own sleep
	_, err := ex.Exec(t.Context(), hosting.ExecRequest{Command: []string{"/app/testsite", "exec-sleep", mark}, Timeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no exit within 500ms") {
		t.Fatalf("a command past its timeout: %v", err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "exec-sleep\x00"+mark+"\x00") {
			t.Errorf("the timed-out command still runs: %s is %q", p, b)
		}
	}
}

// A base that lost its snapshot and that Incus refuses to delete (seen
// after incusd died mid-snapshot: the pool keeps a snapshot its database
// forgot) does not fail the site's every start: it is renamed aside and a
// new base is built. Here the refusal is Incus's delete protection.
func TestAnUndeletableBrokenBaseIsReplaced(t *testing.T) {
	s := site(dockerAlias)
	s.Name = unique("t-stuck")
	t.Cleanup(func() {
		list, err := client.GetInstances(api.InstanceTypeContainer)
		if err != nil {
			t.Error(err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, in := range list {
			if in.Config["user.webserv.site"] != s.Name {
				continue
			}
			if err := unprotect(in.Name); err != nil {
				t.Error(err)
			}
			if err := deleteContainer(ctx, in.Name); err != nil {
				t.Errorf("delete the test's container %s: %v", in.Name, err)
			}
		}
	})
	first := connect(t, incusmgr.Config{})
	in, err := first.Start(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	base := basesOf(t, s.Name)
	if len(base) != 1 {
		t.Fatalf("bases of %s: %v, want one", s.Name, base)
	}
	op, err := client.DeleteInstanceSnapshot(base[0], "base")
	if err == nil {
		err = op.WaitContext(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
	protect(t, base[0])

	second := connect(t, incusmgr.Config{}) // knows no base yet: finds the broken one
	in, err = second.Start(t.Context(), s)
	if err != nil {
		t.Fatalf("start beside a broken base Incus will not delete: %v", err)
	}
	if err := in.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := basesOf(t, s.Name)
	if len(now) != 2 || !slices.Contains(now, base[0]) {
		t.Fatalf("bases of %s after the start: %v; want the new one under %s and the broken one aside", s.Name, now, base[0])
	}
	if _, _, err := client.GetInstanceSnapshot(base[0], "base"); err != nil {
		t.Errorf("the new base %s has no snapshot: %v", base[0], err)
	}
}

// basesOf lists the names of site's base containers, aside or not.
func basesOf(t *testing.T, site string) []string {
	t.Helper()
	list, err := client.GetInstances(api.InstanceTypeContainer)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range list {
		if in.Config["user.webserv.site"] == site && in.Config["user.webserv.role"] == "base" {
			names = append(names, in.Name)
		}
	}
	return names
}

// protect turns on Incus's delete protection of container name.
func protect(t *testing.T, name string) {
	t.Helper()
	in, etag, err := client.GetInstance(name)
	if err != nil {
		t.Fatal(err)
	}
	put := in.Writable()
	put.Config["security.protection.delete"] = "true"
	op, err := client.UpdateInstance(name, put, etag)
	if err == nil {
		err = op.WaitContext(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// unprotect turns delete protection of container name off again.
func unprotect(name string) error {
	in, etag, err := client.GetInstance(name)
	if err != nil || in.Config["security.protection.delete"] != "true" {
		return nil
	}
	put := in.Writable()
	delete(put.Config, "security.protection.delete")
	op, err := client.UpdateInstance(name, put, etag)
	if err == nil {
		err = op.WaitContext(context.Background())
	}
	if err != nil {
		return fmt.Errorf("unprotect %s: %w", name, err)
	}
	return nil
}
