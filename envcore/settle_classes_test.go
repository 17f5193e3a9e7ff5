package envcore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/busy"
	"github.com/webserv-rl/webserv/netroute"
)

// The classes of settle3 (docs/envcore.md, "Settling"): single-page-app
// behaviours whose content arrives by a path the page's own tracker does
// not see end to end. They run the way the server runs environments, each
// browser context behind its own proxy (netroute), on a site whose API
// answers after ?ms=N times a factor: /x1/ at the given speed, /x3/ three
// times slower. Every case must hold its final content in the step's
// observation at the default idle window, at both speeds.

var (
	routedOnce    sync.Once
	routedBrowser *envcore.Browser
	routedRouter  *netroute.Router
	routedErr     error
	classSite     *httptest.Server
)

// routed is the test binary's second Chromium, whose contexts are routed,
// and the class site; both live until the process ends.
func routed(t *testing.T) (*envcore.Browser, *httptest.Server) {
	t.Helper()
	routedOnce.Do(func() {
		routedRouter = netroute.New(zap.NewNop(), netroute.Options{})
		routedBrowser, routedErr = envcore.Launch(context.Background(), zap.NewNop(), envcore.BrowserOptions{
			Proxy: func() (envcore.ContextProxy, error) { return routedRouter.NewRoute() },
		})
		classSite = httptest.NewServer(classHandler())
	})
	if routedErr != nil {
		t.Fatalf("launch a routed chromium: %v", routedErr)
	}
	return routedBrowser, classSite
}

// classNet is an environment's network: the class site on 127.0.0.1 and,
// as another origin, on localhost.
type classNet struct{ t *netroute.Table }

func (n classNet) Bind(p envcore.ContextProxy) { p.(*netroute.Route).Bind(n.t) }
func (n classNet) Check(string) error          { return nil }

