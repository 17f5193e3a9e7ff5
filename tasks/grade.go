package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"
)

// Page is the browser page a grading reads: the environment's active tab.
type Page interface {
	// URL is the page's current URL.
	URL(ctx context.Context) (string, error)
	// Goto navigates and waits for the page to settle.
	Goto(ctx context.Context, url string) error
	// Eval evaluates a JavaScript expression and decodes its JSON result
	// into out.
	Eval(ctx context.Context, expr string, out any) error
}

// Grader scores finished episodes.
type Grader struct {
	// Judge decides fuzzy_match references; nil makes them an error.
	Judge Judge
	// HTTP reaches the sites' APIs (default: 30 s timeout).
	HTTP *http.Client
	// StrictAnswers grades WebArena's untyped string_match references as
	// typed answers (answer.go): a lone must_include item as the number,
	// price, date or text it is, several items as a list. Off, WebArena's
	// configs keep WebArena's semantics, so scores compare with published
	// ones (and an answer listing candidates can be paid: info.grader
	// says so).
	StrictAnswers bool
}

// Result is a grading: the reward (the product of the evaluators' scores)
// and each evaluator's score.
type Result struct {
	Reward float64            `json:"reward"`
	Scores map[string]float64 `json:"scores"`
	// Grading, when set, is what re-grades the episode offline (info.grading
	// in the step reply and the trajectory): WebArena-Verified's request.
	Grading *VerifiedGrading `json:"grading,omitempty"`
	// Done says the task itself ended the episode (a page that runs its own
	// episodes, like MiniWoB's, said it is done): the step is terminated.
	Done bool `json:"done,omitempty"`
	// TimeLimit says the task's own time limit ended the episode (MiniWoB's
	// page timer): the step is truncated, not terminated.
	TimeLimit bool `json:"time_limit,omitempty"`
	// MiniWoB is what a MiniWoB page reports beside the reward (its own
	// figures): the step's info.miniwob.
	MiniWoB *MiniWoBReport `json:"miniwob,omitempty"`
	// Answer is how string_match graded the answer (the step's
	// info.grader): its semantics, whether listing candidates can be paid,
	// and why a typed answer earned 0.
	Answer *AnswerGrade `json:"answer,omitempty"`
}

// Grade scores a task after the agent stopped with answer. sites maps each
// of the task's sites to how the grader reaches it. An error means the
// episode could not be graded (judge down, site unreachable, locator
// failed to run) and is never a reward of 0.
func (g *Grader) Grade(ctx context.Context, t *Task, page Page, answer string, sites map[string]Site) (Result, error) {
	res := Result{Reward: 1, Scores: map[string]float64{}}
	hc := g.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	h := &helpers{sites: sites, http: hc, page: page}
	for _, typ := range t.Eval.Types {
		var score float64
		var err error
		switch typ {
		case "string_match":
			score, res.Answer, err = g.stringMatch(ctx, t, answer)
		case "url_match":
			var u string
			if u, err = page.URL(ctx); err == nil {
				score = URLMatch(t.Eval.ReferenceURL, t.Eval.URLNote, u)
			}
		case "program_html":
			score, err = g.programHTML(ctx, t, page, h)
		case "state":
			score, err = stateMatch(ctx, t, sites, hc)
		case "check":
			var subs map[string]float64
			score, subs, err = runCheck(ctx, t, page, answer, sites)
			for k, v := range subs {
				res.Scores["check."+k] = v
			}
		default:
			err = fmt.Errorf("unknown eval type %q", typ)
		}
		if err != nil {
			return Result{}, fmt.Errorf("task %d: %s: %w", t.ID, typ, err)
		}
		res.Scores[typ] = score
		res.Reward *= score
	}
	return res, nil
}

// stringMatch grades the answer: typed when the task gives its type (or
// the grader is strict and the reference is must_include), else with
// WebArena's semantics; the AnswerGrade says which.
func (g *Grader) stringMatch(ctx context.Context, t *Task, answer string) (float64, *AnswerGrade, error) {
	refs := t.Eval.ReferenceAnswers
	if typ := t.Eval.AnswerType; typ != "" {
		score, note := typedMatch(typ, refs, answer)
		return score, &AnswerGrade{Semantics: "typed." + typ, Note: note}, nil
	}
	loose := webarenaSemantics(refs)
	if !g.StrictAnswers || refs == nil || len(refs.MustInclude) == 0 {
		score, err := StringMatch(ctx, refs, answer, g.Judge, t.Intent, t.Eval.StringNote)
		return score, loose, err
	}
	// Strict: must_include typed, the rest (exact_match, fuzzy_match) as
	// WebArena has it.
	typ := inferAnswerType(refs)
	typed, note := typedMatch(typ, &ReferenceAnswers{MustInclude: refs.MustInclude}, answer)
	rest := *refs
	rest.MustInclude = nil
	score, err := StringMatch(ctx, &rest, answer, g.Judge, t.Intent, t.Eval.StringNote)
	grade := &AnswerGrade{Semantics: "typed." + typ, Note: note}
	if len(refs.FuzzyMatch) > 0 {
		grade.Semantics, grade.HackableByListing = loose.Semantics, true
	}
	return score * typed, grade, err
}

