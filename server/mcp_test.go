package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// mcpConnect opens an MCP session on base's /v1/mcp with the SDK's
// client over Streamable HTTP; query is the URL's query ("" for none).
func mcpConnect(t *testing.T, base, query string, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	endpoint := base + "/v1/mcp"
	if query != "" {
		endpoint += "?" + query
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "webserv-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func mustMCP(t *testing.T, base, query string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcpConnect(t, base, query, nil)
	if err != nil {
		t.Fatalf("connect to %s/v1/mcp: %v", base, err)
	}
	return cs
}

// callTool calls a tool and fails the test on a protocol error (an error
// result is returned, for the test to look at).
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

// okTool is callTool for a call that must succeed.
func okTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res := callTool(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s %v: error result: %s", name, args, textOf(res))
	}
	return res
}

// textOf is a result's text content.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structured content is %T, want an object: %s", res.StructuredContent, textOf(res))
	}
	return m
}

// idOf finds the id of the element whose line in the accessibility tree
// contains label.
func idOf(t *testing.T, text, label string) string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, label) {
			if m := regexp.MustCompile(`\[([^\]]+)\]`).FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no element with %q in:\n%s", label, text)
	return ""
}

// waitEnvs waits until the server has n environments open (closing runs
// after the session's end is noticed).
func waitEnvs(t *testing.T, base string, n int) {
	t.Helper()
	cl := dial(t, base)
	live := func() int { return int(toUint(cl.call("stats", "", nil)["envs_live"])) }
	deadline := time.Now().Add(30 * time.Second)
	for live() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the server still has %d environments open, want %d", live(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The tools are the control tools and one tool per action of the grammar,
// with typed arguments: element ids strings, coordinates numbers.
func TestMCPToolsAreDerivedFromTheActions(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cs := mustMCP(t, base, "")
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		schemas[tool.Name] = tool.InputSchema.(map[string]any)
	}
	want := slices.Sorted(slices.Values(server.MCPToolNames()))
	if slices.Sort(names); !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	for _, d := range envcore.Actions() {
		if _, ok := schemas[d.Name]; !ok {
			t.Errorf("action %s has no tool", d.Name)
		}
	}
	for _, c := range []struct{ tool, arg, typ string }{
		{"click", "bid", "string"}, {"fill", "value", "string"}, {"fill", "enter", "boolean"},
		{"mouse_click", "x", "number"}, {"scroll", "delta_y", "number"}, {"tab_focus", "index", "integer"},
		{"select_option", "options", "array"}, {"reset", "task", "string"}, {"click", "screenshot", "boolean"},
	} {
		props := schemas[c.tool]["properties"].(map[string]any)
		p, ok := props[c.arg].(map[string]any)
		if !ok || p["type"] != c.typ {
			t.Errorf("%s.%s: schema %v, want type %s", c.tool, c.arg, props[c.arg], c.typ)
		}
	}
	if req := schemas["click"]["required"].([]any); !slices.Contains(req, any("bid")) {
		t.Errorf("click's required arguments %v lack bid", req)
	}
	// The sites are resources, with their descriptions.
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "webserv://sites/open"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "start_url") {
		t.Errorf("the open site's resource: %v %v", rr, err)
	}
	// The prompt explains the actions from the same descriptions.
	p, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "webserv_actions"})
	if err != nil {
		t.Fatal(err)
	}
	text := p.Messages[0].Content.(*mcp.TextContent).Text
	for _, d := range envcore.Actions() {
		if !strings.Contains(text, "- "+d.Name+"(") || !strings.Contains(text, d.Example) {
			t.Errorf("the prompt does not explain %s:\n%s", d.Name, text)
		}
	}
}

