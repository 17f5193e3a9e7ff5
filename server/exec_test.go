package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webserv-rl/webserv/server"
)

// Every front end runs its ops the one way: the OpenEnv and MCP front
// ends' requests are counted in /metrics by op, and their errors by code,
// once each, as the WebSocket's are.
func TestEveryFrontEndIsCountedInMetrics(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, send := openEnvClient(ctx, t, base, "start_url="+url.QueryEscape(pageURL(1)))
	for _, m := range []string{`{"type": "reset"}`, `{"type": "step", "data": {"action": "noop()"}}`, `{"type": "state"}`} {
		if r := send(m); r["type"] == "error" {
			t.Fatalf("%s: %v", m, r)
		}
	}
	if r := send(`{"type": "step", "data": {"action": {"type": "click", "bid": "x"}}}`); r["type"] != "error" {
		t.Fatalf("a structured action with an unknown key: %v", r)
	}

	cs := mustMCP(t, base, "start_url="+url.QueryEscape(pageURL(1)))
	okTool(t, cs, "reset", nil)
	callTool(t, cs, "click", map[string]any{"bid": "load"})
	if r := callTool(t, cs, "click", map[string]any{}); !r.IsError { // refused by the tool, before any op
		t.Fatalf("click without bid: %s", textOf(r))
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`webserv_requests_total{op="make"} 2`,    // OpenEnv's first reset, MCP's reset
		`webserv_requests_total{op="step"} 3`,    // OpenEnv's two, MCP's click
		`webserv_requests_total{op="observe"} 1`, // OpenEnv's state
		`webserv_errors_total{code="bad_args"} 2`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "webserv_requests_total") || strings.HasPrefix(l, "webserv_errors_total") {
				t.Log(l)
			}
		}
	}
}

// hello lists the ops a client may send again after a lost connection:
// those that change nothing on the server, from the op table.
func TestHelloListsIdempotentOps(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	hello := cl.call("hello", "", nil)
	raw, _ := hello["idempotent"].([]any)
	var got []string
	for _, v := range raw {
		got = append(got, v.(string))
	}
	for _, op := range []string{"hello", "sites", "tasks", "stats", "observe"} {
		if !slices.Contains(got, op) {
			t.Errorf("hello's idempotent ops %v lack %s", got, op)
		}
	}
	for _, op := range []string{"make", "reset", "step", "close", "snapshot", "restore", "fork"} {
		if slices.Contains(got, op) {
			t.Errorf("hello's idempotent ops %v list %s, which acts", got, op)
		}
	}
}

// pendingIn waits, on the live view's event stream, until environment
// env has an action waiting for a person's verdict.
func pendingIn(t *testing.T, ctx context.Context, base, env string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/ui/api/events?env="+env, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			Env struct {
				Pending *struct{ Action string } `json:"pending"`
			} `json:"env"`
		}
		if json.Unmarshal([]byte(data), &msg) == nil && msg.Env.Pending != nil {
			return
		}
	}
	t.Fatalf("environment %s never had an action waiting for approval: %v", env, sc.Err())
}

// Close cancels and waits for the OpenEnv and MCP front ends' requests as
// for the WebSocket's: a step of each waiting for a person's verdict is
// answered shutting_down, and Close returns.
func TestCloseWaitsForOpenEnvAndMCPRequests(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// OpenEnv: a step waiting for approval.
	c, exchange := openEnvClient(ctx, t, base, "start_url="+url.QueryEscape(pageURL(1)))
	if r := exchange(`{"type": "reset", "data": {"approve": true, "approve_timeout_ms": 90000}}`); r["type"] != "observation" {
		t.Fatalf("reset: %v", r)
	}
	oeEnv, _ := exchange(`{"type": "state"}`)["data"].(map[string]any)["episode_id"].(string)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type": "step", "data": {"action": "click(\"load\")"}}`)); err != nil {
		t.Fatal(err)
	}
	oeReply := make(chan map[string]any, 1)
	go func() {
		_, data, err := c.Read(ctx)
		var r map[string]any
		if err == nil {
			_ = json.Unmarshal(data, &r)
		}
		oeReply <- r
	}()

	// MCP: a click waiting for approval.
	cs := mustMCP(t, base, "approve=true&start_url="+url.QueryEscape(pageURL(2)))
	mcpEnv, _ := okTool(t, cs, "reset", nil).StructuredContent.(map[string]any)["env"].(string)
	mcpReply := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "click", Arguments: map[string]any{"bid": "load"}})
		mcpReply <- res
	}()

	pendingIn(t, ctx, base, oeEnv)
	pendingIn(t, ctx, base, mcpEnv)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()

	if r := <-oeReply; r["type"] != "error" || r["data"].(map[string]any)["code"] != string(server.CodeShuttingDown) {
		t.Errorf("an OpenEnv step in flight at Close: %v", r)
	}
	if r := <-mcpReply; r == nil || !r.IsError || !strings.Contains(textOf(r), string(server.CodeShuttingDown)) {
		t.Errorf("an MCP click in flight at Close: %v", r)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
}
