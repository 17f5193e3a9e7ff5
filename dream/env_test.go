package dream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/trajectory"
)

// standin stands in for the user's world model: an OpenAI-compatible
// endpoint on 127.0.0.1 that answers every prompt with answer (the
// content of the reply), saying that it is a stand-in, and counts the
// requests.
func standin(t *testing.T, answer string) (string, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
			"content": "(a stand-in for the user's world model)\n" + answer}}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &n
}

func endpointEnv(t *testing.T, answer string, maxSteps int, grade dream.Grader) (*dream.Env, *atomic.Int64) {
	url, n := standin(t, answer)
	m, err := dream.NewEndpoint(dream.Chat{BaseURL: url, Model: "standin", Retries: 2}, dream.FormatDelta, dream.ViewHTML)
	if err != nil {
		t.Fatal(err)
	}
	e, err := dream.New(dream.Config{Model: m, MaxSteps: maxSteps})
	if err != nil {
		t.Fatal(err)
	}
	e.SetGrader(grade, "")
	return e, n
}

// A dream step: the model's delta applied, the action echoed in
// last_action whatever the model said, the goal kept; the dream's length
// truncates it; a refused action does not reach the model; a stop is
// graded by the task's grader on the dreamed URL and the answer.
func TestDreamSteps(t *testing.T) {
	ctx := context.Background()
	e, asked := endpointEnv(t, `{"reasoning": "the page goes on", "delta": {"set": {"url": "http://shop/cart", "title": "Cart"}}}`, 2,
		func(_ context.Context, obs trajectory.Observation, answer string) (float64, error) {
			if strings.HasSuffix(obs.URL, "/cart") && answer == "2" {
				return 1, nil
			}
			return 0, nil
		})
	start := page("http://shop/", "lamp")
	start.LastAction = `goto("http://shop/")`
	e.Reset(start)

	st, err := e.Step(ctx, dream.Action{Text: `click [pa]`})
	if err != nil {
		t.Fatal(err)
	}
	if st.Obs.URL != "http://shop/cart" || st.Obs.Title != "Cart" || st.Obs.LastAction != `click("pa")` || st.Obs.Goal != start.Goal ||
		st.Obs.HTML != start.HTML || !st.Info.Dreamed || st.Info.ModelReasoning != "the page goes on" || st.Terminated || st.Truncated {
		t.Errorf("a dreamed step: %+v", st)
	}
	st, err = e.Step(ctx, dream.Action{Text: `click(`})
	if err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 || st.Obs.LastActionError == "" || st.ActionErrorCode != "bad_action" {
		t.Errorf("a refused action: the model was asked %d times; %+v", asked.Load(), st)
	}
	if !st.Truncated || st.Info.DreamEnd != dream.EndMaxSteps || e.Over() != "truncated" {
		t.Errorf("the dream's second step of two did not truncate it: %+v", st.Info)
	}
	if _, err := e.Step(ctx, dream.Action{Text: "noop()"}); err == nil {
		t.Error("a step after the dream ended")
	}

	e.Reset(start)
	if _, err := e.Step(ctx, dream.Action{Text: `click("pa")`}); err != nil {
		t.Fatal(err)
	}
	st, err = e.Step(ctx, dream.Action{Text: `stop [2]`})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Terminated || st.Reward != 1 || st.Info.RewardSource != dream.RewardTask || (st.Stop == nil || st.Stop.Answer != "2") || asked.Load() != 2 {
		t.Errorf("a stop on the right page with the right answer: %+v (model asked %d times)", st, asked.Load())
	}
	// Several actions in one step (BrowserGym's multi-action mode) are
	// refused by name, the model not asked: a dream predicts one action.
	e.Reset(start)
	before := asked.Load()
	st, err = e.Step(ctx, dream.Action{Text: "click(\"pa\")\nclick(\"pb\")"})
	if err != nil {
		t.Fatal(err)
	}
	if asked.Load() != before || st.ActionErrorCode != "bad_action" || !strings.Contains(st.Obs.LastActionError, "a dream takes one action a step") ||
		!strings.Contains(st.Obs.LastActionError, "has 2") {
		t.Errorf("a multi-action step: the model was asked %d times; %+v", asked.Load()-before, st)
	}
	// The next action the model is asked about starts without the refused
	// step's error: the model's delta does not set one, so there is none.
	st, err = e.Step(ctx, dream.Action{Text: `click("pa")`})
	if err != nil {
		t.Fatal(err)
	}
	if st.Obs.LastActionError != "" || st.ActionError != "" {
		t.Errorf("a dreamed step after a refused one kept its error: %q", st.Obs.LastActionError)
	}
	if got := dream.CanonicalAction("click('pa')\nfill('q', 'x')"); got != "click(\"pa\")\nfill(\"q\", \"x\")" {
		t.Errorf("CanonicalAction of two lines = %q", got)
	}
}

// The model's terminal signal ends the dream; a model that answers
// nothing usable fails the step as its own fault, and the dream goes on.
func TestDreamModelEndsAndFails(t *testing.T) {
	ctx := context.Background()
	e, _ := endpointEnv(t, `{"delta": {}, "terminal": true}`, 5, nil)
	e.Reset(page("http://shop/", "lamp"))
	st, err := e.Step(ctx, dream.Action{Text: `click("pa")`})
	if err != nil || !st.Terminated || st.Info.DreamEnd != dream.EndModel || st.Info.RewardSource != dream.RewardNone {
		t.Errorf("a terminal answer: %+v, %v", st, err)
	}

	e, asked := endpointEnv(t, `no JSON here`, 5, nil)
	start := page("http://shop/", "lamp")
	e.Reset(start)
	_, err = e.Step(ctx, dream.Action{Text: `click("pa")`})
	if !dream.IsModelError(err) || !strings.Contains(err.Error(), "after 3 attempts") || asked.Load() != 3 {
		t.Errorf("a model that never answers JSON: %v (asked %d times)", err, asked.Load())
	}
	var me *dream.ModelError
	if !errors.As(err, &me) || me.Model != "standin" {
		t.Errorf("the error does not name the model: %v", err)
	}
	if e.Over() != "" || e.Obs().HTML != start.HTML {
		t.Errorf("the dream did not go on after the model's failure: over %q", e.Over())
	}
}
