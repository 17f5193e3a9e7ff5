package dream_test

import (
	"context"
	"math"
	"testing"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/trajectory"
)

// recording is a real episode as the server records it: its reset, its
// steps' actions and observations, and the reward of its stop.
func recording(goal string, start trajectory.Observation, reward float64, actions ...string) *trajectory.Episode {
	start.Goal = goal
	ep := &trajectory.Episode{Head: trajectory.Line{Kind: "episode", Goal: goal}, Reset: &trajectory.Line{Kind: "reset", Obs: &start}}
	for i, a := range actions {
		o := page("http://shop/"+a, "lamp", a)
		o.Goal = goal
		l := trajectory.Line{Kind: "step", Step: i + 1, Action: a, Obs: &o}
		if i == len(actions)-1 {
			r := reward
			l.Reward, l.Terminated = &r, true
		}
		ep.Steps = append(ep.Steps, l)
	}
	return ep
}

// With the memory world model, a dream that follows a recorded real
// episode step for step (same goal, start, actions and answer) carries
// that episode's real reward (reward_source "recorded"), though the
// task's grader cannot run on a dream; a dream that leaves the path (or
// answers otherwise) is not graded; recordings of one path that disagree
// recall nothing.
func TestDreamFollowingARecordedEpisodeCarriesItsRealReward(t *testing.T) {
	ctx := context.Background()
	start := page("http://shop/", "lamp")
	m := dream.NewMemory("")
	m.AddEpisode(recording("buy a lamp", start, 1, `click("lamp")`, `click("buy")`, `stop("bought")`))
	m.AddEpisode(recording("buy a lamp", start, 0, `click("lamp")`, `stop("no")`))
	m.AddEpisode(recording("buy a lamp", start, 1, `click("lamp")`, `stop("maybe")`))
	m.AddEpisode(recording("buy a lamp", start, 0, `click("lamp")`, `stop("maybe")`))
	e, err := dream.New(dream.Config{Model: m, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	e.SetGrader(nil, "task shopping.35's state evaluator needs the real site")

	run := func(actions ...string) dream.Step {
		t.Helper()
		e.Reset(start)
		var st dream.Step
		for _, a := range actions {
			if st, err = e.Step(ctx, dream.Action{Text: a}); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	if st := run(`click("lamp")`, `click("buy")`, `stop( "bought" )`); st.Reward != 1 || st.Info.RewardSource != dream.RewardRecorded {
		t.Errorf("the recorded path: reward %v from %v, want 1 recorded", st.Reward, st.Info.RewardSource)
	}
	if st := run(`click("lamp")`, `stop("no")`); st.Reward != 0 || st.Info.RewardSource != dream.RewardRecorded {
		t.Errorf("the recorded failure: reward %v from %v, want 0 recorded", st.Reward, st.Info.RewardSource)
	}
	for name, path := range map[string][]string{
		"another answer":      {`click("lamp")`, `click("buy")`, `stop("sold")`},
		"a path left":         {`click("lamp")`, `stop("bought")`},
		"recordings disagree": {`click("lamp")`, `stop("maybe")`},
	} {
		if st := run(path...); !math.IsNaN(st.Reward) || st.Info.RewardSource != dream.RewardNotGraded {
			t.Errorf("%s: reward %v from %v, want not graded", name, st.Reward, st.Info.RewardSource)
		}
	}
	// Another goal from the same start is another task: nothing recalled.
	other := start
	other.Goal = "buy a chair"
	e.Reset(other)
	for _, a := range []string{`click("lamp")`, `click("buy")`, `stop("bought")`} {
		st, err := e.Step(ctx, dream.Action{Text: a})
		if err != nil {
			t.Fatal(err)
		}
		if st.Terminated && st.Info.RewardSource != dream.RewardNotGraded {
			t.Errorf("another goal: reward from %v, want not graded", st.Info.RewardSource)
		}
	}
}
