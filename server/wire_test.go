package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/server"
)

// A misspelled argument is refused with the nearest valid name, at every
// level of every op, never run with a silent default.
func TestMisspelledArgumentsAreRefusedWithTheNearestName(t *testing.T) {
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	for _, c := range []struct {
		op   string
		args map[string]any
		want []string
	}{
		{"make", map[string]any{"start_url": pageURL(1), "idle": 200}, []string{"make has no argument idle", "did you mean idle_ms?"}},
		{"make", map[string]any{"start_url": pageURL(1), "observe": map[string]any{"screenshots": true}}, []string{"make.observe has no argument screenshots", "did you mean screenshot?"}},
		{"make", map[string]any{"start_url": pageURL(1), "options": map[string]any{"start_ulr": "x"}}, []string{"make.options has no argument start_ulr", "did you mean start_url?"}},
		{"make", map[string]any{"start_url": pageURL(1), "max_steps": "ten"}, []string{"make.max_steps must be a whole number"}},
		{"make", map[string]any{"start_url": pageURL(1), "record": map[string]any{"screenshot": true}}, []string{"make.record has no argument screenshot", "did you mean screenshots?"}},
		{"tasks", map[string]any{"sites": "open"}, []string{"tasks has no argument sites", "did you mean site?"}},
		{"sites", map[string]any{"verbose": true}, []string{"sites has no argument verbose", "it takes no arguments"}},
		{"hello", map[string]any{"tokn": "x"}, []string{"hello has no argument tokn", "did you mean token?"}},
	} {
		e := cl.fail(c.op, "", c.args, server.CodeBadArgs)
		msg, _ := e["message"].(string)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %v: message %q lacks %q", c.op, c.args, msg, w)
			}
		}
		if e["fault"] != "client" || e["retryable"] != false {
			t.Errorf("%s %v: fault %v retryable %v, want client and false", c.op, c.args, e["fault"], e["retryable"])
		}
	}
	if e := cl.fail("stpe", "", nil, server.CodeUnknownOp); !strings.Contains(e["message"].(string), "did you mean step?") {
		t.Errorf("unknown op: %v", e["message"])
	}

	// The same on an environment's ops, and in a structured action.
	env := cl.call("make", "", map[string]any{"start_url": pageURL(1)})["env"].(string)
	for _, c := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{"step", map[string]any{"actoin": `click("load")`}, "did you mean action?"},
		{"step", map[string]any{"action": map[string]any{"type": "click", "targte": "load"}}, "did you mean target?"},
		{"reset", map[string]any{"options": map[string]any{"gaol": "x"}}, "did you mean goal?"},
		{"fork", map[string]any{"count": 2}, "fork has no argument count"},
	} {
		e := cl.fail(c.op, env, c.args, server.CodeBadArgs)
		if msg, _ := e["message"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: message %q lacks %q", c.op, c.args, msg, c.want)
		}
	}
	// The environment is untouched by the refused requests.
	res := cl.call("step", env, map[string]any{"action": `click("load")`})
	if html, _ := obsOf(res)["html"].(string); !strings.Contains(html, "loaded 1") {
		t.Errorf("after the refused requests a step did not run as usual: %.300s", html)
	}
}

// brokenFactory is a site backend whose every start fails with an error
// it does not classify, as a backend a user writes may.
type brokenFactory struct{ server.OpenFactory }

func (brokenFactory) Make(context.Context, server.MakeSpec) (server.Instance, error) {
	return nil, errors.New("write /var/lib/site/db: no space left on device")
}

// A failure nobody classified is the infrastructure's, never the client's
// (and so never scored against a policy); the request's own mistakes stay
// the client's.
func TestUnclassifiedFailuresAreTheInfrastructures(t *testing.T) {
	s := server.New(zap.NewNop(), browser, brokenFactory{}, server.Config{Env: envConfig()})
	cl := dial(t, serve(t, s))
	e := cl.fail("make", "", map[string]any{"start_url": pageURL(1)}, server.CodeBackend)
	if e["fault"] != "infrastructure" || e["retryable"] != true || !strings.Contains(e["message"].(string), "no space left") {
		t.Errorf("unclassified failure: %v", e)
	}
	_, base := startServer(t, server.Config{})
	cl = dial(t, base)
	e = cl.fail("make", "", map[string]any{"site": "nowhere"}, server.CodeBadArgs)
	if e["fault"] != "client" || !strings.Contains(e["message"].(string), `unknown site "nowhere"`) {
		t.Errorf("unknown site: %v", e)
	}
	e = cl.fail("make", "", map[string]any{"start_url": "ftp://x"}, server.CodeBadArgs)
	if e["fault"] != "client" {
		t.Errorf("bad start_url: %v", e)
	}
}

// Close answers what is in flight with shutting_down, at once, and every
// later request too; it returns once the environments are closed.
func TestCloseCancelsRequestsInFlight(t *testing.T) {
	cfg := server.Config{Env: envcore.Config{IdleWindow: 150 * time.Millisecond, SettleTimeout: time.Minute}}
	s, base := startServer(t, cfg)
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(1)})["env"].(string)
	// The page's button fetches /slow?ms=300; a minute-long one keeps the
	// step waiting until Close.
	cl.call("step", env, map[string]any{"action": `goto("` + pages.URL + `/link?to=%2Fslow%3Fms%3D60000")`})
	step := cl.send("step", env, map[string]any{"action": `click("go")`})
	time.Sleep(300 * time.Millisecond) // the step is waiting on the slow page
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	r := wait(t, step)
	e, _ := r["error"].(map[string]any)
	if r["ok"] != false || e["code"] != "shutting_down" || e["fault"] != "infrastructure" {
		t.Fatalf("a step in flight at Close: %v", r)
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
	cl.fail("stats", "", nil, server.CodeShuttingDown)
	cl.fail("step", env, map[string]any{"action": "noop()"}, server.CodeUnknownEnv)
}

// Pages the policy opened that go past an environment's limit end its
// episode with resource_limit, the agent's fault; a reset goes on, and
// another environment is not disturbed.
func TestResourceLimitIsTheAgentsAndResetGoesOn(t *testing.T) {
	grow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Grow</title><button onclick="for (let i = 0; i < 20000; i++) document.body.appendChild(document.createElement('div'))">Grow</button>`)
	}))
	defer grow.Close()
	cfg := server.Config{Env: envcore.Config{IdleWindow: 100 * time.Millisecond, MaxDOMNodes: 5000}}
	_, base := startServer(t, cfg)
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": grow.URL})["env"].(string)
	other := cl.call("make", "", map[string]any{"start_url": pageURL(2)})["env"].(string)
	e := cl.fail("step", env, map[string]any{"action": `click("grow")`}, server.CodeResourceLimit)
	if e["fault"] != "agent" || e["retryable"] != false || !strings.Contains(e["message"].(string), "limit") {
		t.Errorf("over the DOM limit: %v", e)
	}
	if html := obsOf(cl.call("step", other, map[string]any{"action": `click("load")`}))["html"].(string); !strings.Contains(html, "loaded 2") {
		t.Errorf("the other environment: %.200s", html)
	}
	if obs := obsOf(cl.call("reset", env, nil)); obs["title"] != "Grow" {
		t.Errorf("after the reset: %v", obs["title"])
	}
	cl.call("step", env, map[string]any{"action": "noop()"})
}

// approve without approve_timeout_ms is accepted: its default fits inside
// the server's request timeout (it equalled it, and every such make was
// refused).
func TestApproveWithTheDefaultTimeoutIsAccepted(t *testing.T) {
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(4), "approve": true})["env"].(string)
	cl.call("close", env, nil)
}