// An episode through MCP tools: reset on a page, the observation as an
// accessibility tree, a click that loads text, an action the page refuses
// as an error result after which the session goes on, a bad argument
// refused with what is wrong, and the task resource.
func TestMCPResetClickObserve(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cs := mustMCP(t, base, "")

	res := okTool(t, cs, "reset", map[string]any{"start_url": pageURL(7), "goal": "load the list"})
	text := textOf(res)
	if !strings.Contains(text, "env 7") || !strings.HasPrefix(text, "Goal: load the list\n\n") {
		t.Fatalf("reset's observation lacks the page or the goal:\n%s", text)
	}
	st := structOf(t, res)
	if !strings.HasPrefix(st["env"].(string), "env-") || st["step"].(float64) != 0 || st["goal"] != "load the list" {
		t.Errorf("reset's structured content: %v", st)
	}

	load := idOf(t, text, "Load")
	res = okTool(t, cs, "click", map[string]any{"bid": load})
	if !strings.Contains(textOf(res), "loaded 7") {
		t.Errorf("the click's observation does not show what it loaded:\n%s", textOf(res))
	}
	st = structOf(t, res)
	if st["step"].(float64) != 1 || st["reward"].(float64) != 0 || st["terminated"] != false || !strings.HasPrefix(st["action"].(string), "click(") {
		t.Errorf("the click's structured content: %v", st)
	}

	res = callTool(t, cs, "click", map[string]any{"bid": "no-such-element"})
	if !res.IsError || !strings.Contains(textOf(res), "The action failed") || !strings.Contains(textOf(res), "no-such-element") {
		t.Errorf("a click on a missing element: error %v, text:\n%s", res.IsError, textOf(res))
	}
	if structOf(t, res)["last_action_error"] == nil {
		t.Errorf("the failed action's structured content lacks last_action_error: %v", res.StructuredContent)
	}
	res = okTool(t, cs, "observe", map[string]any{"view": "html", "screenshot": true})
	if !strings.Contains(textOf(res), "<h1") || len(res.Content) != 2 {
		t.Errorf("observe with view html and a screenshot: %d contents, text:\n%s", len(res.Content), textOf(res))
	} else if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || len(img.Data) < 100 {
		t.Errorf("the screenshot content: %#v", res.Content[1])
	}

	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"click", map[string]any{"bid": 12}, "bid must be string"},
		{"click", map[string]any{}, "click needs bid"},
		{"click", map[string]any{"ref": "e1"}, "unknown argument ref"},
		{"mouse_click", map[string]any{"x": "10", "y": 5}, "x must be number"},
		{"observe", map[string]any{"view": "pdf"}, `view must be "axtree" or "html"`},
	} {
		res := callTool(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(textOf(res), "bad_args") || !strings.Contains(textOf(res), c.want) {
			t.Errorf("%s %v: error %v, text %q; want a bad_args error saying %q", c.tool, c.args, res.IsError, textOf(res), c.want)
		}
	}

	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "webserv://task"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rr.Contents[0].Text, "goal: load the list") {
		t.Errorf("the task resource: %q", rr.Contents[0].Text)
	}
	res = okTool(t, cs, "task", nil)
	if !strings.Contains(textOf(res), "goal: load the list") {
		t.Errorf("the task tool: %q", textOf(res))
	}
}

// Closing the MCP session frees its environment; a session that never
// called reset has none and tells the model how to start.
func TestMCPSessionCloseFreesItsEnvironment(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cs := mustMCP(t, base, "start_url="+pageURL(3))
	res := okTool(t, cs, "observe", nil) // made lazily from the URL's defaults
	if !strings.Contains(textOf(res), "env 3") {
		t.Fatalf("the lazily made environment's observation:\n%s", textOf(res))
	}
	waitEnvs(t, base, 1)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitEnvs(t, base, 0)

	bare := mustMCP(t, base, "")
	res = callTool(t, bare, "click", map[string]any{"bid": "x"})
	if !res.IsError || !strings.Contains(textOf(res), "call reset") {
		t.Errorf("an action before any environment: %q", textOf(res))
	}
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// /v1/mcp is behind the server's token, as /v1/ws is: in an
// Authorization header or the URL's query.
func TestMCPNeedsTheToken(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{Token: "sesame"})
	if _, err := mcpConnect(t, base, "", nil); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Errorf("a session without the token: %v, want unauthorized", err)
	}
	if _, err := mcpConnect(t, base, "token=wrong", nil); err == nil {
		t.Error("a session with a wrong token was accepted")
	}
	mustMCP(t, base, "token=sesame")
	if _, err := mcpConnect(t, base, "", &http.Client{Transport: bearer{"sesame"}}); err != nil {
		t.Errorf("a session with the token as a bearer: %v", err)
	}
	resp, err := http.Get(base + "/v1/mcp?token=sesame&sight=shopping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown query parameter: status %d, want 400", resp.StatusCode)
	}
}

