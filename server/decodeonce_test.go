package server_test

import (
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/server"
)

// parsesOf counts the action strings envcore reads that contain mark
// (other tests running beside this one parse their own actions).
func parsesOf(t *testing.T, mark string) *atomic.Int64 {
	var n atomic.Int64
	remove := envcore.OnParse(func(s string) {
		if strings.Contains(s, mark) {
			n.Add(1)
		}
	})
	t.Cleanup(remove)
	return &n
}

// A step's action is read once, where the request is decoded: the
// preview, the recording's target measure, the health check, the
// recording and envcore all read that one value. An MCP action tool makes
// its action from the tool's arguments and reads no string at all.
func TestStepReadsItsActionOnce(t *testing.T) {
	_, base := startServer(t, server.Config{TrajectoryDir: t.TempDir()})
	n := parsesOf(t, "decode-once")

	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(1), "preview_ms": 1,
		"record": map[string]any{"screenshots": true}})["env"].(string)
	res := cl.call("step", env, map[string]any{"action": `click("decode-once-ws")`})
	obs := res["obs"].(map[string]any)
	if obs["last_action_error"] == "" || obs["last_action"] != `click("decode-once-ws")` {
		t.Errorf("the step of a missing element: last_action %v, last_action_error %v", obs["last_action"], obs["last_action_error"])
	}
	if got := n.Swap(0); got != 1 {
		t.Errorf("a WebSocket step with a preview and a recording read its action string %d times, want 1", got)
	}

	cs := mustMCP(t, base, "start_url="+url.QueryEscape(pageURL(1)))
	r := callTool(t, cs, "click", map[string]any{"bid": "decode-once-mcp"})
	if !r.IsError || !strings.Contains(textOf(r), "decode-once-mcp") {
		t.Errorf("MCP click of a missing element: %s", textOf(r))
	}
	if got := n.Load(); got != 0 {
		t.Errorf("an MCP action tool read %d action strings, want none (the action is made from its arguments)", got)
	}
}
