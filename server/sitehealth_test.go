package server_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lxc/incus/v6/shared/api"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// The fault suite's site rows: a site instance that dies under its
// environment (its process killed, its container stopped) or the route
// that carries the browser's requests to it: the environment's next step
// answers site_down, never an observation; a stop on it is not graded;
// a reset brings a fresh instance; a neighbour on its own instance steps
// on; the server still closes.

// stayTask is a url_match task whose start page is the page it wants: an
// agent that stops at once earns 1, and a dead instance's error page sits
// at that URL too.
const stayTask = `
- task_id: 1
  intent: Stay on the start page.
  start_url: __SITE__/
  eval:
    eval_types: [url_match]
    reference_url: __SITE__/
  oracle: ['stop("")']
  wrong: ['goto("__SITE__/set?v=x")', 'stop("")']
`

// healthSite writes a site definition (def, in YAML) and its stayTask file
// to a directory and loads it with its tasks.
func healthSite(t *testing.T, def string) (*hosting.Site, *catalog.TaskSet) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"site.yaml": def + "tasks: [tasks.yaml]\n", "tasks.yaml": stayTask} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	site, err := hosting.LoadSite(filepath.Join(dir, "site.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := catalog.SiteTaskSet(site, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return site, st
}

// testsiteBin is internal/testsite, built for the test.
func testsiteBin(t *testing.T) string { return hostingtest.BuildTestSite(t, t.TempDir()) }

// baseData is a testsite data directory in state "base".
func baseData(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "state"), []byte("base"), 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// healthServer serves site on backend b.
func healthServer(t *testing.T, site *hosting.Site, st *catalog.TaskSet, b hosting.Backend, cfg server.Config) (*server.Server, *client) {
	t.Helper()
	f := catalog.New([]*hosting.Site{site}, []hosting.Backend{b}, nil)
	f.SetTasks(site.Name, st)
	cfg.Env, cfg.MaxCreating = envConfig(), 4
	srv := server.New(zap.NewNop(), browser, f, cfg)
	return srv, dial(t, serve(t, srv))
}

// sitePids are the processes whose working directory is under root: the
// local backend runs each instance's site in its own copy of the data.
func sitePids(t *testing.T, root string) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && strings.HasPrefix(cwd, root+"/") {
			out[pid] = true
		}
	}
	return out
}

// newPid is the one pid of after that is not in before.
func newPid(t *testing.T, before, after map[int]bool) int {
	t.Helper()
	var found []int
	for p := range after {
		if !before[p] {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one new site process, found %v", found)
	}
	return found[0]
}

// killAndWait sends SIGKILL to pid and returns once it has exited (its
// pidfd turns readable): the event, not a guess at how long dying takes.
func killAndWait(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if err == nil {
			return
		}
		if err != unix.EINTR {
			t.Fatalf("wait for %d to exit: %v", pid, err)
		}
	}
}

// notGraded checks a step reply that must carry no reward and say why.
func notGraded(t *testing.T, r map[string]any, what string) {
	t.Helper()
	info, _ := r["info"].(map[string]any)
	if r["reward"] != nil || r["terminated"] != true || !strings.Contains(fmt.Sprint(info["eval_error"]), "not graded") || info["site_down"] == nil {
		t.Fatalf("%s: reward %v, terminated %v, info %v; want no reward, eval_error and site_down", what, r["reward"], r["terminated"], info)
	}
}