// mcpShop serves the bundled shop (sites shopping and cms) and returns
// its base URL.
func mcpShop(t *testing.T, backend hosting.Backend) string {
	t.Helper()
	dir := t.TempDir()
	sites, sets, err := catalog.Bundled(context.Background(), bundled.Options{DataDir: filepath.Join(dir, "shop-data"), Command: []string{buildShop(t, dir)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New(sites, []hosting.Backend{backend}, nil)
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	env := envConfig()
	env.ActionTimeout, env.SettleTimeout = 30*time.Second, 30*time.Second
	return serve(t, server.New(nil, browser, f, server.Config{Env: env}))
}

// toolCall is the MCP tool call of an action in the call form.
func toolCall(t *testing.T, action string) (string, map[string]any) {
	t.Helper()
	a, err := envcore.ParseAction(action)
	if err != nil {
		t.Fatal(err)
	}
	switch a.Type {
	case envcore.Click:
		return "click", map[string]any{"bid": a.Target}
	case envcore.Type:
		return "fill", map[string]any{"bid": a.Target, "value": a.Text, "enter": a.Enter}
	case envcore.Select:
		opts := make([]any, len(a.Options))
		for i, o := range a.Options {
			opts[i] = o
		}
		return "select_option", map[string]any{"bid": a.Target, "options": opts}
	case envcore.Goto:
		return "goto", map[string]any{"url": a.URL}
	case envcore.Terminate:
		return "stop", map[string]any{"answer": a.Answer}
	}
	t.Fatalf("no tool call for %s in this test", action)
	return "", nil
}

// A bundled task solved through MCP tools: its oracle (from the tasks op)
// gets reward 1 with the grading in the last result; the wrong sequence,
// after a reset, 0. Forking the solved state gives an environment another
// session attaches to and drives independently.
func TestMCPSolvesABundledTask(t *testing.T) {
	t.Parallel()
	base := mcpShop(t, localBackend(t))
	var oracle, wrong []string
	for _, tk := range dial(t, base).call("tasks", "", map[string]any{"site": "shopping"})["tasks"].([]any) {
		if m := tk.(map[string]any); m["id"] == "shopping.0" {
			for _, a := range m["oracle"].([]any) {
				oracle = append(oracle, a.(string))
			}
		}
	}
	if len(oracle) == 0 {
		t.Fatal("the tasks op gives no oracle for shopping.0")
	}
	// The wrong answer: the oracle with another price.
	wrong = append(slices.Clone(oracle[:len(oracle)-1]), `stop("$1.00")`)

	cs := mustMCP(t, base, "")
	res := okTool(t, cs, "reset", map[string]any{"task": "shopping.0"})
	st := structOf(t, res)
	if st["task_id"] != "shopping.0" || st["site"] != "shopping" || !strings.Contains(textOf(res), "Sierra Organic Pocket Tee") {
		t.Fatalf("reset to shopping.0: %v\n%s", st, textOf(res))
	}
	for run, seq := range [][]string{oracle, wrong} {
		if run > 0 {
			okTool(t, cs, "reset", nil)
		}
		for i, action := range seq {
			name, args := toolCall(t, action)
			res = okTool(t, cs, name, args)
			st = structOf(t, res)
			if st["step"].(float64) != float64(i+1) {
				t.Errorf("step %d: structured step %v", i+1, st["step"])
			}
		}
		want := []float64{1, 0}[run]
		if st["reward"] != want || st["terminated"] != true || !strings.Contains(textOf(res), fmt.Sprintf("Reward: %g.", want)) {
			t.Errorf("run %d: reward %v, terminated %v, want reward %g; text:\n%s", run, st["reward"], st["terminated"], want, textOf(res))
		}
		if st["task_id"] != "shopping.0" {
			t.Errorf("run %d: task_id %v", run, st["task_id"])
		}
		// Past the end, an action is refused until a reset.
		res = callTool(t, cs, "go_back", nil)
		if !res.IsError || !strings.Contains(textOf(res), "episode_over (agent fault)") || !strings.Contains(textOf(res), "reset") {
			t.Errorf("an action after the episode's end: %q", textOf(res))
		}
	}

	// Fork: the forked environment is another session's, and acting there
	// leaves this one where it was.
	okTool(t, cs, "reset", nil)
	fill, args := toolCall(t, oracle[0])
	okTool(t, cs, fill, args)
	res = okTool(t, cs, "fork", map[string]any{"n": 1})
	ids := structOf(t, res)["envs"].([]any)
	if len(ids) != 1 {
		t.Fatalf("fork: %v", res.StructuredContent)
	}
	other := mustMCP(t, base, "")
	res = okTool(t, other, "attach", map[string]any{"env": ids[0]})
	if structOf(t, res)["env"] != ids[0] {
		t.Fatalf("attach: %v", res.StructuredContent)
	}
	click, args := toolCall(t, oracle[1])
	res = okTool(t, other, click, args)
	forkedURL := structOf(t, res)["url"].(string)
	here := structOf(t, okTool(t, cs, "observe", nil))["url"].(string)
	if forkedURL == here || !strings.Contains(forkedURL, "Sierra") && !strings.Contains(forkedURL, "q=") {
		t.Errorf("after the fork's search, the fork is at %s and the original at %s", forkedURL, here)
	}
}

// An MCP session whose URL asks for recording writes its episodes as a
// WebSocket client's are written: the actions in their call form, the
// goal, the end.
func TestMCPSessionIsRecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, base := startServer(t, server.Config{TrajectoryDir: dir})
	cs := mustMCP(t, base, "record=true&goal=Load+the+list&start_url="+url.QueryEscape(pageURL(9)))
	res := okTool(t, cs, "reset", nil)
	env := structOf(t, res)["env"].(string)
	okTool(t, cs, "click", map[string]any{"bid": idOf(t, textOf(res), "Load")})
	res = okTool(t, cs, "stop", map[string]any{"answer": "loaded"})
	if st := structOf(t, res); st["terminated"] != true || !strings.Contains(textOf(res), "The episode is over (terminated)") {
		t.Errorf("stop: %v\n%s", st, textOf(res))
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitEnvs(t, base, 0)
	files, _ := filepath.Glob(filepath.Join(dir, env, "*.jsonl.gz"))
	if len(files) != 1 {
		t.Fatalf("recorded files = %v", files)
	}
	lines := readGz(t, files[0])
	if len(lines) != 4 || lines[0]["goal"] != "Load the list" || !strings.HasPrefix(lines[2]["action"].(string), "click(") ||
		lines[3]["action"] != `stop("loaded")` || lines[3]["terminated"] != true {
		t.Errorf("the recorded episode: %v", lines)
	}
	if _, err := mcpConnect(t, base, "record=maybe", nil); err == nil {
		t.Error("record=maybe was accepted")
	}
}

// An MCP session made with approve=true is held for a person's verdict in
// the live view, as a WebSocket client's environment is: the rejected
// action comes back as an error result the model reads.
func TestMCPSessionInTheLiveView(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cs := mustMCP(t, base, "approve=true&start_url="+url.QueryEscape(pageURL(4)))
	res := okTool(t, cs, "reset", nil)
	env := structOf(t, res)["env"].(string)
	load := idOf(t, textOf(res), "Load")
	p := uiPage(t, base+"/ui/?env="+env)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "click", Arguments: map[string]any{"bid": load}})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	until(t, p, "the pending action", `a => !document.getElementById('pending').hidden && document.getElementById('pending-action').textContent === a`, fmt.Sprintf("click(%q)", load))
	if err := p.MustElement("#comment").Input("not yet"); err != nil {
		t.Fatal(err)
	}
	click(t, p, "#reject")
	res = <-done
	if res == nil || !res.IsError || !strings.Contains(textOf(res), "rejected") || !strings.Contains(textOf(res), "not yet") || strings.Contains(textOf(res), "loaded 4") {
		t.Errorf("the rejected click's result: %v", res)
	}
}

// A client that vanishes without closing its session loses it after the
// server's TTL without a request, and its environment with it.
func TestMCPDroppedSessionIsFreedAfterTheTTL(t *testing.T) {
	t.Parallel()
	// The TTL leaves room for a loaded machine between the client's
	// requests (the session's idle clock runs between them too).
	_, base := startServer(t, server.Config{TTL: 15 * time.Second})
	cs := mustMCP(t, base, "")
	okTool(t, cs, "reset", map[string]any{"start_url": pageURL(2)})
	waitEnvs(t, base, 0) // nobody calls: the session and its environment go
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "observe"}); err == nil {
		t.Error("a tool call on the expired session succeeded")
	}
}

