package tasks_test

import (
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/tasks"
)

// A Verified task's kind comes from its answer type, and a task the
// package could not grade is refused on load, naming the task and field.
func TestParseVerifiedChecksEachTask(t *testing.T) {
	set, err := tasks.ParseVerified([]byte(`[{"sites": ["shopping_admin"], "task_id": 7, "start_urls": ["__SHOPPING_ADMIN__/sales/order/"], "intent": "Open the orders",
	  "intent_template": "Open the orders", "intent_template_id": 7, "instantiation_dict": {}, "revision": 1, "eval": [{"evaluator": "AgentResponseEvaluator", "expected": {"task_type": "navigate", "status": "SUCCESS", "retrieved_data": null}},
	  {"evaluator": "NetworkEventEvaluator", "expected": {"url": "__SHOPPING_ADMIN__/sales/order/"}}]}]`), "one.json")
	if err != nil {
		t.Fatal(err)
	}
	if set.Tasks[0].Category != "navigation" {
		t.Errorf("category %q", set.Tasks[0].Category)
	}
	if _, err := tasks.ParseVerified([]byte(`[{"sites": ["shopping"], "task_id": 1, "start_urls": ["__SHOPPING__"], "intent": "x", "revision": 1,
	  "intent_template": "x", "intent_template_id": 1, "instantiation_dict": {},
	  "eval": [{"evaluator": "AgentResponseEvaluator", "expected": {"task_type": "browse", "status": "SUCCESS"}}]}]`), "bad.json"); err == nil || !strings.Contains(err.Error(), "task 1: eval[0].expected.task_type") {
		t.Errorf("an unknown task type: %v", err)
	}
}
