package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// backends are the two hosting backends the origin tests run on.
var backends = []struct {
	name  string
	serve func(*testing.T) *client
}{{"local", hostedServer}, {"incus", incusHostedServer}}

// canonical is the observation as the agent reads it, encoded one way.
func canonical(t *testing.T, res map[string]any) string {
	t.Helper()
	b, err := json.Marshal(obsOf(res))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// N environments of one site reset with one group key see byte-identical
// first observations, url and tabs included: every instance of the site is
// at the site's origin.
func TestGroupMembersSeeIdenticalObservations(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			cl := b.serve(t)
			const n = 4
			opts := map[string]any{"options": map[string]any{"group_key": "uid-" + b.name, "start_url": "/set?v=prepared"}}
			chans := make([]chan map[string]any, n)
			for i := range chans {
				chans[i] = cl.send("make", "", map[string]any{"site": "testsite", "options": opts["options"]})
			}
			var first string
			var want map[string]any
			envs := make([]string, n)
			for i, ch := range chans {
				r := wait(t, ch)
				if r["ok"] != true {
					t.Fatalf("make %d: %v", i, r["error"])
				}
				res := r["result"].(map[string]any)
				envs[i] = res["env"].(string)
				info := res["info"].(map[string]any)
				// Members are answered with the leader's page at once and
				// prepared right after.
				if member := info["group_role"] == "member"; member != (info["preparing"] == true) {
					t.Errorf("member %d: group_role %v, preparing %v", i, info["group_role"], info["preparing"])
				}
				got := canonical(t, res)
				if !strings.Contains(got, `"url":"http://testsite.webserv.test/set?v=prepared"`) {
					t.Errorf("member %d is not at the site's origin: %s", i, got)
				}
				if i == 0 {
					first, want = got, obsOf(res)
				} else if got != first {
					t.Errorf("member %d's first observation differs:\n%s\n---\n%s", i, first, got)
				}
			}
			// Each member's own copy of the site, once prepared, shows that
			// same page.
			for i, env := range envs {
				got := obsOf(cl.call("observe", env, nil))
				if got["html"] != want["html"] || got["url"] != want["url"] || fmt.Sprint(got["tabs"]) != fmt.Sprint(want["tabs"]) {
					t.Errorf("member %d once prepared: url %v tabs %v html %v; first: url %v tabs %v html %v", i, got["url"], got["tabs"], got["html"], want["url"], want["tabs"], want["html"])
				}
			}
		})
	}
}

// A fork's first observation equals its parent's at the snapshot, url
// included; a restore's too.
func TestForkObservationEqualsParent(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			cl := b.serve(t)
			env := cl.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
			cl.call("step", env, map[string]any{"action": `goto("/set?v=cart-1")`})
			at := cl.call("step", env, map[string]any{"action": `goto("/")`})
			cl.call("snapshot", env, map[string]any{"name": "s"})
			forked := cl.call("fork", env, map[string]any{"name": "s", "n": 2})
			for i, f := range forked["envs"].([]any) {
				m := f.(map[string]any)
				// The parent's step observation records its last action; a
				// fork starts a new episode with none.
				want := obsOf(at)
				delete(want, "last_action")
				got := obsOf(m)
				if fmt.Sprint(got["url"]) != "http://testsite.webserv.test/" || fmt.Sprint(got["tabs"]) != fmt.Sprint(want["tabs"]) || got["html"] != want["html"] {
					t.Errorf("fork %d: url %v tabs %v html %v; parent: url %v tabs %v html %v", i, got["url"], got["tabs"], got["html"], want["url"], want["tabs"], want["html"])
				}
				if cause := m["info"].(map[string]any)["cause"]; cause != server.CauseFork {
					t.Errorf("fork %d: cause %v", i, cause)
				}
			}
			restored := cl.call("restore", env, map[string]any{"name": "s"})
			if got := obsOf(restored); got["url"] != "http://testsite.webserv.test/" || got["html"] != obsOf(at)["html"] {
				t.Errorf("restore: %v", got)
			}
		})
	}
}