// The MCP defaults carry a token budget for every page text.
func TestMCPDefaultsTakeATokenBudget(t *testing.T) {
	d, err := server.ParseMCPDefaults(url.Values{"max_tokens": {"2048"}, "tokenizer": {"qwen"}})
	if err != nil || d.MaxTokens != 2048 || d.Tokenizer != "qwen" {
		t.Fatalf("%+v, %v", d, err)
	}
	if _, err := server.ParseMCPDefaults(url.Values{"max_tokens": {"lots"}}); err == nil || !strings.Contains(err.Error(), "max_tokens must be a whole number") {
		t.Fatalf("max_tokens=lots: %v", err)
	}
}

// The host's side_effects mode reaches the MCP defaults; a mode that does
// not exist is refused with the modes that do.
func TestMCPDefaultsTakeASideEffectsMode(t *testing.T) {
	d, err := server.ParseMCPDefaults(url.Values{"side_effects": {"fail"}})
	if err != nil || d.SideEffects != "fail" {
		t.Fatalf("side_effects=fail: %+v, %v", d, err)
	}
	if _, err := server.ParseMCPDefaults(url.Values{"side_effects": {"strict"}}); err == nil || !strings.Contains(err.Error(), "report, fail, off") {
		t.Fatalf("side_effects=strict: %v, want the modes named", err)
	}
}

