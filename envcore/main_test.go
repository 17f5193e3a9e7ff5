package envcore_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/busy"
)

// One Chromium and one fixture server serve every test of the package; each
// test gets its own environment (its own browser context).
var (
	browser *envcore.Browser
	site    *httptest.Server
)

func TestMain(m *testing.M) {
	busy.SpinIfAsked()
	ctx := context.Background()
	var err error
	lg := zap.NewNop()
	if os.Getenv("WEBSERV_TEST_LOG") != "" { // debug logs of the browser side
		lg, _ = zap.NewDevelopment()
	}
	browser, err = envcore.Launch(ctx, lg, envcore.BrowserOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch chromium:", err)
		os.Exit(1)
	}
	site = httptest.NewServer(fixtureHandler())
	code := m.Run()
	site.CloseClientConnections()
	site.Close()
	_ = browser.Close()
	os.Exit(code)
}

// fixtureHandler serves fixtures/ and the API the SPA fixtures call.
func fixtureHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("fixtures")))
	// /api/delay?ms=N&text=T answers T after N milliseconds.
	mux.HandleFunc("/api/delay", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, r.URL.Query().Get("text"))
	})
	// /api/sse is an EventSource stream that never ends on its own.
	mux.HandleFunc("/api/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 300; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
	})
	// /api/hold is a long-poll request held open until the client leaves.
	mux.HandleFunc("/api/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(60 * time.Second):
		case <-r.Context().Done():
		}
	})
	// /submit is a form target that answers slowly and then loads more.
	mux.HandleFunc("/submit", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		fmt.Fprintf(w, `<!doctype html><title>Results</title><p>SUBMITTED q=%s</p><p id="more">loading</p>
<script>fetch('/api/delay?ms=400&text=SUBMIT-LOADED').then(r => r.text()).then(t => { document.getElementById('more').textContent = t; });</script>`,
			html.EscapeString(r.FormValue("q")))
	})
	// /counted/NAME is a page that says how often NAME was requested;
	// /counted/NAME?peek answers the count without counting.
	var visits sync.Map
	mux.HandleFunc("/counted/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		n, _ := visits.LoadOrStore(name, new(atomic.Int64))
		if r.URL.Query().Has("peek") {
			fmt.Fprint(w, n.(*atomic.Int64).Load())
			return
		}
		fmt.Fprintf(w, `<!doctype html><title>%[1]s</title><p>page %[1]s, visit %[2]d</p>`, html.EscapeString(name), n.(*atomic.Int64).Add(1))
	})
	// /late/NAME is a page with an image that answers at once for the
	// page's first load and after two seconds for every later one: a page
	// that loads slowly only when a restore loads it again.
	var lateLoads sync.Map
	mux.HandleFunc("/late/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>%[1]s</title><p>late %[1]s</p><img src="/late/%[1]s/pixel.gif" alt="pixel" width="1" height="1">`, html.EscapeString(r.PathValue("name")))
	})
	mux.HandleFunc("/late/{name}/pixel.gif", func(w http.ResponseWriter, r *http.Request) {
		n, _ := lateLoads.LoadOrStore(r.PathValue("name"), new(atomic.Int64))
		if n.(*atomic.Int64).Add(1) > 1 {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "image/gif")
		_, _ = w.Write(pixelGIF)
	})
	mux.HandleFunc("/big.html", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, bigPage(100))
	})
	// /table.html is a table of 5,000 rows (?rows=N: N), far over any
	// token budget; row i links to /counted/row-i.
	mux.HandleFunc("/table.html", func(w http.ResponseWriter, r *http.Request) {
		rows, err := strconv.Atoi(r.URL.Query().Get("rows"))
		if err != nil {
			rows = 5000
		}
		var b strings.Builder
		b.WriteString(`<!doctype html><title>Table</title><h1>Inventory</h1><table>`)
		for i := range rows {
			fmt.Fprintf(&b, `<tr><td>Item %d</td><td><a href="/counted/row-%d">Open %d</a></td></tr>`, i, i, i)
		}
		b.WriteString(`</table>`)
		fmt.Fprint(w, b.String())
	})
	return mux
}

// pixelGIF is a 1×1 transparent GIF.
var pixelGIF = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// bigPage is a catalogue page with n products of three elements each.
func bigPage(n int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Catalogue</title></head><body><h1>Catalogue</h1><div class="grid">`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `<div class="card"><div class="inner"><a href="/p/%d">Product %d</a></div><span class="price">$%d.99</span><button>Add to cart</button></div>`, i, i, 10+i)
	}
	b.WriteString(`</div></body></html>`)
	return b.String()
}

func newEnv(t testing.TB, cfg envcore.Config) *envcore.Env {
	t.Helper()
	if cfg.IdleWindow == 0 {
		cfg.IdleWindow = 200 * time.Millisecond
	}
	env := browser.NewEnv(cfg)
	t.Cleanup(func() { _ = env.Close() })
	return env
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustReset(t testing.TB, env *envcore.Env, path string) envcore.Observation {
	t.Helper()
	obs, info, err := env.Reset(testCtx(t), site.URL+path)
	if err != nil {
		t.Fatalf("reset %s: %v", path, err)
	}
	if info.ActionError != "" {
		t.Fatalf("reset %s: %s", path, info.ActionError)
	}
	return obs
}

// mustStep steps an action string; only environment errors fail the test.
func mustStep(t testing.TB, env *envcore.Env, action string) (envcore.Observation, envcore.StepInfo) {
	t.Helper()
	obs, info, err := env.StepText(testCtx(t), action)
	if err != nil {
		t.Fatalf("step %s: %v", action, err)
	}
	return obs, info
}

// mustAct is mustStep for an action that must succeed and settle.
func mustAct(t testing.TB, env *envcore.Env, action string) envcore.Observation {
	t.Helper()
	obs, info := mustStep(t, env, action)
	if info.ActionError != "" {
		t.Fatalf("%s failed: %s\nhtml:\n%s", action, info.ActionError, obs.HTML)
	}
	if !info.Settled {
		t.Fatalf("%s did not settle: %s", action, info.SettleError)
	}
	return obs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