// webarenaSemantics names WebArena's comparison of refs: its loosest
// part (fuzzy_match, then must_include, then exact_match).
func webarenaSemantics(refs *ReferenceAnswers) *AnswerGrade {
	switch {
	case refs != nil && len(refs.FuzzyMatch) > 0:
		return &AnswerGrade{Semantics: "webarena.fuzzy_match", HackableByListing: true}
	case refs != nil && len(refs.MustInclude) > 0:
		return &AnswerGrade{Semantics: "webarena.must_include", HackableByListing: true}
	}
	return &AnswerGrade{Semantics: "webarena.exact_match"}
}

// ProgramCheck is one program_html item.
type ProgramCheck struct {
	URL              string          `json:"url"`
	Locator          string          `json:"locator"`
	PrepActions      []string        `json:"prep_actions,omitempty"`
	RequiredContents RequiredContent `json:"required_contents"`
}

// RequiredContent is what a located element must hold.
type RequiredContent struct {
	ExactMatch  *string      `json:"exact_match,omitempty"`
	MustInclude stringsOrOne `json:"must_include,omitempty"`
	// FuzzyMatch (WebArena-Lite has it in program_html): the judge
	// decides whether the located content means each reference.
	FuzzyMatch stringsOrOne `json:"fuzzy_match,omitempty"`
}

// ProgramChecks decodes eval.program_html.
func (e Eval) ProgramChecks() ([]ProgramCheck, error) {
	if len(e.ProgramHTML) == 0 || string(e.ProgramHTML) == "null" {
		return nil, nil
	}
	var out []ProgramCheck
	if err := json.Unmarshal(e.ProgramHTML, &out); err != nil {
		return nil, fmt.Errorf("program_html: %w", err)
	}
	return out, nil
}

// programHTML: for each check, go to its URL ("last": stay; "func:...":
// the helper's URL, with __last_url__ the page's URL), read the locator
// (empty: the page's HTML; document...: a JS expression after the prep
// actions; func:...: a helper), and require its contents.
func (g *Grader) programHTML(ctx context.Context, t *Task, page Page, h *helpers) (float64, error) {
	checks, err := t.Eval.ProgramChecks()
	if err != nil {
		return 0, err
	}
	score := 1.0
	for i, c := range checks {
		last, err := page.URL(ctx)
		if err != nil {
			return 0, err
		}
		target := c.URL
		if strings.HasPrefix(target, "func:") {
			call, err := ParseCall(strings.ReplaceAll(target, "__last_url__", last))
			if err != nil {
				return 0, fmt.Errorf("check %d url: %w", i, err)
			}
			if target, err = h.run(ctx, call); err != nil {
				return 0, fmt.Errorf("check %d url: %w", i, err)
			}
		}
		if target != "last" && target != last {
			if err := page.Goto(ctx, target); err != nil {
				return 0, fmt.Errorf("check %d: go to %s: %w", i, target, err)
			}
		}
		var got string
		switch loc := strings.TrimSpace(c.Locator); {
		case loc == "":
			if err := page.Eval(ctx, "document.documentElement.outerHTML", &got); err != nil {
				return 0, fmt.Errorf("check %d: read the page: %w", i, err)
			}
		case strings.HasPrefix(loc, "func:"):
			call, err := ParseCall(loc)
			if err != nil {
				return 0, fmt.Errorf("check %d locator: %w", i, err)
			}
			if got, err = h.run(ctx, call); err != nil {
				return 0, fmt.Errorf("check %d locator: %w", i, err)
			}
		case strings.HasPrefix(loc, "document.") || strings.HasPrefix(loc, "[...document."):
			for _, prep := range c.PrepActions {
				// A prep action that throws (element missing) leaves the
				// page as it is, as in WebArena; the locator decides.
				_ = page.Eval(ctx, "(() => { try { "+prep+"; } catch (e) {} return null; })()", nil)
			}
			got, err = evalLocator(ctx, page, loc)
			if err != nil {
				return 0, fmt.Errorf("check %d locator %q: %w", i, loc, err)
			}
		default:
			return 0, fmt.Errorf("check %d: locator %q: want one of: empty, a document expression, [...document expression], or func:NAME", i, loc)
		}
		got = html.UnescapeString(got)
		rc := c.RequiredContents
		if rc.ExactMatch != nil {
			score *= ExactMatch(*rc.ExactMatch, got)
		}
		for _, must := range rc.MustInclude {
			best := 0.0
			for _, alt := range alternatives(must) {
				best = max(best, MustInclude(alt, got, false))
			}
			score *= best
		}
		for _, ref := range rc.FuzzyMatch {
			if g.Judge == nil {
				return 0, ErrNoJudge
			}
			ok, err := g.Judge.FuzzyMatch(ctx, t.Intent, ref, got)
			if err != nil {
				return 0, err
			}
			if !ok {
				score = 0
			}
		}
	}
	return score, nil
}

