package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/trajectory"
)

// The UI tests drive the server's own /ui pages in a browser of their own
// (a person's browser, not the environments'): one Chromium for the
// package, started on first use and killed with the test process.
var (
	viewerOnce sync.Once
	viewer     *rod.Browser
	viewerErr  error
)

func uiPage(t *testing.T, u string) *rod.Page {
	t.Helper()
	viewerOnce.Do(func() {
		bin := os.Getenv("WEBSERV_CHROMIUM")
		if bin == "" {
			bin = "/usr/bin/chromium"
			if _, err := os.Stat("/usr/bin/chromium-headless-shell"); err == nil {
				bin = "/usr/bin/chromium-headless-shell"
			}
		}
		l := launcher.New().Bin(bin).Headless(true).Leakless(true).
			Set("disable-background-networking").Set("disable-component-update").Set("no-first-run").Set("disable-gpu")
		if os.Geteuid() == 0 {
			l.Set("no-sandbox")
		}
		var ctl string
		if ctl, viewerErr = l.Launch(); viewerErr != nil {
			return
		}
		viewer = rod.New().ControlURL(ctl)
		viewerErr = viewer.Connect()
	})
	if viewerErr != nil {
		t.Fatalf("launch the viewer's chromium: %v", viewerErr)
	}
	p, err := viewer.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	_ = p.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: 1280, Height: 900, DeviceScaleFactor: 1})
	if err := p.Timeout(20 * time.Second).Navigate(u); err != nil {
		t.Fatal(err)
	}
	return p
}

// until waits for a JavaScript predicate on the page to hold. A predicate
// that throws (it read an element the page has not built yet) has not
// held yet.
func until(t *testing.T, p *rod.Page, what, js string, args ...any) {
	t.Helper()
	guarded := `function (...a) { try { return (` + js + `).apply(this, a) } catch (e) { return false } }`
	if err := p.Timeout(30 * time.Second).Wait(rod.Eval(guarded, args...)); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// text is the text of the first element matching sel.
func text(t *testing.T, p *rod.Page, sel string) string {
	t.Helper()
	el, err := p.Timeout(20 * time.Second).Element(sel)
	if err != nil {
		t.Fatalf("element %s: %v", sel, err)
	}
	s, err := el.Text()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func click(t *testing.T, p *rod.Page, sel string) {
	t.Helper()
	el, err := p.Timeout(20 * time.Second).Element(sel)
	if err != nil {
		t.Fatalf("element %s: %v", sel, err)
	}
	if err := el.Click(proto.InputMouseButtonLeft, 1); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// The live view lists an environment as soon as it is made, follows its
// steps, and drops it when it closes.
func TestLiveViewListsEnvironments(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	p := uiPage(t, base+"/ui")
	until(t, p, "the stream to connect", `() => document.getElementById('status').textContent === 'live'`)
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(3), "goal": "Load the list"})["env"].(string)
	row := fmt.Sprintf(`tr[data-env="%s"]`, env)
	until(t, p, "the new environment's row", `s => !!document.querySelector(s)`, row)
	if got := text(t, p, row); !strings.Contains(got, "Load the list") || !strings.Contains(got, "open") {
		t.Errorf("row = %q; want its site and goal", got)
	}
	cl.call("step", env, map[string]any{"action": `click("load")`})
	until(t, p, "the row to show the step", `(s) => document.querySelector(s).textContent.includes('click("load")')`, row)
	cl.call("close", env, nil)
	until(t, p, "the closed environment to leave the list", `s => !document.querySelector(s)`, row)
}

// A person approves and rejects actions in the live view: a rejected
// action is not run and the agent reads why; an approved one runs; nobody
// deciding in time is a rejection; the recording keeps every verdict.
func TestApproveAndRejectInLiveView(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, base := startServer(t, server.Config{TrajectoryDir: dir})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(5), "approve": true, "approve_timeout_ms": 60000, "record": true})["env"].(string)
	p := uiPage(t, base+"/ui/?env="+env)

	// ask waits until the live view asks about step n (the verdict on an
	// earlier step may still be shown meanwhile).
	ask := func(n int, action string) {
		t.Helper()
		until(t, p, "the pending action", `(n, a) => !document.getElementById('pending').hidden && document.getElementById('pending-step').textContent === String(n) && document.getElementById('pending-action').textContent === a`, n, action)
	}
	step := cl.send("step", env, map[string]any{"action": `click("load")`})
	ask(1, `click("load")`)
	// The live picture shows the page while the action waits.
	until(t, p, "the live picture", `() => document.getElementById('screen').naturalWidth > 0`)
	if err := p.MustElement("#comment").Input("that loads the wrong list"); err != nil {
		t.Fatal(err)
	}
	click(t, p, "#reject")
	r := wait(t, step)
	if r["ok"] != true {
		t.Fatalf("step: %v", r["error"])
	}
	obs := r["result"].(map[string]any)["obs"].(map[string]any)
	if e, _ := obs["last_action_error"].(string); !strings.Contains(e, "rejected") || !strings.Contains(e, "that loads the wrong list") {
		t.Errorf("last_action_error after a reject = %q; want it to say a person rejected it, with the comment", e)
	}
	if h := obs["html"].(string); strings.Contains(h, "loaded 5") {
		t.Errorf("the rejected click ran: %s", h)
	}

	step = cl.send("step", env, map[string]any{"action": `click("load")`})
	ask(2, `click("load")`)
	click(t, p, "#approve")
	r = wait(t, step)
	obs = r["result"].(map[string]any)["obs"].(map[string]any)
	if e := obs["last_action_error"]; e != nil && e != "" || !strings.Contains(obs["html"].(string), "loaded 5") {
		t.Errorf("approved click: error %v, html %s", e, obs["html"])
	}
	until(t, p, "the history to show the verdict", `() => document.getElementById('history').textContent.includes('rejected: that loads the wrong list')`)
	cl.call("close", env, nil)

	// Nobody decides: the action is rejected when its time is up.
	env2 := cl.call("make", "", map[string]any{"start_url": pageURL(6), "approve": true, "approve_timeout_ms": 300})["env"].(string)
	obs = cl.call("step", env2, map[string]any{"action": `click("load")`})["obs"].(map[string]any)
	if e, _ := obs["last_action_error"].(string); !strings.Contains(e, "nobody approved") || strings.Contains(obs["html"].(string), "loaded 6") {
		t.Errorf("timed-out approval: error %q", e)
	}

	files, _ := trajectory.Find(filepath.Join(dir, env))
	if len(files) != 1 {
		t.Fatalf("recordings: %v", files)
	}
	ep, err := trajectory.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Steps) != 2 || ep.Steps[0].Review == nil || ep.Steps[0].Review.Verdict != trajectory.VerdictRejected ||
		ep.Steps[0].Review.Comment != "that loads the wrong list" || ep.Steps[1].Review == nil || ep.Steps[1].Review.Verdict != trajectory.VerdictApproved {
		t.Errorf("recorded reviews: %+v", ep.Steps)
	}
	// Approval needs the UI.
	_, plain := startServer(t, server.Config{NoUI: true})
	dial(t, plain).fail("make", "", map[string]any{"start_url": pageURL(1), "approve": true}, server.CodeNotSupported)
}

