package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/webserv-rl/webserv/server"
)

func TestEveryOpRoundTrips(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)

	hello := cl.call("hello", "", map[string]any{"version": 1})
	if hello["protocol"] != int8(1) && fmt.Sprint(hello["protocol"]) != "1" {
		t.Errorf("hello = %v", hello)
	}
	if hello["version"] != server.Version || !strings.HasPrefix(fmt.Sprint(hello["build"]), "webserv "+server.Version+" (") {
		t.Errorf("hello names no release: version %v, build %v", hello["version"], hello["build"])
	}
	if limits, _ := hello["limits"].(map[string]any); fmt.Sprint(limits["max_envs"]) != "32" {
		t.Errorf("hello limits = %v", hello["limits"])
	}
	sites := cl.call("sites", "", nil)
	if !strings.Contains(fmt.Sprint(sites["sites"]), "name:open") {
		t.Errorf("sites = %v", sites)
	}
	if tasks := cl.call("tasks", "", map[string]any{"site": "open"}); fmt.Sprint(tasks["tasks"]) != "[]" {
		t.Errorf("tasks = %v", tasks)
	}

	made := cl.call("make", "", map[string]any{"site": "open", "start_url": pageURL(1), "goal": "load the list"})
	env, _ := made["env"].(string)
	obs := obsOf(made)
	if !strings.HasPrefix(env, "env-") || obs["title"] != "Page 1" || obs["goal"] != "load the list" {
		t.Fatalf("make = %v", made)
	}
	res := cl.call("step", env, map[string]any{"action": `click("load")`})
	obs = obsOf(res)
	if !strings.Contains(obs["html"].(string), "loaded 1") || res["reward"] != 0.0 || res["terminated"] != false || res["truncated"] != false {
		t.Errorf("step = %v", res)
	}
	info, _ := res["info"].(map[string]any)
	if info["settled"] != true || fmt.Sprint(info["step"]) != "1" || info["settle_ms"].(float64) < 100 {
		t.Errorf("step info = %v", info)
	}
	res = cl.call("step", env, map[string]any{"action": map[string]any{"type": "type", "target": "name", "text": "Ada"}})
	if inputs := fmt.Sprint(obsOf(res)["inputs"]); !strings.Contains(inputs, "value:Ada") {
		t.Errorf("structured action: inputs = %s", inputs)
	}
	o := cl.call("observe", env, map[string]any{"observe": map[string]any{"screenshot": true, "axtree": true}})
	if shot, _ := obsOf(o)["screenshot"].([]byte); !bytes.HasPrefix(shot, []byte("\x89PNG")) {
		t.Errorf("observe screenshot is not PNG bytes: %T", obsOf(o)["screenshot"])
	}
	if !strings.Contains(obsOf(o)["axtree"].(string), `[load] button "Load"`) {
		t.Errorf("observe axtree = %v", obsOf(o)["axtree"])
	}
	res = cl.call("reset", env, map[string]any{"options": map[string]any{"start_url": pageURL(2)}})
	if obsOf(res)["title"] != "Page 2" {
		t.Errorf("reset to a new start_url: %v", obsOf(res)["title"])
	}
	stats := cl.call("stats", "", nil)
	if fmt.Sprint(stats["envs_live"]) != "1" || fmt.Sprint(stats["steps_total"]) != "2" {
		t.Errorf("stats = %v", stats)
	}
	for _, op := range []string{"snapshot", "restore", "fork"} {
		cl.fail(op, env, nil, server.CodeNotSupported)
	}
	res = cl.call("step", env, map[string]any{"action": "stop [done]"})
	if res["terminated"] != true || res["info"].(map[string]any)["answer"] != "done" {
		t.Errorf("terminate = %v", res)
	}
	cl.fail("step", env, map[string]any{"action": "noop()"}, server.CodeEpisodeOver)
	if closed := cl.call("close", env, nil); closed["closed"] != true {
		t.Errorf("close = %v", closed)
	}
	cl.fail("step", env, map[string]any{"action": "noop()"}, server.CodeUnknownEnv)
}

