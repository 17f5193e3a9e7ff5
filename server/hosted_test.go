package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/server"
)

// A hosted site (internal/testsite on the local backend) through the
// protocol: make, state changes, snapshot, fork, restore, reset.
func TestHostedSiteSnapshotForkRestore(t *testing.T) {
	t.Parallel()
	cl := hostedServer(t)

	sites := fmt.Sprint(cl.call("sites", "", nil)["sites"])
	if !strings.Contains(sites, "name:testsite") || !strings.Contains(sites, "backend:local") {
		t.Errorf("sites = %s", sites)
	}
	made := cl.call("make", "", map[string]any{"site": "testsite"})
	env := made["env"].(string)
	if html := obsOf(made)["html"].(string); !strings.Contains(html, "state=base") {
		t.Fatalf("first page: %q", html)
	}
	step := func(env, action string) string {
		t.Helper()
		r := cl.call("step", env, map[string]any{"action": action})
		if e, _ := obsOf(r)["last_action_error"].(string); e != "" {
			t.Fatalf("%s: %v", action, e)
		}
		return obsOf(r)["html"].(string)
	}
	step(env, `goto("/set?v=cart-1")`)
	if html := step(env, `goto("/")`); !strings.Contains(html, "state=cart-1") {
		t.Fatalf("state after set: %q", html)
	}
	snap := cl.call("snapshot", env, map[string]any{"name": "checkout"})
	if !strings.HasSuffix(snap["url"].(string), "/") {
		t.Errorf("snapshot = %v", snap)
	}
	step(env, `goto("/set?v=later")`)

	forked := cl.call("fork", env, map[string]any{"name": "checkout", "n": 2})
	envs := forked["envs"].([]any)
	if len(envs) != 2 {
		t.Fatalf("fork = %v", forked)
	}
	var forkIDs []string
	for i, f := range envs {
		m := f.(map[string]any)
		forkIDs = append(forkIDs, m["env"].(string))
		if html := obsOf(m)["html"].(string); !strings.Contains(html, "state=cart-1") {
			t.Errorf("fork %d starts at %q, want the snapshot's page and state", i, html)
		}
	}
	// Futures are independent.
	step(forkIDs[0], `goto("/set?v=fork-0")`)
	if html := step(forkIDs[1], `refresh()`); !strings.Contains(html, "state=cart-1") {
		t.Errorf("fork 1 sees fork 0's change: %q", html)
	}
	if html := step(env, `goto("/")`); !strings.Contains(html, "state=later") {
		t.Errorf("parent after forks: %q", html)
	}

	restored := cl.call("restore", env, map[string]any{"name": "checkout"})
	if html := obsOf(restored)["html"].(string); !strings.Contains(html, "state=cart-1") {
		t.Errorf("after restore: %q", html)
	}
	cl.fail("restore", env, map[string]any{"name": "nope"}, server.CodeBadArgs)
	cl.fail("fork", env, map[string]any{"n": 0}, server.CodeBadArgs)
	reset := cl.call("reset", env, nil)
	if html := obsOf(reset)["html"].(string); !strings.Contains(html, "state=base") {
		t.Errorf("after reset: %q", html)
	}
	// The open site still answers not_supported.
	open := cl.call("make", "", map[string]any{"start_url": pageURL(1)})["env"].(string)
	cl.fail("snapshot", open, map[string]any{"name": "x"}, server.CodeNotSupported)
}