// evalLocator runs a locator. One that throws because its element is
// missing reads as "" (the content is not there, so the check fails); a
// locator that is not valid JavaScript is an error of the task.
func evalLocator(ctx context.Context, page Page, loc string) (string, error) {
	js := `(() => { let v; try { v = (` + loc + `); } catch (e) { if (e instanceof SyntaxError) throw e; return ""; }
  if (v === null || v === undefined) return ""; return typeof v === "string" ? v : JSON.stringify(v); })()`
	var got string
	if err := page.Eval(ctx, js, &got); err != nil {
		return "", err
	}
	return got, nil
}

// StateCheck is a native state evaluator check: a read-only SQL query run
// against the site's database whose single value must equal Expect.
type StateCheck struct {
	Site string `json:"site,omitempty"` // default: the task's first site
	// DB is a SQLite file of the site's instance (relative to its data
	// directory on the local backend, to / on Incus); without it the
	// query goes to the bundled shop's query endpoint.
	DB     string `json:"db,omitempty"`
	SQL    string `json:"sql"`
	Args   []any  `json:"args,omitempty"`
	Expect string `json:"expect"`
}

func stateMatch(ctx context.Context, t *Task, sites map[string]Site, hc *http.Client) (float64, error) {
	if len(t.Eval.State) == 0 {
		return 0, errors.New("eval type state needs eval.state checks")
	}
	for i, c := range t.Eval.State {
		name := c.Site
		if name == "" && len(t.Sites) > 0 {
			name = t.Sites[0]
		}
		if c.DB != "" {
			in, err := taskInstance(t, name, sites)
			if err != nil {
				return 0, fmt.Errorf("state check %d: %w", i, err)
			}
			got, err := dbValue(ctx, in, c.DB, c.SQL, c.Args)
			if err != nil {
				return 0, fmt.Errorf("state check %d: %w", i, err)
			}
			if strings.TrimSpace(got) != strings.TrimSpace(c.Expect) {
				return 0, nil
			}
			continue
		}
		s, ok := sites[name]
		if !ok || s.EvalToken == "" {
			return 0, fmt.Errorf("state check %d: site %q does not answer state queries: give the check a db (a SQLite file of the instance)", i, name)
		}
		got, err := queryValue(ctx, hc, s, c.SQL, c.Args)
		if err != nil {
			return 0, fmt.Errorf("state check %d: %w", i, err)
		}
		if strings.TrimSpace(got) != strings.TrimSpace(c.Expect) {
			return 0, nil
		}
	}
	return 1, nil
}

// queryValue runs a query through the site's /__webserv/query endpoint
// and returns its first value as text ("" for no rows or NULL).
func queryValue(ctx context.Context, hc *http.Client, s Site, sql string, args []any) (string, error) {
	body, _ := json.Marshal(map[string]any{"sql": sql, "args": args})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL+"/__webserv/query", strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Webserv-Eval", s.EvalToken)
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("query the site: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	var res struct {
		Rows  [][]any `json:"rows"`
		Error string  `json:"error"`
	}
	if err := json.Unmarshal(b, &res); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("query %q: HTTP %d %s %.200s", sql, resp.StatusCode, res.Error, b)
	}
	if len(res.Rows) == 0 || len(res.Rows[0]) == 0 || res.Rows[0][0] == nil {
		return "", nil
	}
	switch v := res.Rows[0][0].(type) {
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprint(int64(v)), nil
		}
		return fmt.Sprint(v), nil
	default:
		return fmt.Sprint(v), nil
	}
}
