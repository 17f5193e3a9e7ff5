package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/trajectory"
)

// Dreams on the bundled shop's recorded oracle episodes (the first two
// tasks of each kind, storefront and admin):
//
//   - with the transition-memory model built from them, a dream of each
//     oracle's actions gives the recorded observations exactly, and the
//     recorded reward where the task's grader runs on an observation
//     (url_match, string_match); elsewhere the dream is not graded (reward
//     null, not 0) and says why;
//   - an action the memory never saw ends the dream;
//   - invalid actions get the real environment's errors;
//   - through an endpoint (a stand-in for the user's world model that
//     answers the recorded deltas), in both formats, a dream gives the
//     recorded observations in its view; malformed answers are asked
//     again, and a model that keeps failing or answers late fails the step
//     as the model's fault while the dream goes on;
//   - the judge grades what the task's grader cannot.
func TestDreams(t *testing.T) {
	t.Parallel()
	trajDir, runs, files := recordedShopOracles(t)
	// A server of its own that dreams from the recording (TrajectoryDir)
	// and serves the shop for the real environments below.
	cl := shopServer(t, server.Config{TrajectoryDir: trajDir, MaxCreating: 4, MaxEnvs: 16}, nil)
	episodes := map[string]*trajectory.Episode{} // by task
	paths := map[string]string{}
	for _, f := range files {
		ep, err := trajectory.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		episodes[ep.Head.TaskID] = ep
		paths[ep.Head.TaskID], _ = filepath.Rel(trajDir, f)
	}
	gradable := map[string]bool{}
	for _, bt := range bundledTasks(t) {
		id := fmt.Sprintf("%s.%d", bt.site, bt.task.ID)
		ok := true
		for _, typ := range bt.task.Eval.Types {
			ok = ok && (typ == "url_match" || typ == "string_match")
		}
		if ra := bt.task.Eval.ReferenceAnswers; ra != nil && len(ra.FuzzyMatch) > 0 {
			ok = false // needs a judge
		}
		gradable[id] = ok
	}

	memory := map[string]any{"memory": []any{"."}}
	graded, notGraded := 0, 0
	for _, run := range runs {
		ep := episodes[run.task]
		made := cl.call("make", "", map[string]any{"site": "dream", "world_model": memory, "task": run.task, "max_dream_steps": len(run.seq) + 1})
		env := made["env"].(string)
		if info := made["info"].(map[string]any); info["dreamed"] != true || info["task_id"] != run.task {
			t.Errorf("%s: make's info %v", run.task, info)
		}
		sameObs(t, run.task+" start", obsOf(made), *ep.Reset.Obs)
		var last map[string]any
		for i, a := range run.seq {
			last = cl.call("step", env, map[string]any{"action": a})
			sameObs(t, fmt.Sprintf("%s step %d %s", run.task, i+1, a), obsOf(last), *ep.Steps[i].Obs)
			if last["info"].(map[string]any)["dreamed"] != true {
				t.Errorf("%s step %d: info.dreamed missing: %v", run.task, i+1, last["info"])
			}
		}
		info := last["info"].(map[string]any)
		if last["terminated"] != true || info["dream_end"] != dream.EndAgent {
			t.Errorf("%s: the oracle's stop did not end the dream: %v", run.task, last)
		}
		want := *ep.Steps[len(ep.Steps)-1].Reward
		switch {
		case gradable[run.task]:
			graded++
			if last["reward"] != want || info["reward_source"] != dream.RewardTask {
				t.Errorf("%s: dreamed reward %v (%v), the real episode's %v", run.task, last["reward"], info["reward_source"], want)
			}
		case last["reward"] != want || info["reward_source"] != dream.RewardRecorded:
			// The dream followed the recorded episode step for step: it
			// carries that episode's real reward.
			t.Errorf("%s: a dream that follows the recorded episode of a task its grader cannot grade: reward %v, info %v, want %v recorded", run.task, last["reward"], info, want)
		default:
			notGraded++
			// Off the recorded path (another answer at the start): not
			// graded, the reward unknown (null), never a 0 the policy did
			// not earn.
			d := cl.call("make", "", map[string]any{"site": "dream", "world_model": memory, "task": run.task})["env"].(string)
			res := cl.call("step", d, map[string]any{"action": `stop("not what any recording answered")`})
			if info := res["info"].(map[string]any); res["reward"] != nil || info["reward_source"] != dream.RewardNotGraded ||
				!strings.HasPrefix(fmt.Sprint(info["reward_note"]), "not graded: ") || info["eval_error"] != info["reward_note"] {
				t.Errorf("%s: a dream off the recorded paths of a task its grader cannot grade: reward %v, info %v", run.task, res["reward"], info)
			}
			cl.call("close", d, nil)
		}
		cl.fail("step", env, map[string]any{"action": "noop()"}, server.CodeEpisodeOver)
		cl.call("close", env, nil)
	}
	if notGraded == 0 {
		t.Fatal("no oracle's task had a grader that cannot run on a dream")
	}
	if graded == 0 {
		t.Fatal("no oracle's task was graded by its own grader on a dream")
	}
	t.Logf("%d oracles dreamed, %d graded by their task's grader", len(runs), graded)

	// An action the memory never saw ends the dream, on the page it was on.
	run := runs[0]
	made := cl.call("make", "", map[string]any{"site": "dream", "world_model": memory, "start": map[string]any{"episode": paths[run.task], "step": 0}})
	env := made["env"].(string)
	res := cl.call("step", env, map[string]any{"action": `click("no-such-element")`})
	if info := res["info"].(map[string]any); res["terminated"] != false || res["truncated"] != true || info["dream_end"] != dream.EndUnseen ||
		info["end_reason"] != "unseen" || res["reward"] != 0.0 {
		t.Errorf("an unseen action: %v", res)
	}
	sameObs(t, "after an unseen action", obsOf(res), *episodes[run.task].Reset.Obs)
	// reset starts again; the episode's first step is still known.
	cl.call("reset", env, nil)
	res = cl.call("step", env, map[string]any{"action": run.seq[0]})
	sameObs(t, "after a reset", obsOf(res), *episodes[run.task].Steps[0].Obs)
	cl.call("close", env, nil)

	// Invalid actions: the real environment's errors, the model not asked.
	real := cl.call("make", "", map[string]any{"site": run.site, "task": run.task, "observe": map[string]any{"axtree": true}})["env"].(string)
	dreamed := cl.call("make", "", map[string]any{"site": "dream", "world_model": memory, "task": run.task, "max_dream_steps": 20})["env"].(string)
	for _, bad := range []any{`click(`, `frobnicate("x")`, `fill("5")`, "", map[string]any{"type": "click"}, `goto("` + strings.Repeat("x", 10000) + `")`} {
		r := cl.call("step", real, map[string]any{"action": bad})
		d := cl.call("step", dreamed, map[string]any{"action": bad})
		ro, do := obsOf(r), obsOf(d)
		ri, di := r["info"].(map[string]any), d["info"].(map[string]any)
		if ro["last_action_error"] == nil || ro["last_action_error"] != do["last_action_error"] || ro["last_action"] != do["last_action"] ||
			di["action_error_code"] != "bad_action" || ri["action_error_code"] != di["action_error_code"] {
			t.Errorf("action %.60v: real %q %q (%v), dreamed %q %q (%v)", bad, ro["last_action"], ro["last_action_error"], ri["action_error_code"],
				do["last_action"], do["last_action_error"], di["action_error_code"])
		}
	}
	// A multi-action step is refused by name: a world model predicts one
	// action (the server read the string once, and hands over every action).
	multi := cl.call("step", dreamed, map[string]any{"action": "noop()\nnoop()"})
	if o, i := obsOf(multi), multi["info"].(map[string]any); !strings.Contains(fmt.Sprint(o["last_action_error"]), "a dream takes one action a step") ||
		i["action_error_code"] != "bad_action" {
		t.Errorf("a multi-action step in a dream: %q (%v)", o["last_action_error"], i["action_error_code"])
	}
	// A dream starts from a live environment's current observation.
	live := obsOf(cl.call("observe", real, map[string]any{"observe": map[string]any{"axtree": true}}))
	fromLive := obsOf(cl.call("make", "", map[string]any{"site": "dream", "world_model": memory, "start": map[string]any{"env": real}}))
	for _, k := range []string{"url", "html", "axtree", "goal", "clickable"} {
		if !reflect.DeepEqual(fromLive[k], live[k]) {
			t.Errorf("a dream started from a live environment: its %s is not the environment's", k)
		}
	}
	cl.call("close", real, nil)
	cl.call("close", dreamed, nil)

	// Arguments that do not fit are refused.
	for _, args := range []map[string]any{
		{"site": "dream", "world_model": memory, "task": run.task, "idle_ms": 100},
		{"site": run.site, "task": run.task, "world_model": memory},
		{"site": "dream", "task": run.task},
		{"site": "dream", "world_model": map[string]any{"memory": []any{"../../etc"}}, "task": run.task},
		{"site": "dream", "world_model": map[string]any{"memory": []any{"."}, "format": "text"}, "task": run.task},
		{"site": "dream", "world_model": memory},
		{"site": "dream", "world_model": memory, "start": map[string]any{"episode": paths[run.task], "step": 99}},
		{"site": "dream", "world_model": map[string]any{"memory": []any{"."}, "modle": "x"}, "task": run.task},
	} {
		cl.fail("make", "", args, server.CodeBadArgs)
	}
	d := cl.call("make", "", map[string]any{"site": "dream", "world_model": memory, "task": run.task})["env"].(string)
	cl.fail("step", d, map[string]any{"action": run.seq[0], "observe": map[string]any{"screenshot": true}}, server.CodeBadArgs)
	cl.fail("step", d, map[string]any{"action": run.seq[0], "observe": map[string]any{"browsergym": true}}, server.CodeBadArgs)
	cl.fail("reset", d, map[string]any{"preview_ms": 100}, server.CodeBadArgs)
	cl.fail("snapshot", d, map[string]any{"name": "a"}, server.CodeNotSupported)
	cl.call("close", d, nil)

	dreamEndpoint(t, cl, episodes[run.task], paths[run.task], gradable[run.task])
}