func TestFiftyEnvironmentsSteppedInParallel(t *testing.T) {
	t.Parallel()
	const n = 50
	_, base := startServer(t, server.Config{MaxCreating: n, MaxEnvs: n})
	cl := dial(t, base)
	makes := make([]chan map[string]any, n)
	for i := range makes {
		makes[i] = cl.send("make", "", map[string]any{"start_url": pageURL(i)})
	}
	envs := make([]string, n)
	for i, ch := range makes {
		r := wait(t, ch)
		if r["ok"] != true {
			t.Fatalf("make %d: %v", i, r["error"])
		}
		res := r["result"].(map[string]any)
		envs[i] = res["env"].(string)
		if title := obsOf(res)["title"]; title != fmt.Sprintf("Page %d", i) {
			t.Fatalf("make %d got %v", i, title)
		}
	}
	// Two steps per environment, all sent at once: each environment runs
	// its own in order, and every reply reaches the request with its id.
	var firsts, seconds []chan map[string]any
	for _, env := range envs {
		firsts = append(firsts, cl.send("step", env, map[string]any{"action": `click("load")`}))
		seconds = append(seconds, cl.send("step", env, map[string]any{"action": `fill("name", "second")`}))
	}
	for i := range envs {
		a, b := wait(t, firsts[i]), wait(t, seconds[i])
		if a["ok"] != true || b["ok"] != true {
			t.Fatalf("env %d: %v / %v", i, a["error"], b["error"])
		}
		html := obsOf(b["result"].(map[string]any))["html"].(string)
		if !strings.Contains(html, fmt.Sprintf("loaded %d", i)) || !strings.Contains(html, `value="second"`) {
			t.Errorf("env %d's second step does not follow its first:\n%s", i, html)
		}
		if fmt.Sprint(b["result"].(map[string]any)["info"].(map[string]any)["step"]) != "2" {
			t.Errorf("env %d: step count %v", i, b["result"])
		}
	}
}

func TestIdleEnvironmentsAreReclaimed(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, server.Config{TTL: 400 * time.Millisecond})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(7)})["env"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if fmt.Sprint(cl.call("stats", "", nil)["envs_live"]) == "0" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	e := cl.fail("step", env, map[string]any{"action": "noop()"}, server.CodeUnknownEnv)
	if !strings.Contains(e["message"].(string), "reclaimed") {
		t.Errorf("message = %v", e["message"])
	}
	_ = s
}

func TestReconnectAndContinue(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	first := dial(t, base)
	env := first.call("make", "", map[string]any{"start_url": pageURL(3)})["env"].(string)
	first.call("step", env, map[string]any{"action": `fill("name", "kept")`})
	_ = first.c.Close(websocket.StatusNormalClosure, "bye")

	second := dial(t, base)
	res := second.call("step", env, map[string]any{"action": `click("load")`})
	html := obsOf(res)["html"].(string)
	if !strings.Contains(html, `value="kept"`) || !strings.Contains(html, "loaded 3") {
		t.Errorf("environment lost its state across reconnect:\n%s", html)
	}
}

func TestTruncationAtMaxSteps(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(4), "max_steps": 2})["env"].(string)
	if r := cl.call("step", env, map[string]any{"action": "noop()"}); r["truncated"] != false {
		t.Errorf("step 1 truncated")
	}
	if r := cl.call("step", env, map[string]any{"action": "noop()"}); r["truncated"] != true || r["terminated"] != false {
		t.Errorf("step 2 = %v", r)
	}
	cl.fail("step", env, map[string]any{"action": "noop()"}, server.CodeEpisodeOver)
	cl.call("reset", env, nil)
	if r := cl.call("step", env, map[string]any{"action": "noop()"}); r["truncated"] != false {
		t.Errorf("reset did not start a new episode: %v", r)
	}
}

func TestStepDeadlineTruncates(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(4), "step_timeout_ms": 50})["env"].(string)
	// A step waits at least the idle window (150ms here), past the 50ms deadline.
	r := cl.call("step", env, map[string]any{"action": "noop()"})
	if r["truncated"] != true || r["terminated"] != false {
		t.Errorf("a step past its deadline: %v", r)
	}
	cl.fail("step", env, map[string]any{"action": "noop()"}, server.CodeEpisodeOver)
}

