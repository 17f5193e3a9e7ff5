package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// shopServer serves the bundled shop on the local backend with cfg, plus
// extra task sets by site (Verified-style ones).
func shopServer(t *testing.T, cfg server.Config, extra func(f *catalog.Catalog, sets map[string]*catalog.TaskSet)) *client {
	t.Helper()
	dir := t.TempDir()
	return shopServerOn(t, localBackend(t), bundled.Options{DataDir: filepath.Join(dir, "shop-data"), Command: []string{buildShop(t, dir)}}, cfg, extra)
}

// shopServerOn is shopServer on backend with the shop run as opts says.
func shopServerOn(t *testing.T, backend hosting.Backend, opts bundled.Options, cfg server.Config, extra func(f *catalog.Catalog, sets map[string]*catalog.TaskSet)) *client {
	t.Helper()
	sites, sets, err := catalog.Bundled(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New(sites, []hosting.Backend{backend}, nil)
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	if extra != nil {
		extra(f, sets)
	}
	env := envConfig()
	env.ActionTimeout, env.SettleTimeout = 30*time.Second, 30*time.Second
	cfg.Env = env
	return dial(t, serve(t, server.New(nil, browser, f, cfg)))
}

// readHAR reads a written trace.
func readHAR(t *testing.T, path string) netroute.HAR {
	t.Helper()
	var h netroute.HAR
	lines := readGz(t, path) // one JSON document
	if len(lines) != 1 {
		t.Fatalf("%s: want one HAR document, got %d lines", path, len(lines))
	}
	raw, _ := json.Marshal(lines[0])
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// A recorded episode of the bundled shop writes its network trace beside
// its trajectory: the browser's document loads, with its own
// headers (Referer, User-Agent), at the canonical origin, never at the instance's port.
func TestRecordedEpisodeWritesItsNetworkTrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cl := shopServer(t, server.Config{TrajectoryDir: dir, Trace: netroute.RecordOptions{BodyLimit: 4096, EpisodeBytes: 64 << 10}}, nil)
	task := bundledTasks(t)[0].task
	var oracle []string
	for _, bt := range bundledTasks(t) {
		if bt.site == "shopping" && bt.task.ID == 20 { // T-shirts sorted by price: a form GET
			task, oracle = bt.task, bt.task.Oracle
		}
	}
	made := cl.call("make", "", map[string]any{"site": "shopping", "task": "shopping.20", "record": map[string]any{}})
	env := made["env"].(string)
	last, err := play(cl, env, oracle)
	if err != nil || last["reward"] != 1.0 {
		t.Fatalf("oracle of %q: reward %v, %v", task.Intent, last["reward"], err)
	}
	cl.call("reset", env, nil) // a second episode, cut short by close
	cl.call("close", env, nil)

	traces, _ := filepath.Glob(filepath.Join(dir, env, "*.har.gz"))
	trajs, _ := filepath.Glob(filepath.Join(dir, env, "*.jsonl.gz"))
	if len(traces) != 2 || len(trajs) != 2 || strings.TrimSuffix(traces[0], ".har.gz") != strings.TrimSuffix(trajs[0], ".jsonl.gz") {
		t.Fatalf("traces %v and trajectories %v: want one of each per episode, numbered alike", traces, trajs)
	}
	h := readHAR(t, traces[0])
	var docs []netroute.HAREntry
	var bodyBytes int
	for _, e := range h.Log.Entries {
		if !strings.HasPrefix(e.Request.URL, "http://shopping.webserv.test/") {
			t.Errorf("entry URL %s: want the canonical origin http://shopping.webserv.test", e.Request.URL)
		}
		bodyBytes += len(e.Response.Content.Text)
		// WebArena-Verified's rule for a navigation: a GET that accepts
		// text/html first (Chromium sends Sec-Fetch-* only to trustworthy
		// origins: https and localhost, not plain-http site origins).
		for _, hd := range e.Request.Headers {
			if hd.Name == "Accept" && strings.HasPrefix(hd.Value, "text/html") && e.Request.Method == "GET" {
				docs = append(docs, e)
			}
		}
	}
	if len(docs) < 3 {
		t.Fatalf("%d document loads in %d entries; the oracle loads the start page and the sorted category", len(docs), len(h.Log.Entries))
	}
	lastDoc := docs[len(docs)-1]
	if lastDoc.Request.URL != "http://shopping.webserv.test/category/t-shirts?sort=price_asc&min=&max=&size=&colour=" || lastDoc.Request.Method != "GET" || lastDoc.Response.Status != 200 {
		t.Errorf("last document load %s %s -> %d", lastDoc.Request.Method, lastDoc.Request.URL, lastDoc.Response.Status)
	}
	hdr := map[string]string{}
	for _, hd := range lastDoc.Request.Headers {
		hdr[strings.ToLower(hd.Name)] = hd.Value
	}
	if !strings.Contains(hdr["user-agent"], "Chrome/") || hdr["upgrade-insecure-requests"] != "1" || hdr["referer"] != "http://shopping.webserv.test/category/t-shirts" || hdr["host"] != "shopping.webserv.test" {
		t.Errorf("the document load's headers are not the browser's: %v", hdr)
	}
	if bodyBytes > 64<<10 {
		t.Errorf("%d body bytes kept; the episode's budget is 64 KiB", bodyBytes)
	}
	if len(lastDoc.Response.Content.Text) == 0 || len(lastDoc.Response.Content.Text) > 4096 {
		t.Errorf("document body of %d bytes kept; want some, at most 4096", len(lastDoc.Response.Content.Text))
	}
	data, _ := os.ReadFile(traces[0])
	if strings.Contains(string(data), "127.0.0.1") {
		t.Errorf("the trace names an instance address")
	}
	t.Logf("episode 1: %d entries, %d document loads, %d body bytes", len(h.Log.Entries), len(docs), bodyBytes)
}