// dreamEndpoint dreams episode ep through endpoint world models: the
// stand-in answers each prompt with the recorded delta in the
// accessibility-tree view.
func dreamEndpoint(t *testing.T, cl *client, ep *trajectory.Episode, path string, gradable bool) {
	sb := newStandinModel(t, ep)
	start := map[string]any{"episode": path, "step": 0}
	for _, format := range []string{dream.FormatDelta, dream.FormatText} {
		made := cl.call("make", "", map[string]any{"site": "dream", "start": start, "max_dream_steps": len(ep.Steps) + 1,
			"world_model": map[string]any{"endpoint": sb.url + "/v1", "model": "standin", "format": format, "timeout_ms": 20000, "retries": 2}})
		env := made["env"].(string)
		sameObs(t, format+" start", obsOf(made), trajectory.ExportView(*ep.Reset.Obs, true))
		var last map[string]any
		for i, l := range ep.Steps {
			last = cl.call("step", env, map[string]any{"action": l.Action})
			sameObs(t, fmt.Sprintf("%s step %d %s", format, i+1, l.Action), obsOf(last), trajectory.ExportView(*l.Obs, true))
		}
		if info := last["info"].(map[string]any); last["terminated"] != true || gradable && info["reward_source"] != dream.RewardTask {
			t.Errorf("%s: the last step %v", format, last)
		}
		cl.call("close", env, nil)
	}
	if n := sb.malformedAnswered(); n != 3 {
		t.Errorf("the stand-in answered %d kinds of call; the first answer to the delta format's and the text format's first call was malformed, and each was asked again", n)
	}

	// A task's first observation, when no recorded episode has it, is
	// observed by a real environment.
	made := cl.call("make", "", map[string]any{"site": "dream", "task": ep.Head.TaskID, "world_model": map[string]any{"endpoint": sb.url + "/v1"}})
	first, want := obsOf(made), trajectory.ExportView(*ep.Reset.Obs, true)
	if first["url"] != want.URL || first["goal"] != want.Goal || first["axtree"] != want.AXTree || made["info"].(map[string]any)["task_id"] != ep.Head.TaskID {
		t.Errorf("a dream of task %s starts at %v, not at the task's first page %s", ep.Head.TaskID, first["url"], want.URL)
	}
	cl.call("close", made["env"].(string), nil)

	// A model that keeps answering nonsense, or too late: the step fails as
	// the model's fault, and the dream goes on.
	for _, route := range []struct{ path, want string }{{"/garbage/v1", "malformed answer"}, {"/late/v1", "no answer within"}} {
		made := cl.call("make", "", map[string]any{"site": "dream", "start": start,
			"world_model": map[string]any{"endpoint": sb.url + route.path, "timeout_ms": 300, "retries": 1}})
		env := made["env"].(string)
		e := cl.fail("step", env, map[string]any{"action": ep.Steps[0].Action}, server.CodeBackend)
		if msg := fmt.Sprint(e["message"]); !strings.Contains(msg, route.want) || !strings.Contains(msg, "world model") || e["retryable"] != true {
			t.Errorf("%s: error %v", route.path, e)
		}
		sameObs(t, route.path+": the dream after the model's failure", obsOf(cl.call("observe", env, nil)), trajectory.ExportView(*ep.Reset.Obs, true))
		cl.call("close", env, nil)
	}

	// The judge grades a dream the task's grader cannot: one that the
	// dream's length ends.
	made = cl.call("make", "", map[string]any{"site": "dream", "start": start, "max_dream_steps": 1,
		"world_model": map[string]any{"endpoint": sb.url + "/v1"}, "judge": map[string]any{"endpoint": sb.url + "/v1"}})
	res := cl.call("step", made["env"].(string), map[string]any{"action": ep.Steps[0].Action})
	if info := res["info"].(map[string]any); res["truncated"] != true || info["dream_end"] != dream.EndMaxSteps || info["reward_source"] != dream.RewardJudge || res["reward"] != 1.0 {
		t.Errorf("a dream the judge grades: %v", res)
	}
}

