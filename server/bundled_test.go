package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// buildShop compiles the shop as a static binary into dir.
func buildShop(t testing.TB, dir string) string {
	return hostingtest.BuildStatic(t, "sites/shop/cmd/shop", filepath.Join(dir, "shop"))
}

// bundledServer serves the bundled shop's two roles with their tasks.
func bundledServer(t *testing.T, backend hosting.Backend, opts bundled.Options) *client {
	t.Helper()
	ctx := context.Background()
	sites, sets, err := bundled.Sites(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	f := server.NewHostedFactory(sites, []hosting.Backend{backend}, nil)
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	// Generous action and settle limits: the oracles run four at a time
	// beside the other packages' tests on a shared 2-core machine.
	env := envConfig()
	env.ActionTimeout, env.SettleTimeout = 30*time.Second, 30*time.Second
	return dial(t, serve(t, server.New(nil, browser, f, server.Config{Env: env, MaxCreating: 8, MaxEnvs: 64})))
}

func localBundled(t *testing.T) *client {
	dir := t.TempDir()
	return bundledServer(t, localBackend(t), bundled.Options{DataDir: filepath.Join(dir, "shop-data"), Command: []string{buildShop(t, dir)}})
}

type bundledTask struct {
	site string
	task tasks.Task
}

func bundledTasks(t *testing.T) []bundledTask {
	var out []bundledTask
	for _, site := range []string{"shopping", "cms"} {
		raw, err := shop.TaskFile(site)
		if err != nil {
			t.Fatal(err)
		}
		set, err := tasks.ParseTasks(raw, site)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range set.Tasks {
			out = append(out, bundledTask{site, tk})
		}
	}
	return out
}

// play runs actions in env and returns the last step's reply.
func play(cl *client, env string, actions []string) (map[string]any, error) {
	var last map[string]any
	for i, a := range actions {
		r := wait(cl.t, cl.send("step", env, map[string]any{"action": a}))
		if r["ok"] != true {
			return nil, fmt.Errorf("step %d %s: %v", i, a, r["error"])
		}
		last = r["result"].(map[string]any)
		info := last["info"].(map[string]any)
		if e, ok := info["action_error"]; ok {
			return last, fmt.Errorf("step %d %s: action failed: %v", i, a, e)
		}
	}
	return last, nil
}

// replayOracles solves every bundled task with its oracle (reward 1) and
// then, after a reset to a fresh copy of the site, plays its wrong
// sequence (reward 0). Workers run tasks in parallel environments.
func replayOracles(t *testing.T, cl *client, workers int) {
	all := bundledTasks(t)
	if len(all) < 100 {
		t.Fatalf("%d bundled tasks; the sets promise 60 storefront and 40 admin tasks", len(all))
	}
	jobs := make(chan bundledTask)
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bt := range jobs {
				id := fmt.Sprintf("%s.%d", bt.site, bt.task.ID)
				fail := func(format string, args ...any) {
					mu.Lock()
					defer mu.Unlock()
					t.Errorf("%s (%s): %s", id, bt.task.Intent, fmt.Sprintf(format, args...))
				}
				r := wait(t, cl.send("make", "", map[string]any{"site": bt.site, "task": id}))
				if r["ok"] != true {
					fail("make: %v", r["error"])
					continue
				}
				res := r["result"].(map[string]any)
				env := res["env"].(string)
				if got := res["info"].(map[string]any)["task_id"]; got != id {
					fail("make started task %v", got)
				}
				last, err := play(cl, env, bt.task.Oracle)
				switch {
				case err != nil:
					fail("oracle: %v", err)
				case last["terminated"] != true || last["reward"] != 1.0:
					fail("oracle: reward %v terminated %v info %v", last["reward"], last["terminated"], last["info"])
				}
				r = wait(t, cl.send("reset", env, map[string]any{"options": map[string]any{"task": id}}))
				if r["ok"] != true {
					fail("reset: %v", r["error"])
				} else if last, err := play(cl, env, bt.task.Wrong); err != nil && last == nil {
					fail("wrong sequence: %v", err)
				} else if last["reward"] != 0.0 {
					fail("wrong sequence %v scored %v, want 0", bt.task.Wrong, last["reward"])
				}
				wait(t, cl.send("close", env, nil))
			}
		}()
	}
	for _, bt := range all {
		jobs <- bt
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d tasks (oracle and wrong sequence each) in %s with %d workers", len(all), time.Since(start).Round(time.Second), workers)
}

// Every bundled task is solved by its oracle through the real server,
// browser and shop processes on the local backend, and its wrong sequence
// scores 0.
func TestBundledOraclesLocal(t *testing.T) {
	t.Parallel()
	replayOracles(t, localBundled(t), 4)
}

// The same on the Incus backend: the shop runs in containers cloned
// copy-on-write from an image built from the static shop binary and the
// seed-1 catalog.
func TestBundledOraclesIncus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "shop-data")
	if err := bundled.EnsureData(ctx, data); err != nil {
		t.Fatal(err)
	}
	img, err := shop.Image(buildShop(t, dir), nil, data)
	if err != nil {
		t.Fatal(err)
	}
	const alias = "webserv-test-shop"
	m := incusWith(t, img, alias)
	replayOracles(t, bundledServer(t, m, bundled.Options{IncusImage: alias}), 4)
}

// A grading that cannot be done is not a 0: a fuzzy_match task on a
// server without a judge ends with reward null and the reason in info.
func TestUngradableEpisodeHasNoReward(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sites, sets, err := bundled.Sites(context.Background(), bundled.Options{DataDir: filepath.Join(dir, "shop-data"), Command: []string{buildShop(t, dir)}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tasks.ParseTasks([]byte(`[{"task_id": 1, "sites": ["shopping"], "intent": "Describe the shop.", "start_url": "__SHOPPING__/",
	  "eval": {"eval_types": ["string_match"], "reference_answers": {"fuzzy_match": ["a small shop"]}}}]`), "fuzzy.json")
	if err != nil {
		t.Fatal(err)
	}
	sets["shopping"].Set = set
	f := server.NewHostedFactory(sites, []hosting.Backend{localBackend(t)}, nil)
	f.SetTasks("shopping", sets["shopping"])
	cl := dial(t, serve(t, server.New(nil, browser, f, server.Config{Env: envConfig()})))
	env := cl.call("make", "", map[string]any{"site": "shopping", "task": "1"})["env"].(string)
	res := cl.call("step", env, map[string]any{"action": `stop("a small independent shop")`})
	info := res["info"].(map[string]any)
	if res["reward"] != nil || res["terminated"] != true || !strings.Contains(fmt.Sprint(info["eval_error"]), "judge") {
		t.Errorf("reward %v, terminated %v, eval_error %v", res["reward"], res["terminated"], info["eval_error"])
	}
	// An unknown task fails make before any instance starts, and says
	// which tasks there are.
	e := cl.fail("make", "", map[string]any{"site": "shopping", "task": "shopping.99"}, "bad_args")
	if !strings.Contains(fmt.Sprint(e["message"]), "no task 99") {
		t.Errorf("unknown task: %v", e)
	}
}
