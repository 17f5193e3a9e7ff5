package tasks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/tasks"
)

// The WebArena data lives outside the repository (third-party data, read
// in place).
const data = "../../shared/data/webarena/"

var bases = map[string]string{
	"shopping": "http://127.0.0.1:7770", "shopping_admin": "http://127.0.0.1:7780/admin", "gitlab": "http://127.0.0.1:8023",
	"reddit": "http://127.0.0.1:9999", "map": "http://127.0.0.1:3000", "wikipedia": "http://127.0.0.1:8888",
}

func TestLoadWebArenaConfigs(t *testing.T) {
	for file, n := range map[string]int{"test.raw.json": 812, "test_webarena_lite.raw.json": 165} {
		set, err := tasks.LoadWebArena(data+file, bases)
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Tasks) != n {
			t.Errorf("%s: %d tasks, want %d", file, len(set.Tasks), n)
		}
		for _, task := range set.Tasks {
			if strings.Contains(task.StartURL+task.Eval.ReferenceURL+string(task.Eval.ProgramHTML), "__") &&
				strings.Contains(task.StartURL+task.Eval.ReferenceURL+string(task.Eval.ProgramHTML), "__SHOPPING") {
				t.Errorf("%s task %d keeps a placeholder: %s", file, task.ID, task.StartURL)
			}
		}
	}
	// Placeholders of sites not given stay as they are.
	set, err := tasks.LoadWebArena(data+"test.raw.json", map[string]string{"shopping": "http://shop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range set.Tasks {
		switch task.Sites[0] {
		case "shopping":
			if !strings.HasPrefix(task.StartURL, "http://shop") {
				t.Fatalf("shopping task %d start_url = %s", task.ID, task.StartURL)
			}
		case "shopping_admin":
			if !strings.HasPrefix(task.StartURL, "__SHOPPING_ADMIN__") {
				t.Fatalf("admin task %d start_url = %s (its site was not given)", task.ID, task.StartURL)
			}
		}
		if strings.Contains(task.StartURL, "http://shop_ADMIN") {
			t.Fatalf("__SHOPPING__ replaced inside __SHOPPING_ADMIN__: %s", task.StartURL)
		}
	}
}

// Every reference answer scores 1 against itself and a wrong answer 0,
// over all string_match and url_match tasks of both files.
func TestReferencesScoreThemselves(t *testing.T) {
	checked := 0
	for _, file := range []string{"test.raw.json", "test_webarena_lite.raw.json"} {
		set, err := tasks.LoadWebArena(data+file, bases)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range set.Tasks {
			for _, typ := range task.Eval.Types {
				switch typ {
				case "string_match":
					refs := task.Eval.ReferenceAnswers
					if refs == nil || len(refs.FuzzyMatch) > 0 && refs.FuzzyMatch[0] != "N/A" {
						continue // needs a judge
					}
					var parts []string
					if refs.ExactMatch != nil {
						parts = append(parts, *refs.ExactMatch)
					}
					for _, m := range refs.MustInclude {
						parts = append(parts, strings.TrimSpace(strings.Split(m, "|OR|")[0]))
					}
					if len(refs.FuzzyMatch) > 0 {
						parts = append(parts, "N/A")
					}
					pred := strings.Join(parts, " ")
					if refs.ExactMatch != nil {
						pred = *refs.ExactMatch
					}
					if got, _ := tasks.StringMatch(context.Background(), refs, pred, nil, task.Intent, task.Eval.StringNote); got != 1 {
						t.Errorf("%s task %d: its own answer %q scores %v", file, task.ID, pred, got)
					}
					if got, _ := tasks.StringMatch(context.Background(), refs, "zzz-wrong", nil, task.Intent, ""); got != 0 {
						t.Errorf("%s task %d: a wrong answer scores %v", file, task.ID, got)
					}
					checked++
				case "url_match":
					first := strings.TrimSpace(strings.Split(task.Eval.ReferenceURL, "|OR|")[0])
					if got := tasks.URLMatch(task.Eval.ReferenceURL, task.Eval.URLNote, first); got != 1 {
						t.Errorf("%s task %d: its own URL %s scores %v", file, task.ID, first, got)
					}
					if got := tasks.URLMatch(task.Eval.ReferenceURL, task.Eval.URLNote, "http://127.0.0.1:1/elsewhere"); got != 0 {
						t.Errorf("%s task %d: a wrong URL scores %v", file, task.ID, got)
					}
					checked++
				}
			}
		}
	}
	if checked < 500 {
		t.Errorf("only %d evaluations checked", checked)
	}
}