func TestBadInputGetsErrorsAndLosesNothing(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{MaxFrame: 4096})
	cl := dial(t, base)
	other := cl.call("make", "", map[string]any{"start_url": pageURL(9)})["env"].(string)
	ctx := context.Background()

	// Frames the decoder cannot use: replies with id 0, connection kept.
	for _, frame := range [][]byte{{0xc1}, {0x93, 1, 2, 3}, []byte("\x81\xa2op\x01")} {
		if err := cl.c.Write(ctx, websocket.MessageBinary, frame); err != nil {
			t.Fatal(err)
		}
		r := <-cl.unsolic
		if e := r["error"].(map[string]any); e["code"] != string(server.CodeBadFrame) {
			t.Errorf("frame %x: %v", frame, r)
		}
	}
	if err := cl.c.Write(ctx, websocket.MessageText, []byte(`{"op":"stats"}`)); err != nil {
		t.Fatal(err)
	}
	if r := <-cl.unsolic; r["error"].(map[string]any)["code"] != string(server.CodeBadFrame) {
		t.Errorf("text frame: %v", r)
	}
	big := cl.send("make", "", map[string]any{"start_url": pageURL(1), "goal": strings.Repeat("x", 8000)})
	_ = big
	if r := <-cl.unsolic; r["error"].(map[string]any)["code"] != string(server.CodeFrameTooLarge) {
		t.Errorf("big frame: %v", r)
	}

	cl.fail("dance", "", nil, server.CodeUnknownOp)
	cl.fail("make", "", map[string]any{"site": "open"}, server.CodeBadArgs)                                // no start_url
	cl.fail("make", "", map[string]any{"start_url": "ftp://x"}, server.CodeBadArgs)                        // not http
	cl.fail("make", "", map[string]any{"start_url": pageURL(1), "idle_ms": "soon"}, server.CodeBadArgs)    // mistyped
	cl.fail("make", "", map[string]any{"site": "gitlab", "start_url": pageURL(1)}, server.CodeBadArgs)     // unknown site
	cl.fail("step", "env-nope", map[string]any{"action": "noop()"}, server.CodeUnknownEnv)                 // unknown env
	cl.fail("step", "", map[string]any{"action": "noop()"}, server.CodeBadArgs)                            // no env
	cl.fail("step", other, nil, server.CodeBadArgs)                                                        // no action
	cl.fail("step", other, map[string]any{"action": 42}, server.CodeBadArgs)                               // mistyped action
	cl.fail("step", other, map[string]any{"action": map[string]any{"type": 5}}, server.CodeBadArgs)        // bad action map
	cl.fail("reset", other, map[string]any{"options": map[string]any{"start_url": 1}}, server.CodeBadArgs) // mistyped option

	// An action string that does not parse is the agent's error, reported
	// in the observation like any failed action.
	res := cl.call("step", other, map[string]any{"action": "click [oops"})
	if e := obsOf(res)["last_action_error"].(string); !strings.Contains(e, "missing ]") {
		t.Errorf("unparsable action: %v", e)
	}

	// A client that closes its connection in the middle of a slow step:
	// the step finishes on the server, and the environment serves the next
	// connection. (One that vanishes without closing frees its
	// environments: TestLostClientLeavesNothingBehind.)
	quitter := dial(t, base)
	slow := quitter.call("make", "", map[string]any{"start_url": pageURL(5)})["env"].(string)
	quitter.send("step", slow, map[string]any{"action": `click("load")`})
	_ = quitter.c.Close(websocket.StatusNormalClosure, "bye")
	back := dial(t, base)
	if html := obsOf(back.call("observe", slow, nil))["html"].(string); !strings.Contains(html, "loaded 5") {
		t.Errorf("step of a vanished client did not complete:\n%s", html)
	}

	// Through all of it the other environment kept working.
	res = cl.call("step", other, map[string]any{"action": `click("load")`})
	if !strings.Contains(obsOf(res)["html"].(string), "loaded 9") {
		t.Errorf("other environment disturbed")
	}
}

func TestCapacityAnswersRetryAfter(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{MaxEnvs: 1})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(1)})["env"].(string)
	e := cl.fail("make", "", map[string]any{"start_url": pageURL(2)}, server.CodeCapacity)
	if e["retryable"] != true || e["retry_after"].(float64) <= 0 {
		t.Errorf("capacity error = %v", e)
	}
	cl.call("close", env, nil)
	cl.call("make", "", map[string]any{"start_url": pageURL(2)})
}