// Under the MCP defaults' budget, the text a tool returns is the view it
// asks for, budgeted: the axtree, or the HTML view with view "html".
func TestMCPBudgetPrunesTheViewAsked(t *testing.T) {
	t.Parallel()
	tok, err := filepath.Abs("../tokenizer/testdata/byte_bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	_, base := startServer(t, server.Config{})
	cs := mustMCP(t, base, url.Values{"max_tokens": {"256"}, "tokenizer": {tok}}.Encode())
	okTool(t, cs, "reset", map[string]any{"start_url": pageURL(7)})
	if got := textOf(okTool(t, cs, "observe", nil)); !strings.Contains(got, "RootWebArea") || strings.Contains(got, "<title>") {
		t.Errorf("observe under a budget, default view:\n%s", got)
	}
	got := textOf(okTool(t, cs, "observe", map[string]any{"view": "html"}))
	if !strings.Contains(got, "<title>") || !strings.Contains(got, `data-semantic-id="load"`) || strings.Contains(got, "RootWebArea") {
		t.Errorf("observe under a budget, view html:\n%s", got)
	}
}

// The control tools on a hosted site: snapshot, restore and fork run their
// ops with the arguments as sent (fork's n defaulting to 1), another
// session attaches to the fork and acts on it, and a mistaken argument is
// refused with the op's words, after which the session goes on.
func TestMCPSnapshotForkAttach(t *testing.T) {
	t.Parallel()
	factory := catalog.New([]*hosting.Site{hostingtest.LocalSite(t)}, []hosting.Backend{localBackend(t)}, nil)
	base := serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig(), MaxCreating: 8}))
	cs := mustMCP(t, base, "site=testsite")

	okTool(t, cs, "reset", nil)
	okTool(t, cs, "goto", map[string]any{"url": "/set?v=cart-1"})
	okTool(t, cs, "goto", map[string]any{"url": "/"})
	okTool(t, cs, "snapshot", map[string]any{"name": "checkout"})
	okTool(t, cs, "goto", map[string]any{"url": "/set?v=later"})

	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"fork", map[string]any{"count": 2}, "fork has no argument count (its arguments are n, name)"},
		{"fork", map[string]any{"n": 1.5}, "fork.n must be a whole number, got 1.5"},
		{"fork", map[string]any{"n": 0}, "fork needs n, the number of new environments"}, // the op's check: 0 is not the tool's default
		{"restore", map[string]any{}, "restore needs name"},
		{"restore", map[string]any{"name": "nope"}, `has no snapshot "nope"`},
		{"reset", map[string]any{"max_steps": 3}, "reset has no argument max_steps (its arguments are attack, goal, screenshot, seed, site, start_url, task, view)"},
	} {
		res := callTool(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(textOf(res), "bad_args (client fault)") || !strings.Contains(textOf(res), c.want) {
			t.Errorf("%s %v: error %v, text %q; want a bad_args error saying %q", c.tool, c.args, res.IsError, textOf(res), c.want)
		}
	}

	res := okTool(t, cs, "restore", map[string]any{"name": "checkout", "view": "html"})
	if !strings.Contains(textOf(res), "state=cart-1") {
		t.Errorf("after restore: %s", textOf(res))
	}
	forked := structOf(t, okTool(t, cs, "fork", map[string]any{"name": "checkout"}))
	envs, _ := forked["envs"].([]any)
	if len(envs) != 1 || forked["snapshot"] != "checkout" {
		t.Fatalf("fork without n: %v, want one environment", forked)
	}
	other := mustMCP(t, base, "")
	res = okTool(t, other, "attach", map[string]any{"env": envs[0], "view": "html"})
	if st := structOf(t, res); st["env"] != envs[0] || !strings.Contains(textOf(res), "state=cart-1") {
		t.Errorf("attach: %v\n%s", st, textOf(res))
	}
	okTool(t, other, "goto", map[string]any{"url": "/set?v=fork-0"})
	res = okTool(t, other, "goto", map[string]any{"url": "/", "view": "html"})
	if !strings.Contains(textOf(res), "state=fork-0") {
		t.Errorf("the attached session's action: %s", textOf(res))
	}
}