// sameObs checks a dreamed observation (as the wire gives it) against
// a recorded one.
func sameObs(t *testing.T, what string, got map[string]any, want trajectory.Observation) {
	t.Helper()
	g, w := normal(t, got), normal(t, want)
	if !reflect.DeepEqual(g, w) {
		gm, wm := g.(map[string]any), w.(map[string]any)
		var diff []string
		for k := range wm {
			if !reflect.DeepEqual(gm[k], wm[k]) {
				diff = append(diff, k)
			}
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				diff = append(diff, k)
			}
		}
		slices.Sort(diff)
		t.Errorf("%s: the dreamed observation differs from the real one in %v", what, diff)
	}
}

// normal is v as JSON reads it back.
func normal(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// standinModel stands in for the user's world model (and judge): an
// OpenAI-compatible endpoint on 127.0.0.1 that answers from one recorded
// episode's deltas, saying in every answer that it is a stand-in. Under
// /v1 its first answer to each format is malformed; /garbage/v1 answers
// nothing usable; /late/v1 answers only after the request gave up.
type standinModel struct {
	url       string
	mu        sync.Mutex
	malformed map[string]bool // the kinds of call already given a malformed answer
	deltas    map[string]trajectory.Delta
}

const standinNote = "a stand-in for the user's world model: it answers the recorded delta"

func newStandinModel(t *testing.T, ep *trajectory.Episode) *standinModel {
	sb := &standinModel{malformed: map[string]bool{}, deltas: map[string]trajectory.Delta{}}
	prev := trajectory.ExportView(*ep.Reset.Obs, true)
	for _, l := range ep.Steps {
		next := trajectory.ExportView(*l.Obs, true)
		sb.deltas[dream.CanonicalAction(l.Action)+"\x00"+prev.URL] = trajectory.Diff(prev, next)
		prev = next
	}
	srv := httptest.NewServer(http.HandlerFunc(sb.serve))
	t.Cleanup(srv.Close)
	sb.url = srv.URL
	return sb
}

func (sb *standinModel) malformedAnswered() int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return len(sb.malformed)
}