// An environment on a hosted site reaches its own site and nothing else:
// not another instance of the site, not the server's endpoints, not a
// loopback service. Each attempt is a clear last_action_error, and the
// agent stays where it was.
func TestHostedEnvironmentReachesOnlyItsOwnSite(t *testing.T) {
	t.Parallel()
	local := localBackend(t)
	site := hostingtest.LocalSite(t)
	factory := catalog.New([]*hosting.Site{site}, []hosting.Backend{local}, nil)
	base := serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig()}))
	cl := dial(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, err := local.Start(ctx, site) // another environment's instance
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop(ctx)
	env := cl.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
	u, _ := url.Parse(other.URL())
	short := "http://127.1:" + u.Port() + "/set?v=hacked" // the same instance, spelled as Chromium reads it
	for _, target := range []string{other.URL() + "/set?v=hacked", short, base + "/healthz", pages.URL + "/page?n=1"} {
		r := cl.call("step", env, map[string]any{"action": fmt.Sprintf("goto(%q)", target)})
		obs, info := obsOf(r), r["info"].(map[string]any)
		if msg, _ := obs["last_action_error"].(string); !strings.Contains(msg, "refused") || info["action_error_code"] != "refused" {
			t.Errorf("goto %s: last_action_error %q, code %v", target, msg, info["action_error_code"])
		}
		if obs["url"] != "http://testsite.webserv.test/" {
			t.Errorf("after goto %s the page is %v", target, obs["url"])
		}
	}
	if got := hostingtest.Get(t, other.URL()+"/"); got != "state=base" {
		t.Errorf("the other instance was changed: %s", got)
	}
	// Its own site works, by origin.
	if html := obsOf(cl.call("step", env, map[string]any{"action": `goto("http://testsite.webserv.test/set?v=mine")`}))["html"].(string); !strings.Contains(html, "ok") {
		t.Errorf("own site: %s", html)
	}
}

// The open site reaches its start URL on 127.0.0.1, and a link from there
// to another loopback service is refused: the page stays, the step says why,
// and info lists the refused request.
func TestOpenSitePolicy(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	target := base + "/healthz" // the server's own endpoint: another loopback port
	made := cl.call("make", "", map[string]any{"start_url": pages.URL + "/link?to=" + target})
	env := made["env"].(string)
	if obsOf(made)["last_action_error"] != "" && obsOf(made)["last_action_error"] != nil {
		t.Fatalf("start URL on 127.0.0.1 refused: %v", obsOf(made)["last_action_error"])
	}
	r := cl.call("step", env, map[string]any{"action": `click("go")`})
	obs, info := obsOf(r), r["info"].(map[string]any)
	if msg, _ := obs["last_action_error"].(string); !strings.Contains(msg, target) || !strings.Contains(msg, "refused") {
		t.Errorf("clicking a link to %s: last_action_error %q", target, msg)
	}
	if !strings.HasPrefix(obs["url"].(string), pages.URL) {
		t.Errorf("the page moved to %v", obs["url"])
	}
	if refs, _ := info["refused"].([]any); len(refs) == 0 || !strings.Contains(fmt.Sprint(refs[0]), "navigation:true") {
		t.Errorf("info.refused = %v", info["refused"])
	}
	// Politeness for live sites: past the episode's request cap, requests
	// are refused; a reset starts a new count.
	capped := cl.call("make", "", map[string]any{"start_url": pageURL(3), "politeness": map[string]any{"max_requests": 2, "user_agent": "WebServ-test"}})["env"].(string)
	cl.call("step", capped, map[string]any{"action": "refresh()"})
	if msg, _ := obsOf(cl.call("step", capped, map[string]any{"action": "refresh()"}))["last_action_error"].(string); !strings.Contains(msg, "max_requests") {
		t.Errorf("a third request past max_requests 2: last_action_error %q", msg)
	}
	if msg := obsOf(cl.call("reset", capped, nil))["last_action_error"]; msg != "" && msg != nil {
		t.Errorf("after reset: %v", msg)
	}
	cl.fail("make", "", map[string]any{"start_url": pageURL(3), "politeness": map[string]any{"rate": 1}}, server.CodeBadArgs)
	cl.fail("make", "", map[string]any{"start_url": pageURL(3), "politeness": map[string]any{"submit_allow": []any{"example.com"}}}, server.CodeBadArgs)
	// make's allow lets it through.
	env2 := cl.call("make", "", map[string]any{"start_url": pages.URL + "/link?to=" + target, "allow": []any{strings.TrimPrefix(base, "http://")}})["env"].(string)
	if obs := obsOf(cl.call("step", env2, map[string]any{"action": `click("go")`})); obs["last_action_error"] != "" && obs["last_action_error"] != nil {
		t.Errorf("an allowed host was refused: %v", obs["last_action_error"])
	}
}

