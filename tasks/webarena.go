package tasks

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/webserv-rl/webserv/attack"
	"github.com/webserv-rl/webserv/hosting"
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

	// Bundled task sets add these (WebArena configs have none).

	// Login signs the episode in before it starts: {"as": "customer",
	// "email": ...} or {"as": "admin"} on the bundled shop.
	Login *TaskLogin `json:"login,omitempty"`
	// Category is information, navigation or state.
	Category string `json:"category,omitempty"`
	// Oracle is an action sequence that solves the task (the last action
	// is a stop); Wrong is one that must not.
	Oracle []string `json:"oracle,omitempty"`
	Wrong  []string `json:"wrong,omitempty"`
	// Solutions are other action sequences that solve the task, found
	// independently of the oracle (another route to the outcome, like the
	// search box used as the intent says): webserv tasks check holds each
	// to reward 1, and calls a task without one unverified.
	Solutions [][]string `json:"solutions,omitempty"`

	// A site's own tasks (docs/tasks.md) may add this.

	// Setup are commands run in the episode's site instance before the
	// first observation (local: in its data directory; Incus: in the
	// container), like creating the record the task is about. {url} is
	// the site's origin.
	Setup [][]string `json:"setup,omitempty"`

	// MayChange names state the task may change besides the rows its
	// state checks read (docs/tasks.md "Side effects"): a purchase's stock
	// decrement, say. Any other change is a side effect.
	MayChange []hosting.StateRows `json:"may_change,omitempty"`
	// SideEffects is what a side effect does to the episode: report
	// (the default: listed in info, the reward stands) or fail (the
	// episode scores 0). Make's side_effects, when given, decides instead.
	SideEffects string `json:"side_effects,omitempty"`
	// Attacks are prompt injections an episode of the task draws one of by
	// its seed, when make or the reset gives none (docs/attacks.md): each
	// an attack with an id, as make's attack takes it.
	Attacks []attack.Spec `json:"attacks,omitempty"`
	// ScopeNamed says the task's state checks and may_change name all it
	// may change, even when both are empty (then nothing but the site's
	// bookkeeping may change), though a program of its own grades it: a
	// Verified-graded task takes its native twin's scope this way
	// (sites/bundled), so its side effects are looked for like the
	// twin's. Not part of a task file.
	ScopeNamed bool `json:"-"`

	// Explored is where an exploration run found the task (its episode,
	// persona, steps; docs/explore.md). Provenance only: nothing grades
	// or starts from it.
	Explored json.RawMessage `json:"explored,omitempty"`
}

// TaskLogin is how a task starts signed in: as a bundled shop account
// (as), or with cookies or a Playwright storage state file (a site's own
// tasks).
type TaskLogin struct {
	As    string `json:"as,omitempty"` // customer or admin (the bundled shop)
	Email string `json:"email,omitempty"`
	// Cookies are set on the site's origin before the start page loads.
	Cookies []LoginCookie `json:"cookies,omitempty"`
	// StorageState is a Playwright storage state file (relative to the
	// task file); its cookies are set on the site's origin.
	StorageState string `json:"storage_state,omitempty"`
}

// LoginCookie is one cookie of a task's login.
type LoginCookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Path     string `json:"path,omitempty"`
	HTTPOnly bool   `json:"http_only,omitempty"`
}

