package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/server"
)

// A server on the open site, dialled with coder/websocket: make an
// environment on a page, click, and read the page the click caused.
func ExampleServer() {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/count" {
			fmt.Fprint(w, "3 orders")
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Orders</title>
<button onclick="fetch('/count').then(r => r.text()).then(t => { document.querySelector('p').textContent = t })">Count</button><p>?</p>`)
	}))
	defer page.Close()

	// The test binary's browser; a program launches its own (envcore.Launch)
	// routed through a netroute.Router (server.Routed).
	s := server.New(zap.NewNop(), browser, server.OpenFactory{}, server.Config{Env: envcore.Config{IdleWindow: 100 * time.Millisecond}})
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/v1/ws", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	call := func(id int, op, env string, args map[string]any) map[string]any {
		req, _ := msgpack.Marshal(map[string]any{"id": id, "op": op, "env": env, "args": args})
		if err := c.Write(ctx, websocket.MessageBinary, req); err != nil {
			panic(err)
		}
		_, data, err := c.Read(ctx)
		if err != nil {
			panic(err)
		}
		var reply map[string]any
		_ = msgpack.Unmarshal(data, &reply)
		if reply["ok"] != true {
			e := reply["error"].(map[string]any)
			msg, _, _ := strings.Cut(e["message"].(string), " (its arguments are")
			fmt.Printf("error %s (%s's fault): %s\n", e["code"], e["fault"], msg)
			return nil
		}
		return reply["result"].(map[string]any)
	}

	made := call(1, "make", "", map[string]any{"start_url": page.URL, "goal": "How many orders are there?"})
	env := made["env"].(string)
	fmt.Println(made["obs"].(map[string]any)["title"])
	stepped := call(2, "step", env, map[string]any{"action": `click("count")`})
	fmt.Println(strings.Contains(stepped["obs"].(map[string]any)["html"].(string), "3 orders"))
	call(3, "make", "", map[string]any{"start_url": page.URL, "idle": 50})
	call(4, "close", env, nil)
	// Output:
	// Orders
	// true
	// error bad_args (client's fault): make has no argument idle; did you mean idle_ms?
}
