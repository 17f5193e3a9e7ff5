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
	"github.com/webserv-rl/webserv/trajectory"
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

	// --verify checks each step's page hash too: as recorded, it passes;
	// a step whose recorded page differs only where the URL and HTML do
	// not show it (its hash) is the first to differ; a recording without
	// hashes is refused.
	verify := func(label string) (string, error) {
		var out strings.Builder
		err := replayCmd(ctx, zap.NewNop(), []string{"-verify", "-no-bundled", "-no-incus", "-idle", "300ms", dir}, nil, &out)
		t.Logf("%s: %v\n%s", label, err, out.String())
		return out.String(), err
	}
	if out, err := verify("as recorded"); err != nil || !strings.Contains(out, "3 steps re-run, every observation as recorded") {
		t.Errorf("replay --verify of the recording: %v\n%s", err, out)
	}
	rewrite(t, dir, func(ep *trajectory.Episode) { ep.Steps[1].ObsHash = strings.Repeat("0", 32) })
	if out, err := verify("step 2's hash changed"); err == nil || !strings.Contains(out, `step 2 (click("shop.mugs")) differs in page`) {
		t.Errorf("replay --verify of a recording whose step 2 differs: %v\n%s", err, out)
	}
	rewrite(t, dir, func(ep *trajectory.Episode) {
		for i := range ep.Steps {
			ep.Steps[i].ObsHash = ""
		}
	})
	if _, err := verify("no hashes"); err == nil || !strings.Contains(err.Error(), "recorded without page hashes") {
		t.Errorf("replay --verify of a recording without hashes: %v", err)
	}
}

// rewrite changes the one episode recorded under dir.
func rewrite(t *testing.T, dir string, change func(*trajectory.Episode)) {
	t.Helper()
	files, err := trajectory.Find(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("recorded episodes: %v, %v", files, err)
	}
	ep, err := trajectory.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	change(ep)
	w, err := trajectory.Create(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range append([]trajectory.Line{ep.Head, *ep.Reset}, ep.Steps...) {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
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
