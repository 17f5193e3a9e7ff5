package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// hostedServer serves internal/testsite on the local backend.
func hostedServer(t *testing.T) *client {
	t.Helper()
	factory := catalog.New([]*hosting.Site{hostingtest.LocalSite(t)}, []hosting.Backend{localBackend(t)}, nil)
	return dial(t, serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig(), MaxCreating: 8})))
}

// localBackend is a local hosting backend closed with the test.
func localBackend(t *testing.T) *hosting.Local {
	t.Helper()
	local, err := hosting.NewLocal(nil, filepath.Join(t.TempDir(), "instances"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = local.Close(ctx)
	})
	return local
}

// Eight environments reset with one group key: one leads and prepares the
// start state, the others start from a fork of it. All see the same first
// page, and each has its own copy of the site.
func TestGroupResetConverges(t *testing.T) {
	t.Parallel()
	cl := hostedServer(t)
	const n = 8
	envs := make([]string, n)
	for i := range envs {
		envs[i] = cl.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
	}
	opts := map[string]any{"options": map[string]any{"group_key": "uid-42", "start_url": "/set?v=prepared"}}
	chans := make([]chan map[string]any, n)
	for i, env := range envs {
		chans[i] = cl.send("reset", env, opts)
	}
	leaders, first := 0, ""
	for i, ch := range chans {
		r := wait(t, ch)
		if r["ok"] != true {
			t.Fatalf("reset %d: %v", i, r["error"])
		}
		res := r["result"].(map[string]any)
		switch res["info"].(map[string]any)["group_role"] {
		case "leader":
			leaders++
		case "member":
		default:
			t.Errorf("reset %d has no group role: %v", i, res["info"])
		}
		html := obsOf(res)["html"].(string)
		if first == "" {
			first = html
		} else if html != first {
			t.Errorf("member %d's first page differs:\n%s\n---\n%s", i, first, html)
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders, want 1", leaders)
	}
	// Every member's site is in the prepared state, and isolated.
	for i, env := range envs {
		html := obsOf(cl.call("step", env, map[string]any{"action": `goto("/")`}))["html"].(string)
		if !strings.Contains(html, "state=prepared") {
			t.Errorf("member %d: %s", i, html)
		}
	}
	cl.call("step", envs[0], map[string]any{"action": `goto("/set?v=mine")`})
	if html := obsOf(cl.call("step", envs[1], map[string]any{"action": `refresh()`}))["html"].(string); !strings.Contains(html, "state=prepared") {
		t.Errorf("members share a site: %s", html)
	}
	// The group owns its start state: with every first member closed, a
	// late member still starts from it. Its viewport is not the leader's,
	// so its first page is its own, prepared before the answer.
	for _, env := range envs {
		cl.call("close", env, nil)
	}
	late := cl.call("make", "", map[string]any{"site": "testsite", "viewport": map[string]any{"width": 800, "height": 600},
		"options": map[string]any{"group_key": "uid-42", "start_url": "/set?v=prepared"}})
	if info := late["info"].(map[string]any); info["group_role"] != "member" || info["preparing"] != nil {
		t.Errorf("late member's info = %v", info)
	}
	if obsOf(late)["html"].(string) != first {
		t.Errorf("late member's first page differs: %s", obsOf(late)["html"])
	}
}

// A member whose fork fails (its copy of the site cannot start) has been
// answered with the leader's page already: its next request says the start
// failed, and a reset gives it a site of its own again.
func TestGroupMemberWhoseForkFailsSaysSoAndResets(t *testing.T) {
	t.Parallel()
	factory := catalog.New([]*hosting.Site{hostingtest.LocalSite(t)}, []hosting.Backend{localBackend(t)}, nil)
	srv := server.New(nil, browser, factory, server.Config{Env: envConfig(), MaxCreating: 8})
	// The group's own base build would fail too (every start of this state
	// does) and, landing before the member's make, end the group: the
	// member would lead a new one. Held, the member joins this group.
	release := server.HoldGroupBases(srv)
	defer release()
	cl := dial(t, serve(t, srv))
	opts := map[string]any{"site": "testsite", "options": map[string]any{"group_key": "doomed", "start_url": "/set?v=broken"}}
	leader := cl.call("make", "", opts)
	member := cl.call("make", "", opts)
	if info := member["info"].(map[string]any); info["group_role"] != "member" || info["preparing"] != true {
		t.Fatalf("member's info = %v", info)
	}
	env := member["env"].(string)
	e := cl.fail("step", env, map[string]any{"action": `goto("/")`}, "backend")
	if msg := e["message"].(string); !strings.Contains(msg, "group member's start failed") || !strings.Contains(msg, "reset it") {
		t.Errorf("step after a failed start: %v", e)
	}
	cl.fail("observe", env, nil, "backend")
	if html := obsOf(cl.call("reset", env, map[string]any{"options": map[string]any{"start_url": "/set?v=own"}}))["html"].(string); !strings.Contains(html, "ok") {
		t.Errorf("reset after a failed start: %s", html)
	}
	if html := obsOf(cl.call("step", env, map[string]any{"action": `goto("/")`}))["html"].(string); !strings.Contains(html, "state=own") {
		t.Errorf("step after the reset: %s", html)
	}
	if html := obsOf(cl.call("step", leader["env"].(string), map[string]any{"action": `goto("/")`}))["html"].(string); !strings.Contains(html, "state=broken") {
		t.Errorf("the leader was disturbed: %s", html)
	}
}

// incusWith imports img into the test's incusd as alias and returns an
// Incus backend closed with the test.
func incusWith(t *testing.T, img v1.Image, alias string) *incusmgr.Manager {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if err := incusmgr.WriteLayout(filepath.Join(dir, "oci"), img); err != nil {
		t.Fatal(err)
	}
	c, err := incusmgr.Client(incusmgr.Config{})
	if err != nil {
		t.Fatalf("%v (run scripts/incus-setup.sh)", err)
	}
	if _, err := incusmgr.ImportImage(ctx, c, filepath.Join(dir, "oci"), alias); err != nil {
		t.Fatal(err)
	}
	m, err := incusmgr.Connect(ctx, nil, incusmgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m
}

// incusHostedServer serves internal/testsite on the Incus backend, from an
// image built here.
func incusHostedServer(t *testing.T) *client {
	t.Helper()
	img, err := hostingtest.SiteImage(hostingtest.BuildTestSite(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	const alias = "webserv-test-group"
	m := incusWith(t, img, alias)
	site := &hosting.Site{Name: "testsite", Incus: &hosting.IncusRun{Image: alias}, Port: 8080, Ready: hosting.Probe{Path: "/ready"}}
	if err := site.Validate(); err != nil {
		t.Fatal(err)
	}
	factory := catalog.New([]*hosting.Site{site}, []hosting.Backend{m}, nil)
	return dial(t, serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig(), MaxCreating: 8})))
}

// The leader may move on at once: its next reset (which on Incus replaces
// its container, snapshots and all) waits until the group no longer needs
// its instance, and members arriving afterwards still start from the
// group's start state, not from the leader's new one.
func TestGroupOutlivesItsLeader(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name  string
		serve func(*testing.T) *client
	}{{"local", hostedServer}, {"incus", incusHostedServer}} {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			cl := backend.serve(t)
			group := map[string]any{"options": map[string]any{"group_key": "uid-7", "start_url": "/set?v=start"}}
			leader := cl.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
			first := cl.call("reset", leader, group)
			if role := first["info"].(map[string]any)["group_role"]; role != "leader" {
				t.Fatalf("first reset's role = %v", role)
			}
			cl.call("reset", leader, map[string]any{"options": map[string]any{"start_url": "/set?v=leader-moved-on"}})
			for i := range 3 {
				member := cl.call("make", "", map[string]any{"site": "testsite", "options": group["options"]})
				if role := member["info"].(map[string]any)["group_role"]; role != "member" {
					t.Errorf("member %d's role = %v", i, role)
				}
				if obsOf(member)["html"] != obsOf(first)["html"] {
					t.Errorf("member %d's first page differs from the leader's:\n%s\n---\n%s", i, obsOf(first)["html"], obsOf(member)["html"])
				}
				env := member["env"].(string)
				if html := obsOf(cl.call("step", env, map[string]any{"action": `goto("/")`}))["html"].(string); !strings.Contains(html, "state=start") {
					t.Errorf("member %d's site: %s", i, html)
				}
			}
			if html := obsOf(cl.call("step", leader, map[string]any{"action": `goto("/")`}))["html"].(string); !strings.Contains(html, "state=leader-moved-on") {
				t.Errorf("the leader's own site: %s", html)
			}
		})
	}
}
