package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/webserv-rl/webserv/server"
)

// An OpenEnv-protocol client (the message shapes of openenv-core's
// EnvClient): JSON text frames, one request and one reply at a time.
func TestOpenEnvProtocol(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, send := openEnvClient(ctx, t, base, "site=open&start_url="+url.QueryEscape(pageURL(5)))
	if r := send(`{"type": "state"}`); r["type"] != "state" || r["data"].(map[string]any)["step_count"] != 0.0 {
		t.Errorf("state before reset = %v", r)
	}
	if r := send(`{"type": "step", "data": {"action": "noop()"}}`); r["type"] != "error" {
		t.Errorf("step before reset = %v", r)
	}
	r := send(`{"type": "reset", "data": {"goal": "load the list", "seed": 3}}`)
	data := r["data"].(map[string]any)
	obs := data["observation"].(map[string]any)
	if r["type"] != "observation" || obs["title"] != "Page 5" || obs["goal"] != "load the list" || data["done"] != false {
		t.Fatalf("reset = %v", r)
	}
	r = send(`{"type": "step", "data": {"action": "click(\"load\")"}}`)
	data = r["data"].(map[string]any)
	obs = data["observation"].(map[string]any)
	if !strings.Contains(obs["html"].(string), "loaded 5") || data["reward"] != 0.0 || data["done"] != false {
		t.Errorf("step = %v", data)
	}
	if info := obs["info"].(map[string]any); info["settled"] != true {
		t.Errorf("step info = %v", info)
	}
	r = send(`{"type": "step", "data": {"type": "type", "target": "name", "text": "Ada"}}`)
	if inputs := fmt.Sprint(r["data"].(map[string]any)["observation"].(map[string]any)["inputs"]); !strings.Contains(inputs, "value:Ada") {
		t.Errorf("structured action: %s", inputs)
	}
	st := send(`{"type": "state"}`)["data"].(map[string]any)
	if st["step_count"] != 2.0 || !strings.HasPrefix(st["episode_id"].(string), "env-") || st["title"] != "Page 5" {
		t.Errorf("state = %v", st)
	}
	if r := send(`{"type": "dance"}`); r["type"] != "error" || r["data"].(map[string]any)["code"] != string(server.CodeUnknownOp) {
		t.Errorf("unknown type = %v", r)
	}
	if r := send(`not json`); r["type"] != "error" {
		t.Errorf("bad frame = %v", r)
	}
	r = send(`{"type": "step", "data": {"action": "stop [done]"}}`)
	if r["data"].(map[string]any)["done"] != true {
		t.Errorf("terminate = %v", r)
	}
	if r := send(`{"type": "reset", "data": {}}`); r["type"] != "observation" {
		t.Errorf("second reset = %v", r)
	}
	// Close ends the session and its environment.
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type": "close"}`)); err != nil {
		t.Fatal(err)
	}
	cl := dial(t, base)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && fmt.Sprint(cl.call("stats", "", nil)["envs_live"]) != "0" {
		time.Sleep(50 * time.Millisecond)
	}
	if n := fmt.Sprint(cl.call("stats", "", nil)["envs_live"]); n != "0" {
		t.Errorf("environment not closed with its OpenEnv session: %s live", n)
	}
}

// A token-protected server takes the token the way openenv-core's client
// sends it (the base URL's query with /ws appended after it) and in an
// Authorization header; a wrong one is refused before the upgrade.
func TestOpenEnvTokenAsClientsSendIt(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{Token: "t0ken"})
	ws := "ws" + strings.TrimPrefix(base, "http")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		url    string
		header http.Header
		ok     bool
	}{
		{ws + "/openenv?token=t0ken/ws", nil, true},
		{ws + "/openenv/ws?token=t0ken", nil, true},
		{ws + "/openenv/ws", http.Header{"Authorization": {"Bearer t0ken"}}, true},
		{ws + "/openenv?token=wrong/ws", nil, false},
		{ws + "/openenv/ws", nil, false},
	} {
		conn, resp, err := websocket.Dial(ctx, c.url, &websocket.DialOptions{HTTPHeader: c.header})
		if c.ok != (err == nil) {
			t.Errorf("%s %v: err %v, want ok=%v", c.url, c.header, err, c.ok)
		}
		if err == nil {
			if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type": "state"}`)); err != nil {
				t.Fatal(err)
			}
			if _, data, err := conn.Read(ctx); err != nil || !strings.Contains(string(data), `"step_count":0`) {
				t.Errorf("%s: state = %s, %v", c.url, data, err)
			}
			conn.CloseNow()
		} else if resp != nil && resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", c.url, resp.StatusCode)
		}
	}
}

// openEnvClient connects to base's OpenEnv WebSocket with query and
// returns the connection and a function that sends one JSON message and
// reads its JSON reply. The connection is closed with the test.
func openEnvClient(ctx context.Context, t *testing.T, base, query string) (*websocket.Conn, func(msg string) map[string]any) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/openenv/ws?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	c.SetReadLimit(-1)
	return c, func(msg string) map[string]any {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("reply is not JSON: %s", data)
		}
		return r
	}
}