func TestMakesQueueForACreationPlace(t *testing.T) {
	t.Parallel()
	// One place, and a burst of three makes: they wait their turn and all
	// succeed, each with its own page.
	_, base := startServer(t, server.Config{MaxCreating: 1})
	cl := dial(t, base)
	var makes []chan map[string]any
	for i := range 3 {
		makes = append(makes, cl.send("make", "", map[string]any{"start_url": pageURL(i)}))
	}
	for i, ch := range makes {
		r := wait(t, ch)
		if r["ok"] != true {
			t.Fatalf("make %d of a queued burst: %v", i, r["error"])
		}
		if title := obsOf(r["result"].(map[string]any))["title"]; title != fmt.Sprintf("Page %d", i) {
			t.Errorf("make %d got %v", i, title)
		}
	}
	if st := cl.call("stats", "", nil); toUint(st["envs_queued"]) != 0 || toUint(st["envs_creating"]) != 0 {
		t.Errorf("after the burst: %v", st)
	}

	// A make that waited longer than CreateWait is answered capacity,
	// retryable; the one holding the place is not disturbed.
	_, base = startServer(t, server.Config{MaxCreating: 1, CreateWait: 100 * time.Millisecond})
	cl = dial(t, base)
	slow := cl.send("make", "", map[string]any{"start_url": pages.URL + "/slow?ms=2000"})
	// The slow make takes the place first.
	for deadline := time.Now().Add(30 * time.Second); toUint(cl.call("stats", "", nil)["envs_creating"]) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the slow make never took the place")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e := cl.fail("make", "", map[string]any{"start_url": pageURL(2)}, server.CodeCapacity)
	if e["retryable"] != true || e["retry_after"].(float64) <= 0 || !strings.Contains(e["message"].(string), "retry") {
		t.Errorf("capacity error after the wait = %v", e)
	}
	if r := wait(t, slow); r["ok"] != true {
		t.Errorf("the make holding the place: %v", r["error"])
	}
}

func TestTokenIsRequired(t *testing.T) {
	t.Parallel()
	if err := server.CheckListen("0.0.0.0:8765", ""); err == nil || !strings.Contains(err.Error(), "without a token") {
		t.Errorf("CheckListen(0.0.0.0) = %v", err)
	}
	for _, ok := range []string{"127.0.0.1:0", "localhost:8765", "[::1]:1"} {
		if err := server.CheckListen(ok, ""); err != nil {
			t.Errorf("CheckListen(%s) = %v", ok, err)
		}
	}
	if err := server.CheckListen("0.0.0.0:8765", "s3cret"); err != nil {
		t.Errorf("CheckListen with token = %v", err)
	}
	_, base := startServer(t, server.Config{Token: "s3cret"})
	cl := dial(t, base)
	cl.fail("stats", "", nil, server.CodeUnauthorized)
	cl.fail("hello", "", map[string]any{"token": "guess"}, server.CodeUnauthorized)
	cl.call("hello", "", map[string]any{"token": "s3cret"})
	cl.call("stats", "", nil)
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(1)})["env"].(string)
	cl.call("step", env, map[string]any{"action": "noop()"})
	cl.fail("dance", "", nil, server.CodeUnknownOp)
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if h := get("/healthz"); strings.TrimSpace(h) != "ok" {
		t.Errorf("healthz = %q", h)
	}
	m := get("/metrics")
	for _, want := range []string{"webserv_envs_live 1", "webserv_steps_total 1", "webserv_step_seconds_bucket", `webserv_errors_total{code="unknown_op"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestConcurrentClientsOnOneEnvironmentKeepOrder(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	a, b := dial(t, base), dial(t, base)
	env := a.call("make", "", map[string]any{"start_url": pageURL(6)})["env"].(string)
	var wg sync.WaitGroup
	var results [2]map[string]any
	for i, cl := range []*client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = cl.call("step", env, map[string]any{"action": "noop()"})
		}()
	}
	wg.Wait()
	steps := fmt.Sprint(results[0]["info"].(map[string]any)["step"], results[1]["info"].(map[string]any)["step"])
	if steps != "1 2" && steps != "2 1" {
		t.Errorf("two clients' steps on one environment were not serialized: %s", steps)
	}
}