// Eval is a task's grading specification.
type Eval struct {
	Types            []string          `json:"eval_types"`
	ReferenceAnswers *ReferenceAnswers `json:"reference_answers"`
	ReferenceURL     string            `json:"reference_url"`
	URLNote          string            `json:"url_note"`
	StringNote       string            `json:"string_note"`
	// AnswerType types string_match's answer (answer.go; the project's
	// own task formats give it): number, currency, date, string or
	// string_list. The answer's values of that type are compared with the
	// reference's, so an answer listing candidates earns 0. Empty:
	// WebArena's semantics (exact_match, must_include, fuzzy_match).
	AnswerType  string          `json:"answer_type,omitempty"`
	ProgramHTML json.RawMessage `json:"program_html"`
	// State are the state evaluator's checks: SQL on the bundled shop's
	// query endpoint, or on a SQLite file of the instance (db).
	State []StateCheck `json:"state,omitempty"`
	// Check is a programmatic verifier run in the instance (check.go).
	Check *Check `json:"check,omitempty"`
	// Verified is a WebArena-Verified task as its package reads it (eval
	// type "verified", verified.go). It is not instantiated: the package's
	// evaluator maps URLs to placeholders itself.
	Verified json.RawMessage `json:"-"`
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
	text := replacePlaceholders(string(raw), bases)
	return ParseTasks([]byte(text), path)
}

// ParseTasks reads a task file's contents (a JSON list of tasks) and checks
// every task; name (the file) is in each error, with the task and field.
func ParseTasks(data []byte, name string) (*Set, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%s: want a JSON list of tasks: %w", name, err)
	}
	set := Set{Tasks: make([]Task, len(raws)), ByID: make(map[int]*Task, len(raws))}
	for i, raw := range raws {
		t := &set.Tasks[i]
		if err := json.Unmarshal(raw, t); err != nil {
			return nil, fmt.Errorf("%s: task at index %d: %w", name, i, err)
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%s: task %d: %w", name, t.ID, err)
		}
		if _, dup := set.ByID[t.ID]; dup {
			return nil, fmt.Errorf("%s: task %d appears twice", name, t.ID)
		}
		set.ByID[t.ID] = t
	}
	return &set, nil
}

// Validate checks that a task can be run and graded.
func (t *Task) Validate() error {
	switch {
	case strings.TrimSpace(t.Intent) == "":
		return fmt.Errorf("intent: empty")
	case t.StartURL == "":
		return fmt.Errorf("start_url: empty")
	case len(t.Sites) == 0:
		return fmt.Errorf("sites: empty")
	case len(t.Eval.Types) == 0:
		return fmt.Errorf("eval.eval_types: empty")
	}
	for _, typ := range t.Eval.Types {
		switch typ {
		case "string_match":
			if t.Eval.ReferenceAnswers == nil {
				return fmt.Errorf("eval.reference_answers: string_match needs reference answers")
			}
			if t.Eval.AnswerType != "" {
				if err := validateAnswerType(t.Eval.AnswerType, t.Eval.ReferenceAnswers); err != nil {
					return err
				}
			}
		case "url_match":
			if t.Eval.ReferenceURL == "" {
				return fmt.Errorf("eval.reference_url: url_match needs a reference URL")
			}
		case "program_html":
			checks, err := t.Eval.ProgramChecks()
			if err != nil {
				return fmt.Errorf("eval.%w", err)
			}
			if len(checks) == 0 {
				return fmt.Errorf("eval.program_html: program_html needs at least one check")
			}
			for k, c := range checks {
				if c.URL == "" {
					return fmt.Errorf("eval.program_html[%d].url: empty (give a URL, \"last\" or func:...)", k)
				}
				if rc := c.RequiredContents; rc.ExactMatch == nil && len(rc.MustInclude) == 0 && len(rc.FuzzyMatch) == 0 {
					return fmt.Errorf("eval.program_html[%d].required_contents: give exact_match, must_include or fuzzy_match", k)
				}
			}
		case "state":
			if len(t.Eval.State) == 0 {
				return fmt.Errorf("eval.state: the state evaluator needs checks")
			}
			for k, c := range t.Eval.State {
				if strings.TrimSpace(c.SQL) == "" {
					return fmt.Errorf("eval.state[%d].sql: empty", k)
				}
			}
		case "check":
			if err := t.Eval.Check.validate(); err != nil {
				return fmt.Errorf("eval.check%w", err)
			}
		case "verified":
			if len(t.Eval.Verified) == 0 {
				return fmt.Errorf("eval: a verified task needs its WebArena-Verified definition")
			}
		default:
			return fmt.Errorf("eval.eval_types: unknown type %q (string_match, url_match, program_html, state, check, verified)", typ)
		}
	}
	if t.Eval.AnswerType != "" && !slices.Contains(t.Eval.Types, "string_match") {
		return fmt.Errorf("eval.answer_type: given, but eval.eval_types does not list string_match (the evaluator of answers)")
	}
	if t.Eval.Check != nil && !slices.Contains(t.Eval.Types, "check") {
		return fmt.Errorf("eval.check: given, but eval.eval_types does not list check")
	}
	for k, c := range t.Setup {
		if len(c) == 0 || strings.TrimSpace(c[0]) == "" {
			return fmt.Errorf("setup[%d]: empty command (give a list like [\"./seed.py\", \"--issue\", \"3\"])", k)
		}
	}
	if l := t.Login; l != nil {
		switch {
		case l.As == "" && len(l.Cookies) == 0 && l.StorageState == "":
			return fmt.Errorf("login: give cookies or storage_state")
		case l.As != "" && (len(l.Cookies) > 0 || l.StorageState != ""):
			return fmt.Errorf("login: give as, cookies or storage_state, not several")
		case l.As != "" && l.As != "customer" && l.As != "admin":
			return fmt.Errorf("login.as: %q; want customer or admin", l.As)
		}
		for k, c := range l.Cookies {
			if c.Name == "" {
				return fmt.Errorf("login.cookies[%d].name: empty", k)
			}
		}
	}
	for k, r := range t.MayChange {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("may_change[%d].%w", k, err)
		}
	}
	if err := CheckSideEffectMode(t.SideEffects); err != nil {
		return fmt.Errorf("side_effects: %w", err)
	}
	if t.Login != nil && t.Login.As == "customer" && t.Login.Email == "" {
		return fmt.Errorf("login.email: a customer login needs the customer's email")
	}
	return checkAttacks(t.Attacks)
}

