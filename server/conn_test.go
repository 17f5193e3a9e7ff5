package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// A client killed mid-episode (its connection ends without a close) leaves
// nothing behind: its environments and their site instances are freed at
// once, while another client's stay. One that closes its connection may
// come back (TestReconnectAndContinue), and hello's keep_envs keeps them
// across a lost connection too.
func TestLostClientLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "instances")
	local, err := hosting.NewLocal(nil, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.Close(context.Background()) })
	factory := catalog.New([]*hosting.Site{hostingtest.LocalSite(t)}, []hosting.Backend{local}, nil)
	base := serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig()}))

	other := dial(t, base)
	kept := other.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
	keeper := dial(t, base)
	keeper.call("hello", "", map[string]any{"keep_envs": true})
	survivor := keeper.call("make", "", map[string]any{"site": "testsite"})["env"].(string)

	doomed := dial(t, base)
	env := doomed.call("make", "", map[string]any{"site": "testsite"})["env"].(string)
	doomed.call("step", env, map[string]any{"action": `goto("/set?v=mid-episode")`})
	step := doomed.send("step", env, map[string]any{"action": `goto("/")`}) // in flight when the client dies
	_ = doomed.c.CloseNow()
	_ = keeper.c.CloseNow()
	_ = step

	deadline := time.Now().Add(30 * time.Second)
	for {
		envs := other.call("stats", "", nil)["envs"].([]any)
		instances, _ := os.ReadDir(root)
		if len(envs) == 2 && len(instances) == 2 {
			got := map[string]bool{}
			for _, e := range envs {
				got[e.(string)] = true
			}
			if !got[kept] || !got[survivor] {
				t.Errorf("the wrong environments were freed: %v left", envs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a lost client's environment is still there: envs %v, instance dirs %d", envs, len(instances))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := other.call("step", kept, map[string]any{"action": `goto("/")`}); obsOf(r)["url"] != "http://testsite.webserv.test/" {
		t.Errorf("another client's environment was disturbed: %v", obsOf(r)["url"])
	}
}