func (sb *standinModel) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
		http.Error(w, "not a chat request", http.StatusBadRequest)
		return
	}
	system, user := req.Messages[0].Content, req.Messages[1].Content
	answer := func(v map[string]any) {
		v["note"] = standinNote
		b, _ := json.Marshal(v)
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "```json\n" + string(b) + "\n```"}}}})
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/late/"):
		<-r.Context().Done()
		return
	case strings.HasPrefix(r.URL.Path, "/garbage/"):
		answer(map[string]any{"delta": map[string]any{"axtree": map[string]any{"edits": []any{map[string]any{"op": "remove", "id": "no-such-piece"}}}}})
		return
	case strings.Contains(system, "grader"):
		answer(map[string]any{"reasoning": "the stand-in judge says yes", "success": true})
		return
	}
	action, url := line(user, "Action: "), line(user, "URL: ")
	if strings.Contains(system, "structured edits") { // the text format's second call
		action = strings.TrimSpace(strings.SplitN(strings.SplitN(user, "After the action ", 2)[1], ", the page changes so:", 2)[0])
	}
	d, ok := sb.deltas[action+"\x00"+url]
	if !ok {
		http.Error(w, "the stand-in has no recorded delta for "+action+" on "+url, http.StatusNotFound)
		return
	}
	kind := "delta" // the delta format's call
	switch {
	case strings.Contains(system, "structured edits"):
		kind = "apply" // the text format's second call
	case !strings.Contains(user, "DELTA"):
		kind = "describe" // the text format's first call
	}
	sb.mu.Lock()
	first := kind != "apply" && !sb.malformed[kind]
	sb.malformed[kind] = true
	sb.mu.Unlock()
	if first {
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": "I am " + standinNote + ", and I forgot the JSON."}}}})
		return
	}
	dj, _ := json.Marshal(d)
	if kind == "describe" {
		answer(map[string]any{"reasoning": "recorded", "change": "the recorded change " + string(dj)})
		return
	}
	answer(map[string]any{"reasoning": "recorded", "delta": json.RawMessage(dj)})
}

// line is the rest of text's first line that begins with prefix.
func line(text, prefix string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if s, ok := strings.CutPrefix(l, prefix); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}
