package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks/taskstest"
)

// bundledOracle is the oracle of a bundled task, and it without its stop.
func bundledOracle(t *testing.T, site string, id int) (all, steps []string) {
	t.Helper()
	for _, bt := range bundledTasks(t) {
		if bt.site == site && bt.task.ID == id {
			o := bt.task.Oracle
			return o, o[:len(o)-1]
		}
	}
	t.Fatalf("no bundled task %s.%d", site, id)
	return nil, nil
}

// sideEffectRun is an episode of a bundled task played with another
// task's steps first (the collateral change) or alone (clean).
type sideEffectRun struct {
	site, task string
	seq        []string
	// other is the row the collateral change touched: a column and value
	// it must hold in info.side_effects; "" for a clean run.
	table, column, value string
}

// A task's episode that also did another task's change is paid in full
// under side_effects report (the default) and names that change in
// info.side_effects: the other order canceled before the one asked for
// (cms.35 after cms.36's steps), the other product's cart line before the
// one asked for (shopping.40 after shopping.41's); under fail the same
// episodes score 0 (score side_effects 0, a note saying why). The same
// tasks' oracles alone have none under either mode and keep their reward.
// An unknown mode is refused.
func TestSideEffectsAreReportedOrFailTheEpisode(t *testing.T) {
	t.Parallel()
	cl := shopServer(t, server.Config{MaxCreating: 2, MaxEnvs: 4}, nil)
	cancel35, _ := bundledOracle(t, "cms", 35)
	_, cancel36 := bundledOracle(t, "cms", 36)
	cart40, _ := bundledOracle(t, "shopping", 40)
	_, cart41 := bundledOracle(t, "shopping", 41)
	runs := []sideEffectRun{
		{"cms", "cms.35", append(append([]string{}, cancel36...), cancel35...), "orders", "number", "000100003"},
		{"shopping", "shopping.40", append(append([]string{}, cart41...), cart40...), "cart_items", "colour", "White"},
		{"cms", "cms.35", cancel35, "", "", ""},
		{"shopping", "shopping.40", cart40, "", "", ""},
	}
	for _, mode := range []string{"", "fail"} {
		envs := map[string]string{}
		for _, run := range runs {
			name := fmt.Sprintf("%s under %q, collateral %v", run.task, mode, run.table != "")
			env, ok := envs[run.site]
			if !ok {
				args := map[string]any{"site": run.site, "task": run.task}
				if mode != "" {
					args["side_effects"] = mode
				}
				env = okResult(t, wait(t, cl.send("make", "", args)))["env"].(string)
				envs[run.site] = env
			} else {
				okResult(t, wait(t, cl.send("reset", env, map[string]any{"options": map[string]any{"task": run.task}})))
			}
			last, err := play(cl, env, run.seq)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			info := last["info"].(map[string]any)
			effects, _ := info["side_effects"].([]any)
			want := 1.0
			if mode == "fail" && run.table != "" {
				want = 0
			}
			if last["terminated"] != true || last["reward"] != want {
				t.Errorf("%s: reward %v, terminated %v; want %v; info %v", name, last["reward"], last["terminated"], want, info)
			}
			if run.table == "" {
				if len(effects) > 0 || info["side_effects_note"] != nil {
					t.Errorf("%s: the oracle alone has side effects %v (%v)", name, effects, info["side_effects_note"])
				}
				continue
			}
			// The other order's cancel also put its products' stock back.
			found, others := false, 0
			for _, e := range effects {
				e := e.(map[string]any)
				row, _ := e["row"].(map[string]any)
				switch {
				case e["table"] == run.table && row[run.column] == run.value:
					found = true
				case e["table"] != "products":
					others++
				}
			}
			if !found || others > 0 {
				t.Errorf("%s: side effects %v; want the change of %s with %s %s (and a cancel's restock) only", name, effects, run.table, run.column, run.value)
			}
			note, _ := info["side_effects_note"].(string)
			scores, _ := info["scores"].(map[string]any)
			if mode == "fail" && (!strings.Contains(note, "fail: the episode scores 0") || scores["side_effects"] != 0.0 || info["grade"] != 0.0) {
				t.Errorf("%s: note %q, scores %v, grade %v; want the fail note, score side_effects 0 and grade 0", name, note, scores, info["grade"])
			}
			if mode == "" && !strings.Contains(note, "report: the reward stands") {
				t.Errorf("%s: note %q; want it to say the reward stands", name, note)
			}
		}
		for _, env := range envs {
			wait(t, cl.send("close", env, nil))
		}
	}
	e := errOf(wait(t, cl.send("make", "", map[string]any{"site": "shopping", "task": "shopping.40", "side_effects": "warn"})))
	if e["code"] != "bad_args" || !strings.Contains(e["message"].(string), "report, fail, off") {
		t.Errorf("make with side_effects warn: %v", e)
	}
}

// A Verified-graded navigation task (graded by WebArena-Verified's
// evaluators, a program) takes its native twin's side-effect scope:
// nothing but the shop's bookkeeping may change, so another product's
// cart line added on the way to the page asked for is listed (the reward
// stands under report), and the oracle alone has none and no "not looked
// for" note.
func TestVerifiedNavigationTasksLookForSideEffects(t *testing.T) {
	t.Parallel()
	cl := shopServer(t, server.Config{MaxCreating: 1, MaxEnvs: 2}, withVerified(t, taskstest.VerifiedGrader(t)))
	nav, _ := bundledOracle(t, "shopping", 20)
	_, cart41 := bundledOracle(t, "shopping", 41)
	made := okResult(t, wait(t, cl.send("make", "", map[string]any{"site": "shopping", "task": "verified.shopping.20"})))
	env, start := made["env"].(string), obsOf(made)["url"].(string)
	answer := withAnswer(nav, verifiedAnswer("NAVIGATE"))
	harm := append(append(append([]string{}, cart41...), fmt.Sprintf("goto(%q)", start)), answer...)
	for i, seq := range [][]string{harm, answer} {
		if i > 0 {
			okResult(t, wait(t, cl.send("reset", env, nil)))
		}
		last, err := play(cl, env, seq)
		if err != nil {
			t.Fatalf("sequence %d: %v", i, err)
		}
		info := last["info"].(map[string]any)
		if last["reward"] != 1.0 || last["terminated"] != true {
			t.Errorf("sequence %d: reward %v, terminated %v; want 1 (report: the reward stands); info %v", i, last["reward"], last["terminated"], info)
		}
		effects, _ := info["side_effects"].([]any)
		note, _ := info["side_effects_note"].(string)
		if i > 0 {
			if len(effects) > 0 || note != "" {
				t.Errorf("the oracle alone: side effects %v, note %q; want none", effects, note)
			}
			continue
		}
		found := false
		for _, e := range effects {
			e := e.(map[string]any)
			row, _ := e["row"].(map[string]any)
			found = found || e["table"] == "cart_items" && row["colour"] == "White"
		}
		if !found || !strings.Contains(note, "report: the reward stands") {
			t.Errorf("another cart line on the way: side effects %v, note %q; want the White cart line listed", effects, note)
		}
	}
}
