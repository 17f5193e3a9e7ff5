package tasks_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// stuffed is the answer a policy that learned to list candidates gives:
// every number from 0 to 1000, every $N.99 price, and two prices.
var stuffed = func() string {
	var b strings.Builder
	for n := 0; n <= 1000; n++ {
		fmt.Fprintf(&b, "%d $%d.99 ", n, n)
	}
	return b.String() + "the price is $50.99 or $51.99"
}()

// typedTask is a one-task file whose answer is of type typ, with eval's
// reference_answers refs (JSON).
func typedTask(t *testing.T, typ, refs string) *tasks.Task {
	t.Helper()
	return task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["string_match"], "answer_type": "`+typ+`", "reference_answers": `+refs+`}}]`)
}

func TestTypedAnswersCompareValues(t *testing.T) {
	ctx := context.Background()
	g := &tasks.Grader{}
	for _, c := range []struct {
		typ, refs, answer string
		want              float64
		note              string // part of the note, for a 0
	}{
		{"number", `{"exact_match": "42"}`, "42", 1, ""},
		{"number", `{"exact_match": "42"}`, "There are 42 units in stock.", 1, ""},
		{"number", `{"exact_match": "1234"}`, "1,234", 1, ""},
		{"number", `{"exact_match": "42"}`, "SKU-0042 has 42", 1, ""},
		{"number", `{"exact_match": "42"}`, "42 or 43", 0, "2 different number values (42, 43)"},
		{"number", `{"exact_match": "42"}`, "3,42", 0, "2 different number values"},
		{"number", `{"exact_match": "42"}`, "forty-two", 0, "holds no number"},
		{"number", `{"exact_match": "42"}`, "41", 0, "is not the reference"},
		{"currency", `{"exact_match": "$50.99"}`, "$50.99", 1, ""},
		{"currency", `{"exact_match": "$50.99"}`, "The price is 50.99.", 1, ""},
		{"currency", `{"exact_match": "$1,299.00"}`, "$1299", 1, ""},
		{"currency", `{"exact_match": "$50.99"}`, "the price is $50.99 or $51.99", 0, "2 different price values (50.99, 51.99)"},
		{"currency", `{"exact_match": "$50.99 |OR| $51.00"}`, "$51", 1, ""},
		{"date", `{"exact_match": "2024-03-05"}`, "March 5th, 2024", 1, ""},
		{"date", `{"exact_match": "March 5, 2024"}`, "3/5/2024", 1, ""},
		{"date", `{"exact_match": "2024-03-05"}`, "2024-03-05 or 2024-03-06", 0, "2 different date values"},
		{"string", `{"exact_match": "Jane Doe"}`, " 'jane  doe'. ", 1, ""},
		{"string", `{"exact_match": "Jane Doe"}`, "Jane Doe, John Roe", 0, "is not the reference"},
		{"string_list", `{"must_include": ["Red", "Blue"]}`, "blue, red", 1, ""},
		{"string_list", `{"must_include": ["Red", "Blue"]}`, "red\nblue\nred", 1, ""},
		{"string_list", `{"must_include": ["Red", "Blue"]}`, "red, blue and green", 0, "1 item(s) that are not asked for (blue and green)"},
		{"string_list", `{"must_include": ["Red", "Blue"]}`, "red, blue, green", 0, "not asked for (green)"},
		{"string_list", `{"must_include": ["Red", "Blue"]}`, "red", 0, "misses 1 of the 2"},
	} {
		res, err := g.Grade(ctx, typedTask(t, c.typ, c.refs), nil, c.answer, nil)
		if err != nil {
			t.Fatalf("%s %q: %v", c.typ, c.answer, err)
		}
		a := res.Answer
		if res.Reward != c.want || a == nil || a.Semantics != "typed."+c.typ || a.HackableByListing || !strings.Contains(a.Note, c.note) || (c.want == 1) != (a.Note == "") {
			t.Errorf("%s %s, answer %q: reward %g %+v; want %g with a note holding %q", c.typ, c.refs, c.answer, res.Reward, a, c.want, c.note)
		}
	}
}

func TestTypedReferencesAreChecked(t *testing.T) {
	for _, c := range []struct{ typ, refs, want string }{
		{"price", `{"exact_match": "$1"}`, `eval.answer_type: "price"; want one of number, currency, date, string, string_list`},
		{"number", `{"exact_match": "about 4 or 5"}`, "holds 2 number value(s)"},
		{"number", `{"must_include": ["4", "5"]}`, "is one value; give it as exact_match"},
		{"currency", `{"fuzzy_match": ["$4"]}`, "compared as a value, not by a judge"},
		{"string_list", `{"must_include": ["a, b"]}`, "holds 2 item value(s)"},
	} {
		_, err := tasks.ParseTasks([]byte(`[{"task_id": 7, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["string_match"], "answer_type": "`+c.typ+`", "reference_answers": `+c.refs+`}}]`), "t.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "task 7") {
			t.Errorf("%s %s: %v; want an error naming task 7 and saying %q", c.typ, c.refs, err, c.want)
		}
	}
	_, err := tasks.ParseTasks([]byte(`[{"task_id": 7, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["url_match"], "reference_url": "/a", "answer_type": "number"}}]`), "t.json")
	if err == nil || !strings.Contains(err.Error(), "does not list string_match") {
		t.Errorf("answer_type without string_match: %v", err)
	}
}

func TestRequireAnswerType(t *testing.T) {
	untyped := task(t, `[{"task_id": 3, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["string_match"], "reference_answers": {"must_include": ["3"]}}}]`)
	err := untyped.RequireAnswerType()
	if err == nil || !strings.HasPrefix(err.Error(), "eval.answer_type: missing") || !strings.Contains(err.Error(), `add "answer_type"`) {
		t.Errorf("untyped answer task: %v", err)
	}
	for _, ok := range []*tasks.Task{
		typedTask(t, "number", `{"exact_match": "3"}`),
		task(t, `[{"task_id": 3, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["url_match"], "reference_url": "/a"}}]`),
	} {
		if err := ok.RequireAnswerType(); err != nil {
			t.Errorf("task %+v: %v", ok.Eval, err)
		}
	}
}

// answerOf is the answer of a sequence's last action (a stop).
func answerOf(t *testing.T, seq []string) string {
	t.Helper()
	a, err := envcore.ParseAction(seq[len(seq)-1])
	if err != nil {
		t.Fatal(err)
	}
	return a.Answer
}

// TestBundledAnswersCannotBeStuffed: every answer task of the bundled shop
// and cms is typed; its oracle's answer earns 1, its wrong answer and an
// answer stuffed with every number and price earn 0, with a note.
func TestBundledAnswersCannotBeStuffed(t *testing.T) {
	ctx := context.Background()
	g := &tasks.Grader{}
	n := 0
	for _, role := range []string{"shopping", "cms"} {
		raw, err := shop.TaskFile(role)
		if err != nil {
			t.Fatal(err)
		}
		set, err := tasks.ParseTasks(raw, role)
		if err != nil {
			t.Fatal(err)
		}
		for i := range set.Tasks {
			tk := &set.Tasks[i]
			if !slices.Contains(tk.Eval.Types, "string_match") {
				continue
			}
			n++
			if err := tk.RequireAnswerType(); err != nil {
				t.Errorf("%s: %v", role, err)
			}
			for _, c := range []struct {
				name, answer string
				want         float64
			}{{"oracle", answerOf(t, tk.Oracle), 1}, {"wrong", answerOf(t, tk.Wrong), 0}, {"stuffed", stuffed, 0}} {
				res, err := g.Grade(ctx, tk, nil, c.answer, nil)
				if err != nil {
					t.Fatalf("%s.%d %s: %v", role, tk.ID, c.name, err)
				}
				if res.Reward != c.want || res.Answer == nil || res.Answer.HackableByListing || (c.want == 0 && res.Answer.Note == "") {
					t.Errorf("%s.%d (%s) %s answer: reward %g, %+v; want %g (a note on a 0)", role, tk.ID, tk.Eval.AnswerType, c.name, res.Reward, res.Answer, c.want)
				}
			}
		}
	}
	if n != 35 {
		t.Errorf("%d answer tasks in the bundled sets; the test was written for 35", n)
	}
}

// TestWebArenaAnswersKeepTheirSemantics: a WebArena config's must_include
// pays a stuffed answer (so published scores stay comparable) and says it
// is hackable; StrictAnswers grades it typed.
func TestWebArenaAnswersKeepTheirSemantics(t *testing.T) {
	ctx := context.Background()
	price := task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["string_match"], "reference_answers": {"must_include": ["$50.99"]}}}]`)
	res, err := (&tasks.Grader{}).Grade(ctx, price, nil, stuffed, nil)
	if err != nil || res.Reward != 1 || *res.Answer != (tasks.AnswerGrade{Semantics: "webarena.must_include", HackableByListing: true}) {
		t.Fatalf("WebArena semantics: %v %g %+v", err, res.Reward, res.Answer)
	}
	exact := task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["string_match"], "reference_answers": {"exact_match": "3"}}}]`)
	if res, _ := (&tasks.Grader{}).Grade(ctx, exact, nil, "3", nil); res.Reward != 1 || *res.Answer != (tasks.AnswerGrade{Semantics: "webarena.exact_match"}) {
		t.Errorf("exact_match: %g %+v", res.Reward, res.Answer)
	}
	strict := &tasks.Grader{StrictAnswers: true}
	for _, c := range []struct {
		refs, answer string
		want         float64
		semantics    string
	}{
		{`["$50.99"]`, stuffed, 0, "typed.currency"},
		{`["$50.99"]`, "It costs $50.99.", 1, "typed.currency"},
		{`["7"]`, "7 reviews or 8", 0, "typed.number"},
		{`["7"]`, "7", 1, "typed.number"},
		{`["Jane Doe"]`, "Jane Doe", 1, "typed.string"},
		{`["Jane Doe"]`, "Jane Doe, John Roe", 0, "typed.string"},
		{`["Red", "Blue"]`, "Red, Blue", 1, "typed.string_list"},
		{`["Red", "Blue"]`, stuffed + ", Red, Blue", 0, "typed.string_list"},
	} {
		tk := task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["string_match"], "reference_answers": {"must_include": `+c.refs+`}}}]`)
		res, err := strict.Grade(ctx, tk, nil, c.answer, nil)
		if err != nil || res.Reward != c.want || res.Answer.Semantics != c.semantics || res.Answer.HackableByListing {
			t.Errorf("strict %s, answer %.40q: %v %g %+v; want %g %s", c.refs, c.answer, err, res.Reward, res.Answer, c.want, c.semantics)
		}
	}
}
