package envcore_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// $WEBSERV_CHROMIUM_FLAGS reaches the browser a command launches, dashes or
// not, after the switches WebServ sets itself.
func TestChromiumFlagsFromTheEnvironment(t *testing.T) {
	t.Setenv("WEBSERV_CHROMIUM_FLAGS", "--user-agent=WebServ-Flag-Test lang=de-DE")
	b, err := envcore.Launch(testCtx(t), zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env := b.NewEnv(envcore.Config{})
	defer env.Close()
	obs, _, err := env.Reset(testCtx(t), site.URL+"/agent.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(obs.HTML, "WebServ-Flag-Test") {
		t.Errorf("the user agent switch did not reach the browser:\n%s", obs.HTML)
	}
}

func TestPagesCannotOpenMoreTabsThanAllowed(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{MaxTabs: 3, IdleWindow: 300 * time.Millisecond})
	mustReset(t, env, "/popups.html")
	obs := mustAct(t, env, `click("open-six")`)
	if len(obs.Tabs) != 3 {
		t.Fatalf("six popups with MaxTabs 3: %d tabs open, want 3: %+v", len(obs.Tabs), obs.Tabs)
	}
	if obs.BlockedTabs != 4 {
		t.Errorf("blocked tabs = %d, want the 4 refused", obs.BlockedTabs)
	}
	// Reported once, then the environment goes on as usual.
	obs = mustAct(t, env, `tab_focus(0)`)
	if obs.Title != "Popups" || obs.BlockedTabs != 0 || len(obs.Tabs) != 3 {
		t.Errorf("after tab_focus(0): %q, %d tabs, %d blocked", obs.Title, len(obs.Tabs), obs.BlockedTabs)
	}
	mustAct(t, env, `tab_close()`)
	obs = mustAct(t, env, `new_tab("`+site.URL+`/b.html")`)
	if obs.Title != "Page B" || len(obs.Tabs) != 3 {
		t.Errorf("a closed tab's place is free again: %q, %d tabs", obs.Title, len(obs.Tabs))
	}

	// A page that reopens itself forever stays at the limit, and an
	// environment beside it on the same browser is not disturbed.
	other := newEnv(t, envcore.Config{IdleWindow: 300 * time.Millisecond})
	mustReset(t, other, "/a.html")
	chain := newEnv(t, envcore.Config{MaxTabs: 3, IdleWindow: 300 * time.Millisecond})
	obs = mustReset(t, chain, "/popups.html?chain=0")
	// Each page opens the next 50 ms after it loads: wait until the chain
	// has been refused a tab (it reached the limit), however long the
	// host takes to get there (the reset may have waited for all of it).
	for deadline, blocked := time.Now().Add(30*time.Second), obs.BlockedTabs; blocked == 0; {
		var err error
		if obs, err = chain.Observe(testCtx(t), envcore.ObserveOptions{}); err != nil {
			t.Fatal(err)
		}
		blocked += obs.BlockedTabs
		if blocked == 0 && time.Now().After(deadline) {
			t.Fatalf("a self-reopening page was never refused a tab: %d tabs", len(obs.Tabs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(obs.Tabs) != 3 {
		t.Errorf("a self-reopening page: %d tabs, want 3", len(obs.Tabs))
	}
	if obs := mustAct(t, other, `click("go-to-b")`); obs.Title != "Page B" {
		t.Errorf("the environment beside it: %q", obs.Title)
	}
}
