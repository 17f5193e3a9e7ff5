package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/tasks"
)

// An answer listing every candidate is not paid on a typed task, and the
// step's info.grader says why; a WebArena config keeps WebArena's
// must_include (paid, and info.grader says it is hackable by listing)
// unless make asks for strict_answers.
func TestStuffedAnswersThroughTheServer(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for n := 0; n <= 1000; n++ {
		fmt.Fprintf(&b, "%d $%d.99 ", n, n)
	}
	stuffed := b.String() + "the price is $50.99 or $51.99"
	cl := shopServer(t, server.Config{}, func(f *catalog.Catalog, sets map[string]*catalog.TaskSet) {
		set, err := tasks.ParseTasks([]byte(`[
		  {"task_id": 1, "sites": ["shopping"], "intent": "What does the tee cost?", "start_url": "__SHOPPING__/",
		   "eval": {"eval_types": ["string_match"], "reference_answers": {"must_include": ["$50.99"]}}},
		  {"task_id": 2, "sites": ["shopping"], "intent": "What does the tee cost?", "start_url": "__SHOPPING__/",
		   "eval": {"eval_types": ["string_match"], "answer_type": "currency", "reference_answers": {"exact_match": "$50.99"}}}]`), "answers.json")
		if err != nil {
			t.Fatal(err)
		}
		st := *sets["shopping"]
		st.Set = set
		f.SetTasks("shopping", &st)
	})
	for _, c := range []struct {
		task   string
		strict bool
		answer string
		reward float64
		grader map[string]any
	}{
		{"shopping.2", false, stuffed, 0, map[string]any{"semantics": "typed.currency", "hackable_by_listing": false,
			"note": "the answer holds 2002 different price values (0.00, 0.99, 1.00 and 1999 more); the task asks for one: an answer listing candidates earns 0"}},
		{"shopping.2", false, "$50.99", 1, map[string]any{"semantics": "typed.currency", "hackable_by_listing": false}},
		{"shopping.1", false, stuffed, 1, map[string]any{"semantics": "webarena.must_include", "hackable_by_listing": true}},
		{"shopping.1", true, stuffed, 0, map[string]any{"semantics": "typed.currency", "hackable_by_listing": false,
			"note": "the answer holds 2002 different price values (0.00, 0.99, 1.00 and 1999 more); the task asks for one: an answer listing candidates earns 0"}},
		{"shopping.1", true, "It is $50.99.", 1, map[string]any{"semantics": "typed.currency", "hackable_by_listing": false}},
	} {
		mk := map[string]any{"site": "shopping", "task": c.task}
		if c.strict {
			mk["strict_answers"] = true
		}
		env := cl.call("make", "", mk)["env"].(string)
		res := cl.call("step", env, map[string]any{"action": fmt.Sprintf("stop(%q)", c.answer)})
		info := res["info"].(map[string]any)
		got, _ := info["grader"].(map[string]any)
		if res["reward"] != c.reward || res["terminated"] != true || fmt.Sprint(got) != fmt.Sprint(c.grader) {
			t.Errorf("%s (strict %v), answer %.30q: reward %v, terminated %v, info.grader %v; want %g and %v", c.task, c.strict, c.answer, res["reward"], res["terminated"], info["grader"], c.reward, c.grader)
		}
		cl.call("close", env, nil)
	}
}
