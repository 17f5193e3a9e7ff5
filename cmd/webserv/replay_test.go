package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
)

// An episode recorded on the demo shop: replay serves it without a browser,
// and replay --rerun runs it again and finds every observation as
// recorded.
func TestReplayServesAndReruns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shop, stop, err := demoServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	router := netroute.New(zap.NewNop(), netroute.Options{})
	defer router.Close()
	b, err := envcore.Launch(ctx, zap.NewNop(), server.Routed(envcore.BrowserOptions{}, router))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := server.New(nil, b, server.OpenFactory{}, server.Config{TrajectoryDir: dir, Env: envcore.Config{IdleWindow: 300 * time.Millisecond}})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	record(t, ctx, hs.URL, shop)

	// The replayer alone.
	rctx, rcancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- replayCmd(rctx, zap.NewNop(), []string{"-listen", "127.0.0.1:0", dir}, nil, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := strings.TrimSpace(line[strings.Index(line, "http://"):])
	resp, err := http.Get(base + "api/episodes")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Episodes []struct {
			Steps int    `json:"steps"`
			Goal  string `json:"goal"`
		} `json:"episodes"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Episodes) != 1 || list.Episodes[0].Steps != 3 || list.Episodes[0].Goal != "Buy a shirt" {
		t.Errorf("replayer's episodes = %+v", list.Episodes)
	}
	rcancel()
	if err := <-done; err != nil {
		t.Errorf("replay: %v", err)
	}

	var out strings.Builder
	err = replayCmd(ctx, zap.NewNop(), []string{"-rerun", "-no-bundled", "-no-incus", "-idle", "300ms", dir}, nil, &out)
	if err != nil || !strings.Contains(out.String(), "3 steps re-run, every observation as recorded") {
		t.Errorf("replay --rerun: %v\n%s", err, out.String())
	}
}

// record makes a recording environment on the demo shop over the
// protocol and plays three steps.
func record(t *testing.T, ctx context.Context, base, shop string) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	id := uint64(0)
	call := func(op, env string, args map[string]any) map[string]any {
		id++
		data, _ := msgpack.Marshal(map[string]any{"id": id, "op": op, "env": env, "args": args})
		if err := c.Write(ctx, websocket.MessageBinary, data); err != nil {
			t.Fatal(err)
		}
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		if err := msgpack.Unmarshal(data, &r); err != nil || r["ok"] != true {
			t.Fatalf("%s: %v %v", op, r["error"], err)
		}
		res, _ := r["result"].(map[string]any)
		return res
	}
	env := call("make", "", map[string]any{"start_url": shop, "goal": "Buy a shirt", "record": true})["env"].(string)
	for _, a := range []string{`hover("shop.categories")`, `click("shop.mugs")`, `stop [done]`} {
		call("step", env, map[string]any{"action": a})
	}
	call("close", env, nil)
}
