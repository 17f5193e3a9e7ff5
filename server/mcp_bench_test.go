package server_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/webserv-rl/webserv/server"
)

// The front ends' own cost: an observation (no action, no settle; the
// accessibility tree) over the WebSocket protocol and over MCP, on one
// server, with the Go clients.
//
//	go test ./server -run '^$' -bench MCPObserve -benchtime 200x
func BenchmarkMCPObserve(b *testing.B) {
	hs := benchServer(b)
	ctx := context.Background()
	b.Run("ws", func(b *testing.B) {
		call := wsCaller(b, hs.URL)
		env := call(map[string]any{"id": 1, "op": "make", "args": map[string]any{"start_url": pageURL(1)}}).result()["env"]
		req := map[string]any{"id": 2, "op": "observe", "env": env, "args": map[string]any{"observe": map[string]any{"axtree": true}}}
		b.ResetTimer()
		for range b.N {
			call(req)
		}
	})
	b.Run("mcp", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/v1/mcp"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reset", Arguments: map[string]any{"start_url": pageURL(1)}}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "observe", Arguments: map[string]any{}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchServer is a server of the open site on a loopback listener, for a
// benchmark.
func benchServer(b *testing.B) *httptest.Server {
	s := server.New(nil, browser, server.OpenFactory{}, server.Config{Env: envConfig()})
	hs := httptest.NewServer(s.Handler())
	b.Cleanup(func() { hs.Close(); _ = s.Close() })
	return hs
}

// wsReply is a reply as a benchmark's WebSocket client reads it, with its
// size on the wire.
type wsReply struct {
	m    map[string]any
	size int
}

func (r wsReply) result() map[string]any { return r.m["result"].(map[string]any) }

// wsCaller dials base's WebSocket protocol and returns a function that
// sends one request and reads its reply, failing the benchmark on an error.
func wsCaller(b *testing.B, base string) func(req map[string]any) wsReply {
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/ws", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.CloseNow() })
	c.SetReadLimit(-1)
	return func(req map[string]any) wsReply {
		data, _ := msgpack.Marshal(req)
		if err := c.Write(ctx, websocket.MessageBinary, data); err != nil {
			b.Fatal(err)
		}
		_, data, err := c.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var r map[string]any
		if err := msgpack.Unmarshal(data, &r); err != nil || r["ok"] != true {
			b.Fatalf("%v %v", r, err)
		}
		return wsReply{r, len(data)}
	}
}