// The replayer lists recorded episodes, filters them, and steps through
// one with its screenshots and what changed at each step; every step has
// a link of its own.
func TestReplayerStepsThroughEpisode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, base := startServer(t, server.Config{TrajectoryDir: dir})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(7), "goal": "Load and sign", "record": map[string]any{"screenshots": true}})["env"].(string)
	cl.call("step", env, map[string]any{"action": `click("load")`})
	cl.call("step", env, map[string]any{"action": `click("missing-button")`})
	cl.call("step", env, map[string]any{"action": `stop [loaded 7]`})
	cl.call("close", env, nil)

	p := uiPage(t, base+"/ui/replay.html")
	row := `#episodes tbody tr`
	until(t, p, "the episode in the list", `s => !!document.querySelector(s)`, row)
	if got := text(t, p, row); !strings.Contains(got, "Load and sign") || !strings.Contains(got, "open") {
		t.Errorf("episode row = %q", got)
	}
	filter := p.MustElement("#filter")
	_ = filter.Input("errors>0 sign")
	until(t, p, "the filter to keep it", `s => document.querySelectorAll(s).length === 1`, row)
	_ = filter.SelectAllText()
	_ = filter.Input("steps>5")
	until(t, p, "the filter to drop it", `s => document.querySelectorAll(s).length === 0`, row)
	_ = filter.SelectAllText()
	_ = filter.Input("")
	until(t, p, "the list back", `s => document.querySelectorAll(s).length === 1`, row)

	click(t, p, row)
	until(t, p, "the first observation's screenshot", `() => { const i = document.getElementById('shot'); return !i.hidden && i.naturalWidth > 0 }`)
	if got := text(t, p, "#step-title"); got != "First observation" {
		t.Errorf("title = %q", got)
	}
	p.MustElement("body").MustType('j') // the next step
	until(t, p, "step 1", `() => (document.getElementById('step-action') || {}).textContent === 'click("load")'`)
	until(t, p, "step 1's screenshot", `() => { const i = document.getElementById('shot'); return i.src.includes('step=1') && i.naturalWidth > 0 }`)
	// The step's "before" picture has its target outlined.
	until(t, p, "the target outlined on the picture before step 1", `() => { const b = document.getElementById('target'); return !b.hidden && b.getBoundingClientRect().width > 10 }`)
	added := p.MustEval(`() => [...document.querySelectorAll('#obs .add')].map(e => e.textContent).join('')`).Str()
	removed := p.MustEval(`() => [...document.querySelectorAll('#obs .del')].map(e => e.textContent).join('')`).Str()
	if !strings.Contains(added, "loaded 7") || !strings.Contains(removed, "empty") {
		t.Errorf("step 1's diff: added %q, removed %q; want the list loaded", added, removed)
	}
	if h := p.MustInfo().URL; !strings.Contains(h, "#step=1") {
		t.Errorf("URL of step 1 = %s; want its own link", h)
	}
	// The step's requests (from the episode's network trace) are on one
	// timeline with its phases: the click's fetch began after the action
	// did and before the step replied.
	files, _ := trajectory.Find(dir)
	if len(files) != 1 {
		t.Fatalf("recordings: %v", files)
	}
	rel, _ := filepath.Rel(dir, files[0])
	var view struct {
		Steps   []trajectory.Line      `json:"steps"`
		Network [][]trajectory.Request `json:"network"`
	}
	getJSON(t, base+"/ui/api/episode?path="+url.QueryEscape(rel), &view)
	if len(view.Network) != 4 {
		t.Fatalf("network of %d steps, want the start and 3", len(view.Network))
	}
	if !hasRequest(view.Network[0], "/page?n=7") {
		t.Errorf("the start's requests %+v lack the start page", view.Network[0])
	}
	s1 := view.Steps[0]
	total := s1.InfoFloat("action_ms") + s1.InfoFloat("settle_ms") + s1.InfoFloat("extract_ms")
	for _, r := range view.Network[1] {
		if strings.Contains(r.URL, "/slow?") && (r.StartMS < 0 || r.StartMS > total || r.AfterReply) {
			t.Errorf("step 1's fetch began at %.0f ms (after the reply: %v); the step took %.0f ms", r.StartMS, r.AfterReply, total)
		}
	}
	if !hasRequest(view.Network[1], "/slow?") {
		t.Errorf("step 1's requests %+v lack its fetch", view.Network[1])
	}
	until(t, p, "step 1's fetch on the network timeline", `() => [...document.querySelectorAll('#timeline .tl-req')].some(r => r.textContent.includes('/slow?'))`)
	if got := text(t, p, "#timeline .tl-phases"); !strings.Contains(got, "action") || !strings.Contains(got, "settle") {
		t.Errorf("step 1's phases = %q", got)
	}

	// A step's own link opens that step.
	link := p.MustEval(`() => document.querySelector('#steps tr[data-step="2"] a').href`).Str()
	p2 := uiPage(t, link)
	until(t, p2, "step 2 from its link", `() => (document.getElementById('step-action') || {}).textContent === 'click("missing-button")'`)
	if info := text(t, p2, "#step-info"); !strings.Contains(info, "no element with id 'missing-button'") || !strings.Contains(info, "settle") {
		t.Errorf("step 2 = %q; want its error and settle state", info)
	}
	until(t, p2, "no change at the failed step", `() => !!document.getElementById('no-change')`)
}

