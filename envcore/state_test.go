package envcore_test

import (
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// A forked environment's next observation equals its parent's, and their
// futures are independent.
func TestCaptureAndRestoreBrowserState(t *testing.T) {
	t.Parallel()
	parent := newEnv(t, envcore.Config{})
	mustReset(t, parent, "/state.html")
	mustAct(t, parent, `click("add")`)
	mustAct(t, parent, `click("add")`)
	mustAct(t, parent, `click("next")`)
	mustAct(t, parent, `fill("note", "draft order")`)
	mustAct(t, parent, `click("gift-wrap")`)
	mustAct(t, parent, `select_option("color", "Blue")`)
	mustAct(t, parent, `new_tab("`+site.URL+`/a.html")`)
	before := mustAct(t, parent, `tab_focus(0)`)
	for _, want := range []string{"cart=2 sess=x cookie=yes page=?p=2", `value="draft order"`, `checked`, `data-semantic-id="color.blue" selected`} {
		if !strings.Contains(before.HTML, want) {
			t.Fatalf("parent page lacks %q:\n%s", want, before.HTML)
		}
	}
	st, err := parent.CaptureState(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tabs) != 2 || len(st.Tabs[0].History) != 2 || st.Tabs[0].Current != 1 || len(st.Cookies) != 1 {
		t.Fatalf("captured %+v", st)
	}

	fork := newEnv(t, envcore.Config{})
	obs, info, err := fork.RestoreState(testCtx(t), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Settled {
		t.Errorf("restore did not settle: %s", info.SettleError)
	}
	if obs.HTML != before.HTML {
		t.Errorf("fork's observation differs from the parent's:\nparent:\n%s\nfork:\n%s", before.HTML, obs.HTML)
	}
	if len(obs.Tabs) != 2 || obs.ActiveTab != 0 || obs.Tabs[1].Title != "Page A" {
		t.Errorf("fork tabs = %+v", obs.Tabs)
	}
	// History came along: back goes to the first page, storage intact.
	back := mustAct(t, fork, `go_back()`)
	if !strings.Contains(back.HTML, "cart=2 sess=x cookie=yes page=first") {
		t.Errorf("fork's history: %s", back.HTML)
	}
	// Independent futures: the fork's cart grows, the parent's does not.
	mustAct(t, fork, `click("add")`)
	again, err := parent.Observe(testCtx(t), envcore.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again.HTML, "cart=2 ") {
		t.Errorf("the fork's change reached the parent: %s", again.HTML)
	}
}
