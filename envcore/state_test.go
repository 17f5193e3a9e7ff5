package envcore_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

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
	mustAct(t, parent, `tab_focus(0)`)
	before := mustAct(t, parent, `click("note")`)
	if before.Focused != "note" {
		t.Fatalf("clicking the note field left the focus on %q", before.Focused)
	}
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

	fork, obs := mustRestore(t, st)
	if obs.HTML != before.HTML {
		t.Errorf("fork's observation differs from the parent's:\nparent:\n%s\nfork:\n%s", before.HTML, obs.HTML)
	}
	if obs.Focused != before.Focused {
		t.Errorf("fork's focus is on %q, the parent's on %q", obs.Focused, before.Focused)
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

// A restore loads only the current page of a tab's history: the entries
// around it are not requested again (a GET with side effects is not
// repeated) until the agent goes back or forward to them, and then they
// show their real pages.
func TestRestoreLoadsOnlyTheCurrentEntry(t *testing.T) {
	t.Parallel()
	prefix := fmt.Sprintf("r%d-", time.Now().UnixNano())
	page := func(name string) string { return site.URL + "/counted/" + prefix + name }
	visits := func() (n [3]int) {
		for i, name := range []string{"a", "b", "c"} {
			resp, err := http.Get(page(name) + "?peek")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			n[i], _ = strconv.Atoi(string(body))
		}
		return n
	}
	parent := newEnv(t, envcore.Config{})
	mustReset(t, parent, "/counted/"+prefix+"a")
	mustAct(t, parent, `goto("`+page("b")+`")`)
	mustAct(t, parent, `goto("`+page("c")+`")`)
	if obs := mustAct(t, parent, `go_back()`); !strings.Contains(obs.HTML, "page "+prefix+"b, visit") {
		t.Fatalf("parent after go_back: %s", obs.HTML)
	}
	st, err := parent.CaptureState(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tabs) != 1 || len(st.Tabs[0].History) != 3 || st.Tabs[0].Current != 1 {
		t.Fatalf("captured %+v", st.Tabs)
	}
	before := visits()

	fork, obs := mustRestore(t, st)
	if want := fmt.Sprintf("page %sb, visit %d<", prefix, before[1]+1); obs.URL != page("b") || !strings.Contains(obs.HTML, want) {
		t.Fatalf("restored page: want %q at %s, got %s %s", want, page("b"), obs.URL, obs.HTML)
	}
	if after := visits(); after != [3]int{before[0], before[1] + 1, before[2]} {
		t.Errorf("requests of a, b, c: %v before the restore, %v after; want only b's to grow by one", before, after)
	}
	for _, step := range []struct{ action, want string }{
		{`go_forward()`, fmt.Sprintf("page %sc, visit %d<", prefix, before[2]+1)},
		{`go_back()`, "page " + prefix + "b, visit"},
		{`go_back()`, fmt.Sprintf("page %sa, visit %d<", prefix, before[0]+1)},
	} {
		obs := mustAct(t, fork, step.action)
		if !strings.Contains(obs.HTML, step.want) {
			t.Errorf("fork after %s: want %q in %s", step.action, step.want, obs.HTML)
		}
	}
	if obs, _ := mustStep(t, fork, `go_back()`); obs.LastActionError == "" {
		t.Errorf("the fork's history reaches before its first entry: %s", obs.URL)
	}
}

// Storage reaches the restored page before its scripts run, wherever the
// current entry lies in the history.
func TestRestoreStorageAtEveryPosition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		actions []string
		want    string
		then    string // an action in the fork, and what it shows
		thenHas string
	}{
		{"only entry", []string{`click("add")`}, "cart=1 sess=x cookie=yes page=first", `click("add")`, "cart=2 sess=x"},
		{"behind a later entry", []string{`click("add")`, `click("next")`, `go_back()`}, "cart=1 sess=x cookie=yes page=first", `go_forward()`, "cart=1 sess=x cookie=yes page=?p=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := newEnv(t, envcore.Config{})
			mustReset(t, parent, "/state.html")
			for _, a := range tc.actions {
				mustAct(t, parent, a)
			}
			st, err := parent.CaptureState(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			fork, obs := mustRestore(t, st)
			if !strings.Contains(obs.HTML, tc.want) {
				t.Fatalf("restored page lacks %q: %s", tc.want, obs.HTML)
			}
			if next := mustAct(t, fork, tc.then); !strings.Contains(next.HTML, tc.thenHas) {
				t.Errorf("after %s the fork lacks %q: %s", tc.then, tc.thenHas, next.HTML)
			}
		})
	}
}

// A restore is part of a reset: a page that loads slower than the settle
// timeout when the restore loads it again (a loaded site, a starved
// machine) is waited for as long as the caller's context allows, and the
// fork starts settled on the parent's page instead of failing.
func TestRestoreWaitsForPagesSlowerThanTheSettleTimeout(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("l%d", time.Now().UnixNano())
	parent := newEnv(t, envcore.Config{})
	mustReset(t, parent, "/counted/"+name)
	for _, at := range []struct{ name, action string }{
		{"last entry", `goto("` + site.URL + `/late/` + name + `-last")`},
		{"behind a later entry", `goto("` + site.URL + `/late/` + name + `-behind")`},
	} {
		before := mustAct(t, parent, at.action)
		if at.name == "behind a later entry" {
			mustAct(t, parent, `goto("`+site.URL+`/counted/`+name+`-next")`)
			before = mustAct(t, parent, `go_back()`)
		}
		st, err := parent.CaptureState(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		fork := newEnv(t, envcore.Config{SettleTimeout: time.Second})
		obs, info, err := fork.RestoreState(testCtx(t), st)
		if err != nil {
			t.Fatalf("%s: restore of a page slower than the settle timeout failed: %v", at.name, err)
		}
		if !info.Settled || obs.HTML != before.HTML {
			t.Errorf("%s: the fork did not start settled on the parent's page (settled %v: %s):\nparent:\n%s\nfork:\n%s",
				at.name, info.Settled, info.SettleError, before.HTML, obs.HTML)
		}
	}
}

// mustRestore rebuilds st in a new environment, which must settle.
func mustRestore(t *testing.T, st envcore.BrowserState) (*envcore.Env, envcore.Observation) {
	t.Helper()
	fork := newEnv(t, envcore.Config{})
	obs, info, err := fork.RestoreState(testCtx(t), st)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Settled {
		t.Errorf("restore did not settle: %s", info.SettleError)
	}
	return fork, obs
}
