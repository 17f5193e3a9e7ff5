package server_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
)

var (
	browser *envcore.Browser
	router  *netroute.Router
	pages   *httptest.Server
)

func TestMain(m *testing.M) {
	var err error
	router = netroute.New(zap.NewNop(), netroute.Options{})
	browser, err = envcore.Launch(context.Background(), zap.NewNop(), server.Routed(envcore.BrowserOptions{}, router))
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch chromium:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	// /page?n=N is a page that names itself and loads its list slowly.
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Page %[1]s</title><h1>env %[1]s</h1>
<button onclick="fetch('/slow?ms=300').then(r => r.text()).then(t => { document.getElementById('out').textContent = 'loaded %[1]s' })">Load</button>
<p id="out">empty</p><input placeholder="Name">`, r.URL.Query().Get("n"))
	})
	// /link?to=URL is a page with one link, "go", to URL.
	mux.HandleFunc("/link", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Link</title><a href="%s">go</a>`, html.EscapeString(r.URL.Query().Get("to")))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		var ms int
		fmt.Sscan(r.URL.Query().Get("ms"), &ms)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "ok")
	})
	pages = httptest.NewServer(mux)
	code := m.Run()
	hostingtest.RemoveBuilds()
	if shopRecording.dir != "" {
		_ = os.RemoveAll(shopRecording.dir)
	}
	pages.CloseClientConnections()
	pages.Close()
	_ = browser.Close()
	_ = router.Close()
	os.Exit(code)
}

func envConfig() envcore.Config { return envcore.Config{IdleWindow: 150 * time.Millisecond} }

// startServer runs a Server on a loopback httptest listener.
func startServer(t *testing.T, cfg server.Config) (*server.Server, string) {
	t.Helper()
	if cfg.Env.IdleWindow == 0 {
		cfg.Env = envConfig()
	}
	s := server.New(zap.NewNop(), browser, server.OpenFactory{}, cfg)
	return s, serve(t, s)
}

// serve runs s on a loopback httptest listener and returns its base URL.
func serve(t *testing.T, s *server.Server) string {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = s.Close()
	})
	return hs.URL
}

// client is a minimal protocol client: many requests in flight, replies
// matched by id.
type client struct {
	t       *testing.T
	c       *websocket.Conn
	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan map[string]any
	unsolic chan map[string]any // replies with an id nobody waits for (id 0)
}

func dial(t *testing.T, base string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(-1)
	cl := &client{t: t, c: c, pending: map[uint64]chan map[string]any{}, unsolic: make(chan map[string]any, 16)}
	go cl.read()
	t.Cleanup(func() { _ = c.CloseNow() })
	return cl
}

func (cl *client) read() {
	for {
		_, data, err := cl.c.Read(context.Background())
		if err != nil {
			return
		}
		var r map[string]any
		if err := msgpack.Unmarshal(data, &r); err != nil {
			cl.t.Errorf("reply is not MessagePack: %v", err)
			return
		}
		id := toUint(r["id"])
		cl.mu.Lock()
		ch := cl.pending[id]
		delete(cl.pending, id)
		cl.mu.Unlock()
		if ch != nil {
			ch <- r
		} else {
			cl.unsolic <- r
		}
	}
}

func toUint(v any) uint64 {
	switch n := v.(type) {
	case uint64:
		return n
	case int64:
		return uint64(n)
	case uint8:
		return uint64(n)
	case int8:
		return uint64(n)
	case uint16:
		return uint64(n)
	case int16:
		return uint64(n)
	case uint32:
		return uint64(n)
	case int32:
		return uint64(n)
	}
	return 0
}

// send sends a request and returns the channel its reply arrives on.
func (cl *client) send(op, env string, args map[string]any) chan map[string]any {
	cl.mu.Lock()
	cl.next++
	id := cl.next
	ch := make(chan map[string]any, 1)
	cl.pending[id] = ch
	cl.mu.Unlock()
	req := map[string]any{"id": id, "op": op, "args": args}
	if env != "" {
		req["env"] = env
	}
	data, err := msgpack.Marshal(req)
	if err != nil {
		cl.t.Fatal(err)
	}
	if err := cl.c.Write(context.Background(), websocket.MessageBinary, data); err != nil {
		cl.t.Fatal(err)
	}
	return ch
}

func wait(t *testing.T, ch chan map[string]any) map[string]any {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("no reply within 60s")
		return nil
	}
}

// call sends a request and waits for a successful reply's result.
func (cl *client) call(op, env string, args map[string]any) map[string]any {
	cl.t.Helper()
	r := wait(cl.t, cl.send(op, env, args))
	if r["ok"] != true {
		cl.t.Fatalf("%s failed: %v", op, r["error"])
	}
	res, _ := r["result"].(map[string]any)
	return res
}

// fail sends a request that must fail with code and returns the error.
func (cl *client) fail(op, env string, args map[string]any, code server.Code) map[string]any {
	cl.t.Helper()
	r := wait(cl.t, cl.send(op, env, args))
	e, _ := r["error"].(map[string]any)
	if r["ok"] != false || e == nil || e["code"] != string(code) {
		cl.t.Fatalf("%s: want error %s, got %v", op, code, r)
	}
	if msg, _ := e["message"].(string); msg == "" {
		cl.t.Errorf("%s: error %s has no message", op, code)
	}
	return e
}

func obsOf(res map[string]any) map[string]any {
	o, _ := res["obs"].(map[string]any)
	return o
}

func pageURL(n int) string { return fmt.Sprintf("%s/page?n=%d", pages.URL, n) }