func newRoutedEnv(t *testing.T, cfg envcore.Config) (*envcore.Env, string) {
	t.Helper()
	b, srv := routed(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	env := b.NewEnv(cfg)
	t.Cleanup(func() { _ = env.Close() })
	table := netroute.NewTable(netroute.Policy{Allow: []string{"127.0.0.1:" + port, "localhost:" + port}})
	if err := env.SetNetwork(classNet{table}); err != nil {
		t.Fatal(err)
	}
	return env, srv.URL
}

// classHandler serves fixtures/ under /xF/ (F a factor) and the API the
// class pages call under /xF/api/, each answer ?ms times F late.
func classHandler() http.Handler {
	var mu sync.Mutex
	channels := map[string]chan string{} // EventSource streams by ?ch
	stream := func(id string) chan string {
		mu.Lock()
		defer mu.Unlock()
		c, ok := channels[id]
		if !ok {
			c = make(chan string, 4)
			channels[id] = c
		}
		return c
	}
	files := http.FileServer(http.Dir("fixtures"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/x")
		factor, path, ok2 := strings.Cut(rest, "/")
		f, err := strconv.Atoi(factor)
		if !ok || !ok2 || err != nil || f < 1 {
			http.Error(w, "paths are /xF/...: F the slow-down factor", http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		ms, _ := strconv.Atoi(q.Get("ms"))
		late := time.Duration(ms*f) * time.Millisecond
		wait := func() bool {
			select {
			case <-time.After(late):
				return true
			case <-r.Context().Done():
				return false
			}
		}
		text := q.Get("text")
		switch path {
		case "api/delay":
			if wait() {
				fmt.Fprint(w, text)
			}
		case "api/pixel.gif":
			if wait() {
				w.Header().Set("Content-Type", "image/gif")
				_, _ = w.Write(pixelGIF)
			}
		case "api/script.js":
			if wait() {
				w.Header().Set("Content-Type", "text/javascript")
				fmt.Fprintf(w, "document.getElementById('out').textContent = %q;\n", text)
			}
		case "api/module.mjs":
			if wait() {
				w.Header().Set("Content-Type", "text/javascript")
				fmt.Fprintf(w, "export function render() { document.getElementById('out').textContent = %q; }\n", text)
			}
		case "api/post303":
			_ = r.ParseForm()
			if wait() {
				http.Redirect(w, r, "done?text="+r.PostForm.Get("text"), http.StatusSeeOther)
			}
		case "api/done":
			fmt.Fprintf(w, "<!doctype html><title>Done</title><p>%s</p>", strings.ReplaceAll(text, "<", ""))
		case "api/ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			for {
				_, msg, err := c.Read(r.Context())
				if err != nil || !wait() {
					return
				}
				if string(msg) == "silent" {
					continue
				}
				if c.Write(r.Context(), websocket.MessageText, msg) != nil {
					return
				}
			}
		case "api/events":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			c := stream(q.Get("ch"))
			for {
				select {
				case m := <-c:
					fmt.Fprintf(w, "data: %s\n\n", m)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case "api/notify":
			w.WriteHeader(http.StatusAccepted)
			go func(c chan string) {
				time.Sleep(late)
				c <- text
			}(stream(q.Get("ch")))
		default:
			r.URL.Path = "/" + path
			files.ServeHTTP(w, r)
		}
	})
}

// The classes: each page, action and the content the step's observation
// must hold.
var settleClasses = []struct {
	name, page, action, want string
}{
	{"an image whose load event renders", "classes.html", `click("load-an-image")`, "IMAGE-DONE 1"},
	{"a script element added on click", "classes.html", `click("load-a-script")`, "SCRIPT-DONE"},
	{"a dynamic import on click", "classes.html", `click("import-a-module")`, "IMPORT-DONE"},
	{"a worker that fetches and posts back", "classes.html", `click("ask-the-worker")`, "WORKER-DONE"},
	{"a WebSocket reply to what the action sent", "classes-channels.html", `click("send-on-the-socket")`, "SOCKET-DONE"},
	{"a server-sent event answering the action's request", "classes-channels.html", `click("ask-for-an-event")`, "EVENT-DONE"},
	{"a CSS transition whose end renders", "classes.html", `click("open-the-panel")`, "TRANSITION-DONE"},
	{"a Web Animation whose finished promise renders", "classes.html", `click("animate-the-badge")`, "ANIMATION-DONE"},
	{"a requestAnimationFrame loop that ends", "classes.html", `click("show-progress")`, "FRAMES-DONE"},
	{"a lazy section loaded after a scroll", "classes.html", `scroll(0, 4000)`, "LAZY-DONE"},
	{"a debounced search box", "classes.html", `fill("search", "mug")`, "SEARCH-DONE-mug"},
	{"a frame of another origin that fetches on a message", "classes.html", `click("ask-the-frame")`, "FRAME-DONE"},
	{"a form POST answered 303", "classes.html", `click("send-the-form")`, "FORM-DONE"},
}

// classRounds is how many times each class runs in
// TestStepFollowsEverythingTheActionCauses, and classesAtOnce how many
// cases run at a time there.
const (
	classRounds   = 5
	classesAtOnce = 4
)

// Every class, at both speeds, settles with its content in the
// observation, every round of classRounds, with classesAtOnce cases
// running at once while two more processes keep two cores busy: on a
// saturated host (an RL run's, a CI runner's) the browser's network
// service passes a request on late, and a step must not return before it.
// The cases run in goroutines of one test, not as parallel subtests, so
// that go test's -parallel (the number of cores) does not serialise them.
func TestStepFollowsEverythingTheActionCauses(t *testing.T) {
	t.Parallel()
	busy.Saturate(t, 2)
	type job struct {
		name, page, action, want string
		env                      *envcore.Env
	}
	var jobs []job
	for _, speed := range []int{1, 3} {
		for _, c := range settleClasses {
			// The default idle window. What is asserted is the content,
			// not how long a starved host takes to get there: the settle
			// timeout is far beyond any round's.
			env, base := newRoutedEnv(t, envcore.Config{SettleTimeout: time.Minute})
			jobs = append(jobs, job{fmt.Sprintf("x%d/%s", speed, c.name), fmt.Sprintf("%s/x%d/%s", base, speed, c.page), c.action, c.want, env})
		}
	}
	// Each load and step is bounded by the settle timeout; this bounds
	// the whole.
	ctx, cancel := context.WithTimeout(context.Background(), busy.MaxSaturation)
	defer cancel()
	slots := make(chan struct{}, classesAtOnce)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			for round := 1; round <= classRounds; round++ {
				// The first round starts the episode; the next load the
				// page again in the same context (cheaper than a new one).
				var info envcore.StepInfo
				var err error
				if round == 1 {
					_, info, err = j.env.Reset(ctx, j.page)
				} else {
					_, info, err = j.env.StepText(ctx, fmt.Sprintf("goto(%q)", j.page))
				}
				if err != nil || info.ActionError != "" {
					t.Errorf("%s: round %d: load %s: %v %s", j.name, round, j.page, err, info.ActionError)
					return
				}
				if !info.Settled {
					t.Errorf("%s: round %d: the page's load did not settle: %s", j.name, round, info.SettleError)
				}
				obs, info, err := j.env.StepText(ctx, j.action)
				if err != nil || info.ActionError != "" {
					t.Errorf("%s: round %d: %s failed: %v %s\n%s", j.name, round, j.action, err, info.ActionError, obs.HTML)
					return
				}
				if !info.Settled {
					t.Errorf("%s: round %d: did not settle: %s", j.name, round, info.SettleError)
				}
				if !strings.Contains(obs.HTML, j.want) {
					t.Errorf("%s: round %d: settled after %s (%s), and the observation lacks %s:\n%s", j.name, round, info.Settle, info.SettleReason, j.want, obs.HTML)
				}
			}
		}()
	}
	wg.Wait()
}

// A click that causes nothing returns on the idle window alone, and says
// so.
func TestClickThatDoesNothingIsIdle(t *testing.T) {
	t.Parallel()
	env, base := newRoutedEnv(t, envcore.Config{})
	if _, _, err := env.Reset(testCtx(t), base+"/x1/classes.html"); err != nil {
		t.Fatal(err)
	}
	obs, info := mustStep(t, env, `click("does-nothing")`)
	if !info.Settled || info.SettleReason != envcore.SettleIdle {
		t.Errorf("settled=%v reason=%q %s", info.Settled, info.SettleReason, info.SettleError)
	}
	if !strings.Contains(obs.HTML, "waiting") {
		t.Errorf("the page changed:\n%s", obs.HTML)
	}
}

// At the settle timeout, StepInfo.Pending names what was pending by kind:
// a request with what asked for it, an animation.
func TestPendingNamesTheKind(t *testing.T) {
	t.Parallel()
	cases := []struct{ action, want string }{
		{`click("load-a-slow-image")`, "api/pixel.gif?ms=20000 (image, for "},
		{`click("fade-the-badge-slowly")`, "animation ("},
	}
	for _, c := range cases {
		t.Run(c.action, func(t *testing.T) {
			t.Parallel()
			env, base := newRoutedEnv(t, envcore.Config{SettleTimeout: time.Second})
			if _, _, err := env.Reset(testCtx(t), base+"/x1/classes.html"); err != nil {
				t.Fatal(err)
			}
			_, info := mustStep(t, env, c.action)
			if info.Settled || info.SettleReason != envcore.SettleTimeout {
				t.Fatalf("settled=%v reason=%q", info.Settled, info.SettleReason)
			}
			if !strings.Contains(strings.Join(info.Pending, "; "), c.want) {
				t.Errorf("pending %q lacks %q", info.Pending, c.want)
			}
		})
	}
}

// A reply that never comes is waited for a bounded time: the step
// settles within a settle timeout longer than the bound.
func TestUnansweredChannelIsLetGo(t *testing.T) {
	t.Parallel()
	// The bound is 2 s of the page's time; the timeout, far beyond it, only
	// stops a step that would wait for ever.
	env, base := newRoutedEnv(t, envcore.Config{SettleTimeout: time.Minute})
	if _, _, err := env.Reset(testCtx(t), base+"/x1/classes-channels.html"); err != nil {
		t.Fatal(err)
	}
	obs, info := mustStep(t, env, `click("send-without-answer")`)
	if !info.Settled || !strings.Contains(obs.HTML, "SENT") {
		t.Errorf("settled=%v reason=%q %s", info.Settled, info.SettleReason, info.SettleError)
	}
}

// An image the action sets the source of is pending in the page itself
// until its load event, so a browser without the proxy's log (and one
// whose request reaches the proxy only after the idle window, on a loaded
// machine) still waits for what its load handler renders.
func TestAnImageTheActionAsksForIsWaitedForByThePage(t *testing.T) {
	t.Parallel()
	_, srv := routed(t)                // the class site
	env := newEnv(t, envcore.Config{}) // not routed: the page's tracker alone
	if _, _, err := env.Reset(testCtx(t), srv.URL+"/x1/classes.html"); err != nil {
		t.Fatal(err)
	}
	obs, info := mustStep(t, env, `click("load-an-image")`)
	if !strings.Contains(obs.HTML, "IMAGE-DONE 1") {
		t.Errorf("settled %s (%s) without the image's load handler's content:\n%s", info.Settle, info.SettleReason, obs.HTML)
	}
}

// So is a script element with a source that the action inserts, until it
// has run.
func TestAScriptTheActionInsertsIsWaitedForByThePage(t *testing.T) {
	t.Parallel()
	_, srv := routed(t)
	env := newEnv(t, envcore.Config{}) // not routed: the page's tracker alone
	if _, _, err := env.Reset(testCtx(t), srv.URL+"/x1/classes.html"); err != nil {
		t.Fatal(err)
	}
	obs, info := mustStep(t, env, `click("load-a-script")`)
	if !strings.Contains(obs.HTML, "SCRIPT-DONE") {
		t.Errorf("settled %s (%s) before the script ran:\n%s", info.Settle, info.SettleReason, obs.HTML)
	}
}
