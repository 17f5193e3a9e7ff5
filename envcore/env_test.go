package envcore_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// Environments on one browser share nothing: storage, history and tabs are
// their own, they step concurrently, and closing one leaves the others
// working.
func TestEnvironmentsAreIsolated(t *testing.T) {
	t.Parallel()
	a := newEnv(t, envcore.Config{})
	b := newEnv(t, envcore.Config{})
	mustReset(t, a, "/b.html")
	mustReset(t, b, "/b.html")
	var wg sync.WaitGroup
	for _, env := range []*envcore.Env{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustAct(t, env, `refresh()`)
		}()
	}
	wg.Wait()
	obs := mustAct(t, a, `refresh()`)
	if !strings.Contains(obs.HTML, "loads 3") {
		t.Errorf("a: %s", obs.HTML)
	}
	obs = mustAct(t, b, `new_tab("`+site.URL+`/a.html")`)
	if len(obs.Tabs) != 2 {
		t.Errorf("b tabs = %+v", obs.Tabs)
	}
	if obs, _ := a.Observe(testCtx(t), envcore.ObserveOptions{}); len(obs.Tabs) != 1 {
		t.Errorf("a sees b's tab: %+v", obs.Tabs)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	obs = mustAct(t, b, `tab_focus(0)`)
	if !strings.Contains(obs.HTML, "loads 2") {
		t.Errorf("b after a closed: %s", obs.HTML)
	}
}