// Forks, restores and group members each record an episode of their own,
// and forks keep their parent's settings.
func TestEveryEpisodeStartIsRecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	factory := catalog.New([]*hosting.Site{hostingtest.LocalSite(t)}, []hosting.Backend{localBackend(t)}, nil)
	cl := dial(t, serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig(), TrajectoryDir: dir})))
	made := cl.call("make", "", map[string]any{"site": "testsite", "record": true, "max_steps": 3})
	env := made["env"].(string)
	cl.call("step", env, map[string]any{"action": `goto("/set?v=a")`})
	cl.call("snapshot", env, map[string]any{"name": "s"})
	cl.call("step", env, map[string]any{"action": `goto("/")`})
	cl.call("restore", env, map[string]any{"name": "s"})
	cl.call("step", env, map[string]any{"action": `goto("/")`})
	child := cl.call("fork", env, map[string]any{"name": "s", "n": 1})["envs"].([]any)[0].(map[string]any)["env"].(string)
	for range 3 {
		cl.call("step", child, map[string]any{"action": "noop()"})
	}
	// max_steps came with the fork.
	cl.fail("step", child, map[string]any{"action": "noop()"}, server.CodeEpisodeOver)
	cl.call("close", env, nil)
	cl.call("close", child, nil)

	parent, _ := filepath.Glob(filepath.Join(dir, env, "*.jsonl.gz"))
	if len(parent) != 2 {
		t.Fatalf("parent's episodes = %v, want make and restore", parent)
	}
	for i, want := range []struct {
		cause string
		steps int
	}{{server.CauseMake, 2}, {server.CauseRestore, 1}} {
		lines := readGz(t, parent[i])
		if lines[0]["cause"] != want.cause || len(lines) != 2+want.steps {
			t.Errorf("parent episode %d: cause %v, %d lines", i, lines[0]["cause"], len(lines))
		}
	}
	forks, _ := filepath.Glob(filepath.Join(dir, child, "*.jsonl.gz"))
	if len(forks) != 1 {
		t.Fatalf("fork's episodes = %v", forks)
	}
	if lines := readGz(t, forks[0]); lines[0]["cause"] != server.CauseFork || len(lines) != 5 || lines[1]["obs"].(map[string]any)["url"] != "http://testsite.webserv.test/set?v=a" {
		t.Errorf("fork episode: %v", lines[:2])
	}
}

// An image that, like Magento, redirects every request whose Host is not
// its baked base URL runs unmodified: four clones at once, all at that URL,
// each with its own state, and nothing rewritten per clone.
func TestRedirectingImageRunsUnmodified(t *testing.T) {
	t.Parallel()
	const origin = "http://magento.webserv.test:7770"
	img, err := hostingtest.SiteImage(hostingtest.BuildTestSite(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Env = append(cf.Config.Env, "BASE_URL="+origin)
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	alias := "webserv-test-redirect"
	m := incusWith(t, img, alias)
	site := &hosting.Site{Name: "magento", Origin: origin, Incus: &hosting.IncusRun{Image: alias}, Port: 8080, Ready: hosting.Probe{Path: "/ready"}}
	if err := site.Validate(); err != nil {
		t.Fatal(err)
	}
	factory := catalog.New([]*hosting.Site{site}, []hosting.Backend{m}, nil)
	cl := dial(t, serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig(), MaxCreating: 8})))

	// The image does redirect a foreign Host: its instance, asked at its
	// own address, sends the client to the baked URL.
	const n = 4
	var wg sync.WaitGroup
	envs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := wait(t, cl.send("make", "", map[string]any{"site": "magento"}))
			if r["ok"] != true {
				t.Errorf("make %d: %v", i, r["error"])
				return
			}
			res := r["result"].(map[string]any)
			envs[i] = res["env"].(string)
			if u := obsOf(res)["url"]; u != origin+"/" {
				t.Errorf("clone %d starts at %v, want %s/", i, u, origin)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, env := range envs {
		cl.call("step", env, map[string]any{"action": fmt.Sprintf(`goto("/set?v=clone-%d")`, i)})
	}
	for i, env := range envs {
		obs := obsOf(cl.call("step", env, map[string]any{"action": `goto("/")`}))
		if obs["url"] != origin+"/" || !strings.Contains(obs["html"].(string), fmt.Sprintf("state=clone-%d", i)) {
			t.Errorf("clone %d: %v %v", i, obs["url"], obs["html"])
		}
	}
	// Asked under another name, the image redirects to its base URL: the
	// redirect is real, and the browser follows it to this clone.
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(instanceURL(t, m, site))
	if err == nil {
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != origin+"/" {
			t.Errorf("the image does not redirect a foreign Host: %d %q", resp.StatusCode, loc)
		}
	} else {
		t.Error(err)
	}
}

// instanceURL starts one more instance of site and returns its own
// loopback address.
func instanceURL(t *testing.T, b hosting.Backend, site *hosting.Site) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in, err := b.Start(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = in.Stop(ctx)
	})
	return in.URL() + "/"
}
