package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/trajectory"
	"github.com/webserv-rl/webserv/ui"
)

func began(b *ui.Board, env string) {
	b.Began(env, ui.Options{Approve: true}, trajectory.Line{Kind: trajectory.KindEpisode, Site: "shopping", TaskID: "shopping.3", Goal: "buy"},
		trajectory.Line{Kind: trajectory.KindReset, Obs: &trajectory.Observation{Observation: envcore.Observation{URL: "http://a/"}}, Info: map[string]any{"settled": true}})
}

// The board follows episodes and steps, and every change moves its
// version (what viewers poll).
func TestBoardFollowsEnvironments(t *testing.T) {
	b := ui.NewBoard()
	v0 := b.Version()
	began(b, "env-a")
	one := 1.0
	b.Stepped("env-a", trajectory.Line{Kind: trajectory.KindStep, Step: 1, Action: `click("x")`, Reward: &one,
		Obs: &trajectory.Observation{Observation: envcore.Observation{URL: "http://a/x", LastActionError: "covered", Screenshot: []byte("png")}}, Info: map[string]any{"settle_ms": 501.0}})
	if b.Version() == v0 {
		t.Error("the version did not move")
	}
	l := b.List()
	if len(l) != 1 || l[0].Step != 1 || l[0].Reward != 1 || l[0].LastError != "covered" || l[0].URL != "http://a/x" || l[0].TaskID != "shopping.3" {
		t.Errorf("list = %+v", l)
	}
	d, ok := b.Detail("env-a")
	if !ok || len(d.History) != 1 || d.History[0].SettleMS != 501 || d.Obs.URL != "http://a/x" || d.Obs.Screenshot != nil {
		t.Errorf("detail = %+v", d)
	}
	began(b, "env-a") // a reset: a new episode, a fresh history
	if d, _ := b.Detail("env-a"); d.Episode != 2 || len(d.History) != 0 || d.Step != 0 {
		t.Errorf("after a reset = %+v", d)
	}
	b.Closed("env-a")
	if len(b.List()) != 0 {
		t.Error("a closed environment is still listed")
	}
}

// A question is answered by Decide, by its timeout (a rejection) or by the
// environment closing.
func TestBoardAsk(t *testing.T) {
	b := ui.NewBoard()
	began(b, "env-a")
	ctx := context.Background()
	if err := b.Decide("env-a", true, ""); err == nil {
		t.Error("Decide with nothing pending succeeded")
	}
	got := make(chan trajectory.Review, 1)
	go func() {
		r, _ := b.Ask(ctx, "env-a", 1, `click("x")`, time.Minute)
		got <- r
	}()
	for {
		if d, _ := b.Detail("env-a"); d.Pending != nil {
			if d.Pending.Action != `click("x")` || d.Pending.Step != 1 {
				t.Errorf("pending = %+v", d.Pending)
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := b.Decide("env-a", false, "no"); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Verdict != trajectory.VerdictRejected || r.Comment != "no" || r.By != "person" {
		t.Errorf("review = %+v", r)
	}
	if d, _ := b.Detail("env-a"); d.Pending != nil {
		t.Errorf("still pending after the verdict: %+v", d.Pending)
	}

	r, err := b.Ask(ctx, "env-a", 2, "noop()", 10*time.Millisecond)
	if err != nil || r.Verdict != trajectory.VerdictRejected || r.By != "timeout" {
		t.Errorf("timed out = %+v, %v", r, err)
	}

	go func() {
		r, _ := b.Ask(ctx, "env-a", 3, "noop()", time.Minute)
		got <- r
	}()
	for {
		if d, _ := b.Detail("env-a"); d.Pending != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.Closed("env-a")
	if r := <-got; r.Verdict != trajectory.VerdictRejected || r.By != "closed" {
		t.Errorf("closed = %+v", r)
	}
	if _, err := b.Ask(ctx, "env-gone", 1, "noop()", time.Second); err == nil {
		t.Error("Ask on an unknown environment succeeded")
	}
}