// A local site's process killed mid-episode: the next step answers
// site_down (naming the instance and its exit), so does the one after, a
// stop is not graded though the page sits at the URL the task wants; a
// reset brings a fresh process and a stop there earns 1; killed again, a
// stop straight away is not graded either; the neighbour on its own
// instance steps on throughout; the server closes.
func TestSiteDownLocalProcessKilled(t *testing.T) {
	t.Parallel()
	site, st := healthSite(t, "name: mortal\nlocal: {command: ["+testsiteBin(t)+"], data_dir: "+baseData(t)+"}\nready: {path: /ready}\n")
	root := filepath.Join(t.TempDir(), "instances")
	local, err := hosting.NewLocal(nil, root)
	if err != nil {
		t.Fatal(err)
	}
	srv, cl := healthServer(t, site, st, local, server.Config{})

	before := sitePids(t, root)
	env := cl.call("make", "", map[string]any{"site": "mortal", "task": "mortal.1"})["env"].(string)
	victim := newPid(t, before, sitePids(t, root))
	neighbour := cl.call("make", "", map[string]any{"site": "mortal", "task": "mortal.1"})["env"].(string)
	stepOK := func(env, action, want string) {
		t.Helper()
		r := cl.call("step", env, map[string]any{"action": action})
		if html, _ := obsOf(r)["html"].(string); !strings.Contains(html, want) {
			t.Fatalf("%s: page %q, want %q", action, html, want)
		}
	}
	stepOK(env, `goto("/")`, "state=base")

	killAndWait(t, victim)
	died := time.Now()
	e := cl.fail("step", env, map[string]any{"action": `goto("/")`}, server.CodeSiteDown)
	t.Logf("site_down %v after the process exited", time.Since(died))
	msg := e["message"].(string)
	if e["fault"] != "infrastructure" || e["retryable"] != true || !strings.Contains(msg, "mortal-") || !strings.Contains(msg, "reset") {
		t.Errorf("site_down = %v; want the infrastructure's, retryable, naming the instance and the reset", e)
	}
	cl.fail("step", env, map[string]any{"action": `refresh()`}, server.CodeSiteDown)
	cl.fail("observe", env, nil, server.CodeSiteDown)
	stepOK(neighbour, `goto("/set?v=n1")`, "ok")
	notGraded(t, cl.call("step", env, map[string]any{"action": `stop("")`}), "stop on the dead instance")

	began := time.Now()
	reset := cl.call("reset", env, nil)
	t.Logf("the reset onto a fresh instance took %v", time.Since(began))
	if html, _ := obsOf(reset)["html"].(string); !strings.Contains(html, "state=base") {
		t.Fatalf("after reset: %q, want a fresh instance's base page", html)
	}
	if r := cl.call("step", env, map[string]any{"action": `stop("")`}); r["reward"] != 1.0 {
		t.Fatalf("stop on the fresh instance: reward %v, info %v; want 1", r["reward"], r["info"])
	}

	// Killed again, and the agent stops at once: no request fails, and
	// the look before grading finds it.
	cl.call("reset", env, nil)
	pids := sitePids(t, root)
	delete(pids, victim)
	var again []int
	for p := range pids {
		again = append(again, p)
	}
	if len(again) != 2 {
		t.Fatalf("site processes %v; want two (the environment's and its neighbour's)", again)
	}
	// The neighbour's process is the one that saw its set: kill the other.
	for _, p := range again {
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p))
		if b, _ := os.ReadFile(filepath.Join(cwd, "state")); string(b) != "n1" {
			victim = p
		}
	}
	killAndWait(t, victim)
	notGraded(t, cl.call("step", env, map[string]any{"action": `stop("")`}), "stop at once on the dead instance")
	stepOK(neighbour, `goto("/")`, "state=n1")

	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// siteContainers are the running containers of site the Incus backend
