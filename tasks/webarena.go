package tasks

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Placeholders of WebArena configs and the site each stands for.
var Placeholders = map[string]string{
	"__SHOPPING__":       "shopping",
	"__SHOPPING_ADMIN__": "shopping_admin",
	"__GITLAB__":         "gitlab",
	"__REDDIT__":         "reddit",
	"__MAP__":            "map",
	"__WIKIPEDIA__":      "wikipedia",
}

// Task is one WebArena task configuration.
type Task struct {
	ID           int      `json:"task_id"`
	OldID        *int     `json:"old_task_id,omitempty"` // WebArena-Lite: the original WebArena id
	Sites        []string `json:"sites"`
	Intent       string   `json:"intent"`
	StartURL     string   `json:"start_url"`
	RequireLogin bool     `json:"require_login"`
	StorageState string   `json:"storage_state"`
	RequireReset bool     `json:"require_reset"`
	Eval         Eval     `json:"eval"`
}

// Eval is a task's grading specification.
type Eval struct {
	Types            []string          `json:"eval_types"`
	ReferenceAnswers *ReferenceAnswers `json:"reference_answers"`
	ReferenceURL     string            `json:"reference_url"`
	URLNote          string            `json:"url_note"`
	StringNote       string            `json:"string_note"`
	ProgramHTML      json.RawMessage   `json:"program_html"`
}

// ReferenceAnswers are string_match's references. MustInclude and
// FuzzyMatch accept a list or a single string (WebArena-Lite has both).
type ReferenceAnswers struct {
	ExactMatch  *string      `json:"exact_match,omitempty"`
	MustInclude stringsOrOne `json:"must_include,omitempty"`
	FuzzyMatch  stringsOrOne `json:"fuzzy_match,omitempty"`
}

// stringsOrOne decodes a JSON list of strings or a lone string (or, for
// fuzzy_match, the string "N/A").
type stringsOrOne []string

func (s *stringsOrOne) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*s = list
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*s = []string{one}
	return nil
}

// Set is a loaded task file.
type Set struct {
	Tasks []Task
	ByID  map[int]*Task
}

// LoadWebArena reads a WebArena (or WebArena-Lite) config file, replacing
// every placeholder whose site is in bases (site name -> base URL, no
// trailing slash) textually over the whole config, as WebArena does.
// Placeholders of sites not in bases stay as they are.
func LoadWebArena(path string, bases map[string]string) (*Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	text := string(raw)
	keys := make([]string, 0, len(Placeholders))
	for k := range Placeholders {
		keys = append(keys, k)
	}
	// Longest first: __SHOPPING_ADMIN__ before __SHOPPING__.
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, ph := range keys {
		if base, ok := bases[Placeholders[ph]]; ok {
			text = strings.ReplaceAll(text, ph, strings.TrimRight(base, "/"))
		}
	}
	var set Set
	if err := json.Unmarshal([]byte(text), &set.Tasks); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	set.ByID = make(map[int]*Task, len(set.Tasks))
	for i := range set.Tasks {
		t := &set.Tasks[i]
		if _, dup := set.ByID[t.ID]; dup {
			return nil, fmt.Errorf("%s: task %d appears twice", path, t.ID)
		}
		set.ByID[t.ID] = t
	}
	return &set, nil
}
