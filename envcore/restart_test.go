package envcore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// RestartInPlace runs its script in the page the environment has and, when
// the page agrees, begins a new episode there: the page observed after the
// script's work, a terminated episode open again. Where there is no page to
// restart in, or the page answers null, it says so (ok false) and changes
// nothing.
func TestRestartInPlaceBeginsAnEpisodeInTheLoadedPage(t *testing.T) {
	ctx := testCtx(t)
	env := newEnv(t, envcore.Config{})
	const restart = `(async function () {
	  if (document.title !== 'Page A') return null;
	  await new Promise(function (r) { setTimeout(r, 50); });
	  document.querySelector('h1').textContent = 'Episode ' + (++window.episodes || (window.episodes = 1));
	  return 'goal ' + window.episodes;
	})()`
	if _, _, ok, err := env.RestartInPlace(ctx, restart, nil); ok || err != nil {
		t.Fatalf("an environment never reset restarted: ok %v, %v", ok, err)
	}
	if _, _, err := env.Reset(ctx, site.URL+"/a.html"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Step(ctx, envcore.Action{Type: envcore.Terminate, Answer: "done"}); err != nil {
		t.Fatal(err)
	}
	var goal string
	obs, info, ok, err := env.RestartInPlace(ctx, restart, &goal)
	if !ok || err != nil {
		t.Fatalf("RestartInPlace: ok %v, %v", ok, err)
	}
	// The observation is taken after the script's timer: settled.
	if goal != "goal 1" || !strings.Contains(obs.HTML, "Episode 1") || !info.Settled {
		t.Fatalf("goal %q, settled %v, html %s", goal, info.Settled, obs.HTML)
	}
	if _, _, err := env.Step(ctx, envcore.Action{Type: envcore.Noop}); err != nil {
		t.Fatalf("the restarted episode is still over: %v", err)
	}

	// The page refuses: nothing changes.
	if _, _, ok, err := env.RestartInPlace(ctx, `null`, nil); ok || err != nil {
		t.Fatalf("a refusal: ok %v, %v", ok, err)
	}
	// A second tab: there is no one page to restart in.
	if _, _, err := env.Step(ctx, envcore.Action{Type: envcore.NewTab, URL: site.URL + "/b.html"}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := env.RestartInPlace(ctx, restart, nil); ok || err != nil {
		t.Fatalf("with two tabs: ok %v, %v", ok, err)
	}
	if obs, err := env.Observe(ctx, envcore.ObserveOptions{}); err != nil || len(obs.Tabs) != 2 || !strings.Contains(obs.Tabs[1].URL, "b.html") {
		t.Fatalf("a refused restart changed the tabs: %+v, %v", obs.Tabs, err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := env.RestartInPlace(ctx, restart, nil); !errors.Is(err, envcore.ErrClosed) {
		t.Fatalf("a closed environment: %v", err)
	}
}