// flippable serves /form: a page whose answer to "Load" is "loaded v1" or,
// once flipped, "loaded v2".
func flippable(t *testing.T) (*httptest.Server, *atomic.Bool) {
	var flipped atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Form</title><h1>Form</h1>
<button onclick="fetch('/answer').then(r => r.text()).then(t => { document.getElementById('out').textContent = t })">Load</button>
<p id="out">empty</p><input placeholder="Name">`)
	})
	mux.HandleFunc("/answer", func(w http.ResponseWriter, r *http.Request) {
		v := "v1"
		if flipped.Load() {
			v = "v2"
		}
		fmt.Fprint(w, html.EscapeString("loaded "+v))
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs, &flipped
}

// A re-run of a recorded episode on an unchanged page sees what the
// recording saw; on a changed page it reports the first step that differs
// (here from the replayer's button).
func TestRerunFindsFirstDivergence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, base := startServer(t, server.Config{TrajectoryDir: dir})
	site, flipped := flippable(t)
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": site.URL + "/form", "record": true})["env"].(string)
	cl.call("step", env, map[string]any{"action": `fill("name", "Ada")`})
	cl.call("step", env, map[string]any{"action": `click("load")`})
	cl.call("step", env, map[string]any{"action": `stop [done]`})
	cl.call("close", env, nil)
	files, _ := trajectory.Find(dir)
	if len(files) != 1 {
		t.Fatalf("recordings: %v", files)
	}
	ep, err := trajectory.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := s.Rerun(ctx, ep)
	if err != nil || rep.Diverged || rep.Steps != 3 {
		t.Fatalf("re-run of the unchanged page: %+v, %v", rep, err)
	}
	flipped.Store(true)
	rel, _ := filepath.Rel(dir, files[0])
	p := uiPage(t, base+"/ui/replay.html?ep="+url.QueryEscape(rel))
	until(t, p, "the re-run button", `() => !document.getElementById('rerun').hidden`)
	click(t, p, "#rerun")
	until(t, p, "the re-run's report", `() => document.getElementById('rerun-report').textContent.startsWith('diverged')`)
	got := text(t, p, "#rerun-report")
	if !strings.Contains(got, "diverged at step 2") || !strings.Contains(got, "loaded v1") || !strings.Contains(got, "loaded v2") {
		t.Errorf("report = %q; want step 2, with the recorded and the re-run line", got)
	}
	until(t, p, "the replayer to show step 2", `() => location.hash === '#step=2'`)
}

// A re-run of an oracle episode of the bundled shop, on a fresh instance
// of the same site and task, sees every observation as recorded.
func TestRerunBundledShop(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	ctx := context.Background()
	sites, sets, err := catalog.Bundled(ctx, bundled.Options{DataDir: filepath.Join(tmp, "shop-data"), Command: []string{buildShop(t, tmp)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New(sites, []hosting.Backend{localBackend(t)}, nil)
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	// The default idle window: the shop's search suggestions are debounced
	// 250 ms, so with the tests' 150 ms a step may be observed before or
	// after they arrive, and a re-run rightly reports that.
	env := envcore.Config{IdleWindow: 500 * time.Millisecond, ActionTimeout: 30 * time.Second, SettleTimeout: 30 * time.Second}
	dir := filepath.Join(tmp, "trajectories")
	s := server.New(nil, browser, f, server.Config{Env: env, TrajectoryDir: dir})
	cl := dial(t, serve(t, s))
	var task tasks.Task
	for _, bt := range bundledTasks(t) {
		if bt.site == "shopping" && bt.task.ID == 0 {
			task = bt.task
		}
	}
	id := cl.call("make", "", map[string]any{"site": "shopping", "task": "shopping.0", "record": true})["env"].(string)
	if _, err := play(cl, id, task.Oracle); err != nil {
		t.Fatal(err)
	}
	cl.call("close", id, nil)
	files, _ := trajectory.Find(dir)
	if len(files) != 1 {
		t.Fatalf("recordings: %v", files)
	}
	ep, err := trajectory.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if ep.Reward() != 1 {
		t.Fatalf("the oracle episode scored %v", ep.Reward())
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rep, err := s.Rerun(rctx, ep)
	if err != nil || rep.Diverged || rep.Steps != len(task.Oracle) {
		t.Fatalf("re-run of shopping.0: %+v, %v", rep, err)
	}
}

// The UI asks for the server's token exactly as the WebSocket does; a
// server without its UI has no /ui.
func TestUINeedsTheToken(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{Token: "s3cret"})
	for path, want := range map[string]int{
		"/ui/":                          http.StatusUnauthorized,
		"/ui/api/envs":                  http.StatusUnauthorized,
		"/ui/api/envs?token=wrong":      http.StatusUnauthorized,
		"/ui/?token=s3cret":             http.StatusOK,
		"/ui/replay.html?token=s3cret":  http.StatusOK,
		"/ui/api/envs?token=s3cret":     http.StatusOK,
		"/ui/api/episodes?token=s3cret": http.StatusNotFound, // no --trajectories: no replayer
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	_, plain := startServer(t, server.Config{NoUI: true})
	resp, err := http.Get(plain + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/ with --no-ui = %d", resp.StatusCode)
	}
}

func hasRequest(rs []trajectory.Request, part string) bool {
	for _, r := range rs {
		if strings.Contains(r.URL, part) {
			return true
		}
	}
	return false
}

// getJSON reads a JSON reply into v.
func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}