// checkAttacks checks a task's attacks: each valid, with an id of its own.
func checkAttacks(specs []attack.Spec) error {
	seen := map[string]bool{}
	for k, a := range specs {
		if a.ID == "" {
			return fmt.Errorf("attacks[%d].id: empty; give each attack an id (banner.url) that names it in info.attack", k)
		}
		if seen[a.ID] {
			return fmt.Errorf("attacks[%d].id: %q is used twice", k, a.ID)
		}
		seen[a.ID] = true
		if err := a.Check(); err != nil {
			return fmt.Errorf("attacks[%d] (%s): %w", k, a.ID, err)
		}
	}
	return nil
}

// RequireAnswerType refuses an answer task without a type: a task of the
// project's own formats whose string_match has no eval.answer_type (its
// must_include would pay an answer listing every candidate). WebArena's
// configs keep their semantics and are not held to it. The error names
// the field, not the task: the caller says which task.
func (t *Task) RequireAnswerType() error {
	if !slices.Contains(t.Eval.Types, "string_match") || t.Eval.AnswerType != "" {
		return nil
	}
	return fmt.Errorf("eval.answer_type: missing; an answer task says its answer's type, so that an answer listing candidates is not paid: add \"answer_type\": one of %s (the reference then in exact_match; a list's items in must_include)", strings.Join(AnswerTypes, ", "))
}

// Instantiate returns a copy of t with the site placeholders of the sites
// in bases replaced by their base URLs, over the whole task as WebArena
// does (start URL, references, locators and func: strings alike).
func Instantiate(t *Task, bases map[string]string) (*Task, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	text := replacePlaceholders(string(raw), bases)
	var out Task
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("task %d: after filling in the site URLs: %w", t.ID, err)
	}
	out.ScopeNamed = t.ScopeNamed // not in JSON
	return &out, nil
}

func replacePlaceholders(text string, bases map[string]string) string {
	if base, ok := bases[SiteRole]; ok {
		text = strings.ReplaceAll(text, SitePlaceholder, strings.TrimRight(base, "/"))
	}
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
	return text
}
