package envcore_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
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

// The pid a browser reports (its health, its crash errors) is Chromium's
// browser process itself: not the wrapper script that starts it, and not
// a child it has just forked, which has the browser's command line until
// it execs. Killing that pid is what ends the browser; a zygote's pid
// taken for it left the browser running and unable to open pages.
func TestBrowserPIDIsTheBrowserItself(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// Two at once, like a pool's start: each forks its zygotes while the
	// other starts.
	var bs [2]*envcore.Browser
	var g errgroup.Group
	for i := range bs {
		g.Go(func() (err error) {
			bs[i], err = envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{})
			return err
		})
	}
	err := g.Wait()
	for _, b := range bs {
		if b != nil {
			defer b.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		main := envcore.BrowserMainPID(b)
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", main))
		if err != nil {
			t.Fatalf("browser pid %d: %v", main, err)
		}
		parent, err := procstat.ReadProcess(main)
		if err != nil {
			t.Fatal(err)
		}
		if pexe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", parent.Parent)); pexe == exe {
			t.Errorf("browser pid %d (%s) is the child of a process of the same binary (%d): a process the browser forked, not the browser", main, exe, parent.Parent)
		}
		var typed int
		for _, p := range browserTree(t, envcore.BrowserPID(b)) {
			switch {
			case p.pid == main && strings.Contains(p.cmdline, "--type="):
				t.Errorf("browser pid %d runs a child process: %.200s", main, p.cmdline)
			case strings.Contains(p.cmdline, "--type="):
				typed++
				if !slices.Contains(ancestors(t, p.pid), main) {
					t.Errorf("Chromium's child process %d (%.80s) is not under the browser pid %d", p.pid, p.cmdline, main)
				}
			}
		}
		if typed == 0 {
			t.Errorf("no zygote, GPU or utility process under browser %d's tree", main)
		}
	}
}

// ancestors are pid's parent, its parent's parent, and so on.
func ancestors(t *testing.T, pid int) []int {
	var out []int
	for pid > 1 {
		p, err := procstat.ReadProcess(pid)
		if err != nil {
			break
		}
		pid = p.Parent
		out = append(out, pid)
	}
	return out
}
