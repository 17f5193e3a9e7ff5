package miniwob_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/sites/miniwob"
)

// clockRun is what one episode of click-test shows: its first observation
// and the one after the click, MiniWoB's time-scaled reward (the time the
// page read between its start and the click), and the clock and crypto
// the page reads at the end.
type clockRun struct {
	First, After string
	Reward       float64
	Read         string
}

// A seeded MiniWoB episode repeats byte for byte whatever the host's
// timing: two fresh loads with the same seed (one agent slower than the
// other) and a restart in place of the same seed show the same
// observations, earn the same time-scaled reward and read the same clock
// and crypto values (the page's clock is the episode's: envcore.Clock).
func TestSeededEpisodesRepeatWhateverTheHostsTiming(t *testing.T) {
	ctx := context.Background()
	_, siteURL, browser := servedPages(t)
	cfg := envcore.Config{Observe: envcore.ObserveOptions{AXTree: true}}
	seed := int64(5)
	ep, err := miniwob.Episode(siteURL, "click-test", &seed)
	if err != nil {
		t.Fatal(err)
	}
	run := func(env *envcore.Env, obs envcore.Observation, think time.Duration) clockRun {
		t.Helper()
		r := clockRun{First: hashObs(t, obs)}
		time.Sleep(think) // the agent's thinking: host time the page must not see
		after, _, err := env.Step(ctx, envcore.Action{Type: envcore.Click, Target: obs.Clickable[0]})
		if err != nil {
			t.Fatal(err)
		}
		r.After = hashObs(t, after)
		var st miniwob.State
		if err := env.Evaluate(ctx, miniwob.StateScript(), &st); err != nil {
			t.Fatal(err)
		}
		if !st.Done || st.RawReward != 1 {
			t.Fatalf("click-test not solved: %+v", st)
		}
		r.Reward = st.Reward
		if err := env.Evaluate(ctx, `[Date.now(), performance.now(), crypto.randomUUID()].join(' ')`, &r.Read); err != nil {
			t.Fatal(err)
		}
		return r
	}
	start := func(env *envcore.Env) envcore.Observation {
		t.Helper()
		obs, _, err := env.ResetWith(ctx, ep.StartURL, envcore.ResetOptions{Start: ep.Start, Clock: ep.Clock})
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}
	a, b := browser.NewEnv(cfg), browser.NewEnv(cfg)
	defer a.Close()
	defer b.Close()
	want := run(a, start(a), 0)
	got := run(b, start(b), 50*time.Millisecond)
	if got != want {
		t.Fatalf("two episodes of seed %d differ:\n%+v\n%+v", seed, want, got)
	}
	// b's page starts the same episode again in place.
	obs, _, ok, err := b.RestartInPlace(ctx, ep.Restart, nil)
	if err != nil || !ok {
		t.Fatalf("restart in place: %v, %v", ok, err)
	}
	if again := run(b, obs, 0); again != want {
		t.Fatalf("the episode restarted in place differs from a fresh load:\n%+v\n%+v", want, again)
	}
	if want.Reward >= 1 || want.Reward <= 0.99 {
		t.Errorf("the time-scaled reward %v is not the page's virtual time (a few ms) of 1,000,000 ms", want.Reward)
	}
}

// The tasks whose reward measures real time keep the real clock, the
// others get the virtual one; every listed task exists.
func TestTasksThatMeasureRealTimeKeepTheRealClock(t *testing.T) {
	pages, err := miniwob.Load(miniwobDir(t))
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	for _, name := range []string{"button-delay", "chase-circle", "hover-shape", "click-test"} {
		if !slices.Contains(pages.Tasks, name) {
			t.Fatalf("%s is not a task of %s", name, pages.Dir)
		}
		ep, err := miniwob.Episode("http://x", name, &seed)
		if err != nil {
			t.Fatal(err)
		}
		if ep.Clock == nil || !ep.Clock.Crypto || ep.Clock.RealTime != (name != "click-test") {
			t.Errorf("%s: clock %+v", name, ep.Clock)
		}
	}
}
