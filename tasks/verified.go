package tasks

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// WebArena-Verified (ServiceNow's audit of WebArena's 812 tasks, the
// webarena-verified package) grades each task with its own evaluators:
// AgentResponseEvaluator on a structured answer and, for navigation and
// state-changing tasks, NetworkEventEvaluator on the episode's HAR trace.
// LoadVerified reads its dataset as Tasks whose Eval.Types is ["verified"]
// and whose Eval.Verified holds the task as the package reads it, with
// its placeholders kept (its evaluator maps the trace's URLs back to
// them). Grading is the package's: see VerifiedGrader.

// Verified task types of the structured answer (its "task_type").
var verifiedTypes = []string{"retrieve", "mutate", "navigate"}

// Verified answer statuses.
var verifiedStatuses = []string{"SUCCESS", "ACTION_NOT_ALLOWED_ERROR", "PERMISSION_DENIED_ERROR", "NOT_FOUND_ERROR", "DATA_VALIDATION_ERROR", "UNKNOWN_ERROR"}

// verifiedTask is a task of the Verified dataset, as much as is checked.
type verifiedTask struct {
	ID        int            `json:"task_id"`
	Sites     []string       `json:"sites"`
	StartURLs []string       `json:"start_urls"`
	Intent    string         `json:"intent"`
	Eval      []verifiedEval `json:"eval"`
	Revision  *int           `json:"revision"`
	// The package's model requires these too.
	TemplateID    *int            `json:"intent_template_id"`
	Template      *string         `json:"intent_template"`
	Instantiation json.RawMessage `json:"instantiation_dict"`
}

type verifiedEval struct {
	Evaluator string `json:"evaluator"`
	Expected  *struct {
		TaskType *string `json:"task_type"`
		Status   *string `json:"status"`
		URL      any     `json:"url"`
	} `json:"expected"`
}

// LoadVerified reads a WebArena-Verified dataset file (webarena-verified.json,
// or the Hard subset) and checks every task.
func LoadVerified(path string) (*Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the WebArena-Verified dataset: %w; install it with pip install webarena-verified==1.2.3", err)
	}
	return ParseVerified(raw, path)
}

// ParseVerified reads a Verified dataset's contents; name is in errors.
func ParseVerified(data []byte, name string) (*Set, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%s: want a JSON list of WebArena-Verified tasks: %w", name, err)
	}
	set := &Set{Tasks: make([]Task, len(raws)), ByID: make(map[int]*Task, len(raws))}
	for i, raw := range raws {
		var vt verifiedTask
		if err := json.Unmarshal(raw, &vt); err != nil {
			return nil, fmt.Errorf("%s: task at index %d: %w", name, i, err)
		}
		if err := vt.validate(); err != nil {
			return nil, fmt.Errorf("%s: task %d: %w", name, vt.ID, err)
		}
		if _, dup := set.ByID[vt.ID]; dup {
			return nil, fmt.Errorf("%s: task %d appears twice", name, vt.ID)
		}
		set.Tasks[i] = Task{ID: vt.ID, Sites: vt.Sites, Intent: vt.Intent, StartURL: vt.StartURLs[0],
			Category: vt.category(), Eval: Eval{Types: []string{"verified"}, Verified: raw}}
		if err := set.Tasks[i].Validate(); err != nil {
			return nil, fmt.Errorf("%s: task %d: %w", name, vt.ID, err)
		}
		set.ByID[vt.ID] = &set.Tasks[i]
	}
	return set, nil
}

// validate checks what running and grading a Verified task needs.
func (vt *verifiedTask) validate() error {
	switch {
	case strings.TrimSpace(vt.Intent) == "":
		return fmt.Errorf("intent: empty")
	case len(vt.Sites) == 0:
		return fmt.Errorf("sites: empty")
	case len(vt.StartURLs) == 0:
		return fmt.Errorf("start_urls: empty")
	case len(vt.Eval) == 0:
		return fmt.Errorf("eval: empty")
	case vt.Revision == nil:
		return fmt.Errorf("revision: missing")
	case vt.TemplateID == nil:
		return fmt.Errorf("intent_template_id: missing")
	case vt.Template == nil:
		return fmt.Errorf("intent_template: missing")
	case len(vt.Instantiation) == 0:
		return fmt.Errorf("instantiation_dict: missing (give {} when the intent has no variables)")
	}
	for _, s := range vt.Sites {
		if !knownSite(s) {
			return fmt.Errorf("sites: unknown site %q", s)
		}
	}
	for k, u := range vt.StartURLs {
		if !strings.HasPrefix(u, "__") {
			return fmt.Errorf("start_urls[%d]: %q does not start with a site placeholder", k, u)
		}
		ph, _, _ := strings.Cut(u[2:], "__")
		if _, ok := Placeholders["__"+ph+"__"]; !ok {
			return fmt.Errorf("start_urls[%d]: unknown placeholder in %q", k, u)
		}
	}
	answers := 0
	for k, e := range vt.Eval {
		switch e.Evaluator {
		case "AgentResponseEvaluator":
			answers++
			if e.Expected == nil || e.Expected.TaskType == nil || e.Expected.Status == nil {
				return fmt.Errorf("eval[%d].expected: AgentResponseEvaluator needs task_type and status", k)
			}
			if !slices.Contains(verifiedTypes, strings.ToLower(*e.Expected.TaskType)) {
				return fmt.Errorf("eval[%d].expected.task_type: %q; want retrieve, mutate or navigate", k, *e.Expected.TaskType)
			}
			if !slices.Contains(verifiedStatuses, strings.ToUpper(*e.Expected.Status)) {
				return fmt.Errorf("eval[%d].expected.status: unknown status %q", k, *e.Expected.Status)
			}
		case "NetworkEventEvaluator":
			if e.Expected == nil || e.Expected.URL == nil {
				return fmt.Errorf("eval[%d].expected.url: NetworkEventEvaluator needs the URL of the request to find", k)
			}
		default:
			return fmt.Errorf("eval[%d].evaluator: unknown evaluator %q (AgentResponseEvaluator, NetworkEventEvaluator)", k, e.Evaluator)
		}
	}
	if answers != 1 {
		return fmt.Errorf("eval: %d AgentResponseEvaluator entries; want one", answers)
	}
	return nil
}

// category is the task's kind in the bundled sets' words.
func (vt *verifiedTask) category() string {
	for _, e := range vt.Eval {
		if e.Evaluator == "AgentResponseEvaluator" && e.Expected != nil && e.Expected.TaskType != nil {
			return map[string]string{"retrieve": "information", "navigate": "navigation", "mutate": "state"}[strings.ToLower(*e.Expected.TaskType)]
		}
	}
	return ""
}

// knownSite reports whether s is a site of Placeholders.
func knownSite(s string) bool {
	for _, v := range Placeholders {
		if v == s {
			return true
		}
	}
	return false
}