// made for environments.
func siteContainers(t *testing.T, site string) map[string]bool {
	t.Helper()
	c, err := incusmgr.Client(incusmgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.GetInstances(api.InstanceTypeContainer)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, in := range list {
		if in.Config["user.webserv.site"] == site && in.Config["user.webserv.role"] == "instance" && in.StatusCode == api.Running {
			out[in.Name] = true
		}
	}
	return out
}

// An Incus site's container stopped with force mid-episode (as a person
// would: `incus stop --force`): the next step answers site_down naming
// the container, a stop is not graded, a reset brings a fresh container
// whose stop earns 1, the neighbour's container serves on, the server
// closes.
func TestSiteDownIncusContainerStopped(t *testing.T) {
	t.Parallel()
	img, err := hostingtest.SiteImage(hostingtest.BuildTestSite(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	const alias = "webserv-test-sitedown"
	m := incusWith(t, img, alias)
	site, st := healthSite(t, "name: sitedown\nincus: {image: "+alias+"}\nport: 8080\nready: {path: /ready}\n")
	srv, cl := healthServer(t, site, st, m, server.Config{})

	before := siteContainers(t, "sitedown")
	env := cl.call("make", "", map[string]any{"site": "sitedown", "task": "sitedown.1"})["env"].(string)
	var victim string
	for name := range siteContainers(t, "sitedown") {
		if !before[name] {
			victim = name
		}
	}
	if victim == "" {
		t.Fatal("no container for the environment")
	}
	neighbour := cl.call("make", "", map[string]any{"site": "sitedown", "task": "sitedown.1"})["env"].(string)

	if out, err := exec.Command("incus", "stop", "--force", victim).CombinedOutput(); err != nil {
		t.Fatalf("incus stop --force %s: %v: %s", victim, err, out)
	}
	stopped := time.Now()
	e := cl.fail("step", env, map[string]any{"action": `goto("/")`}, server.CodeSiteDown)
	t.Logf("site_down %v after the container stopped", time.Since(stopped))
	if msg := e["message"].(string); !strings.Contains(msg, victim) || e["fault"] != "infrastructure" {
		t.Errorf("site_down = %v; want the infrastructure's, naming container %s", e, victim)
	}
	r := cl.call("step", neighbour, map[string]any{"action": `goto("/set?v=n1")`})
	if html, _ := obsOf(r)["html"].(string); !strings.Contains(html, "ok") {
		t.Errorf("neighbour: %q", html)
	}
	notGraded(t, cl.call("step", env, map[string]any{"action": `stop("")`}), "stop on the stopped container")

	began := time.Now()
	reset := cl.call("reset", env, nil)
	t.Logf("the reset onto a fresh container took %v", time.Since(began))
	if html, _ := obsOf(reset)["html"].(string); !strings.Contains(html, "state=base") {
		t.Fatalf("after reset: %q, want a fresh container's base page", html)
	}
	if r := cl.call("step", env, map[string]any{"action": `stop("")`}); r["reward"] != 1.0 {
		t.Fatalf("stop on the fresh container: reward %v, info %v; want 1", r["reward"], r["info"])
	}
	r = cl.call("step", neighbour, map[string]any{"action": `goto("/")`})
	if html, _ := obsOf(r)["html"].(string); !strings.Contains(html, "state=n1") {
		t.Errorf("neighbour after: %q", html)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// The route that carries an environment's browser requests closed under
// it: the next step answers site_down saying so, not the browser's proxy
// error page; the neighbour is untouched; a reset gives the environment a
// new route, and it steps on.
func TestSiteDownRouteClosed(t *testing.T) {
	t.Parallel()
	srv, cl := healthServer(t, hostingtest.LocalSite(t), nil, localBackend(t), server.Config{})
	env := cl.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
	neighbour := cl.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
	rt := server.EnvRoute(srv, env)
	if rt == nil {
		t.Fatal("the environment has no route")
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	e := cl.fail("step", env, map[string]any{"action": `goto("/")`}, server.CodeSiteDown)
	if msg := e["message"].(string); !strings.Contains(msg, "route") || !strings.Contains(msg, rt.Addr()) || e["fault"] != "infrastructure" {
		t.Errorf("site_down = %v; want the infrastructure's, naming the route", e)
	}
	stepPage := func(env, action, want string) {
		t.Helper()
		r := cl.call("step", env, map[string]any{"action": action})
		if html, _ := obsOf(r)["html"].(string); !strings.Contains(html, want) {
			t.Fatalf("%s: page %q, want %q", action, html, want)
		}
	}
	stepPage(neighbour, `goto("/set?v=n")`, "ok")
	cl.call("reset", env, nil)
	if now := server.EnvRoute(srv, env); now == nil || now == rt {
		t.Fatalf("after reset the route is %p (was %p): want a new one", now, rt)
	}
	stepPage(env, `goto("/")`, "state=base")
	stepPage(neighbour, `goto("/")`, "state=n")
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// A local site that stops answering (its process stopped with SIGSTOP:
// alive, its port still accepting connections, nothing answered): the
// process watcher sees nothing, and the look before grading (one
// readiness probe, 10 s) finds it, so the stop is not graded; a reset
// brings a fresh process.
func TestSiteDownHungSiteNotGraded(t *testing.T) {
	t.Parallel()
	site, st := healthSite(t, "name: hung\nlocal: {command: ["+testsiteBin(t)+"], data_dir: "+baseData(t)+"}\nready: {path: /ready}\n")
	root := filepath.Join(t.TempDir(), "instances")
	local, err := hosting.NewLocal(nil, root)
	if err != nil {
		t.Fatal(err)
	}
	srv, cl := healthServer(t, site, st, local, server.Config{})
	env := cl.call("make", "", map[string]any{"site": "hung", "task": "hung.1"})["env"].(string)
	for pid := range sitePids(t, root) {
		if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	r := cl.call("step", env, map[string]any{"action": `stop("")`})
	notGraded(t, r, "stop on a site that does not answer")
	if msg := fmt.Sprint(r["info"].(map[string]any)["site_down"]); !strings.Contains(msg, "readiness probe") {
		t.Errorf("site_down = %q, want what the probe saw", msg)
	}
	cl.call("reset", env, nil)
	if r := cl.call("step", env, map[string]any{"action": `stop("")`}); r["reward"] != 1.0 {
		t.Fatalf("stop on the fresh instance: %v", r)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
