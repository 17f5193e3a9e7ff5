package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// page is a real Chromium tab the evaluators read.
type page struct{ env *envcore.Env }

func (p page) URL(ctx context.Context) (string, error) {
	var u string
	return u, p.env.Evaluate(ctx, "location.href", &u)
}
func (p page) Goto(ctx context.Context, u string) error { return p.env.Goto(ctx, u) }
func (p page) Eval(ctx context.Context, expr string, out any) error {
	return p.env.Evaluate(ctx, expr, out)
}

// Hand-made pages for program_html: an order form, a page whose content
// appears only after a prep action, and a GitLab-style members table.
const orderPage = `<!doctype html><title>Order</title>
<div id="order">Order #000000180 · refund requested · $12.99</div>
<input id="qty" value="40">
<button id="more" onclick="document.getElementById('hidden').textContent = 'shown after click'">More</button>
<p id="hidden"></p>`

const membersPage = `<!doctype html><table>
<tr><td data-label="Account"><span class="gl-avatar-labeled-sublabel">@byteblaze</span></td><td class="col-max-role"><span>Maintainer</span></td></tr>
<tr><td data-label="Account"><span class="gl-avatar-labeled-sublabel">@alice</span></td><td class="col-max-role"><span>Developer</span></td></tr>
</table>`

func pages(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/order", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, orderPage) })
	mux.HandleFunc("/members", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, membersPage) })
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

func browserPage(t *testing.T, start string) page {
	t.Helper()
	b, err := envcore.Launch(t.Context(), zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	env := b.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
	if _, _, err := env.Reset(t.Context(), start); err != nil {
		t.Fatal(err)
	}
	return page{env}
}

func task(t *testing.T, js string) *tasks.Task {
	t.Helper()
	set, err := tasks.ParseTasks([]byte(js), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	return &set.Tasks[0]
}

func TestProgramHTMLOnRealPages(t *testing.T) {
	hs := pages(t)
	p := browserPage(t, hs.URL+"/order")
	g := &tasks.Grader{}
	ctx := t.Context()
	grade := func(program string) (float64, error) {
		tk := task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["program_html"], "program_html": `+program+`}}]`)
		res, err := g.Grade(ctx, tk, p, "", nil)
		return res.Reward, err
	}
	order := hs.URL + "/order"
	cases := []struct {
		name, program string
		want          float64
	}{
		{"must_include on the last page", `[{"url": "last", "locator": "document.querySelector('#order').outerText", "required_contents": {"must_include": ["000000180", "refund"]}}]`, 1},
		{"must_include missing", `[{"url": "last", "locator": "document.querySelector('#order').outerText", "required_contents": {"must_include": ["cancel"]}}]`, 0},
		{"|OR| alternatives", `[{"url": "last", "locator": "document.querySelector('#order').outerText", "required_contents": {"must_include": ["cancel |OR| refund"]}}]`, 1},
		{"exact_match on an input value", `[{"url": "last", "locator": "document.querySelector('#qty').value", "required_contents": {"exact_match": "40"}}]`, 1},
		{"exact_match is exact", `[{"url": "last", "locator": "document.querySelector('#qty').value", "required_contents": {"exact_match": "4"}}]`, 0},
		{"empty locator reads the page HTML", `[{"url": "last", "locator": "", "required_contents": {"must_include": ["id=\"qty\""]}}]`, 1},
		{"prep actions run before the locator", `[{"url": "last", "locator": "document.querySelector('#hidden').outerText", "prep_actions": ["document.querySelector('#more').click()"], "required_contents": {"must_include": ["shown after click"]}}]`, 1},
		{"a locator whose element is missing reads as empty", `[{"url": "last", "locator": "document.querySelector('#nothing').outerText", "required_contents": {"must_include": ["x"]}}]`, 0},
		{"a url navigates first", `[{"url": "` + hs.URL + `/members", "locator": "func:gitlab_get_project_memeber_role(__page__, 'byteblaze')", "required_contents": {"must_include": ["Maintainer"]}}]`, 1},
		{"scores multiply over checks", `[{"url": "` + order + `", "locator": "document.querySelector('#qty').value", "required_contents": {"exact_match": "40"}}, {"url": "last", "locator": "document.querySelector('#order').outerText", "required_contents": {"must_include": ["nope"]}}]`, 0},
	}
	for _, c := range cases {
		got, err := grade(c.program)
		if err != nil || got != c.want {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
	}
	// A locator that is not JavaScript is the task's error, not a 0.
	if _, err := grade(`[{"url": "last", "locator": "document.querySelector(", "required_contents": {"must_include": ["x"]}}]`); err == nil {
		t.Error("a locator with a syntax error graded without an error")
	}
	// Unknown func helpers are refused, never evaluated.
	if _, err := grade(`[{"url": "last", "locator": "func:os.system('rm -rf /')", "required_contents": {"must_include": ["x"]}}]`); err == nil || !strings.Contains(err.Error(), "unknown helper") {
		t.Errorf("unknown helper: %v", err)
	}
	// A fuzzy program_html check (WebArena-Lite) with no judge is an error.
	if _, err := grade(`[{"url": "last", "locator": "document.querySelector('#order').outerText", "required_contents": {"fuzzy_match": ["refund"]}}]`); !errors.Is(err, tasks.ErrNoJudge) {
		t.Errorf("fuzzy program_html without a judge: %v", err)
	}
}

// The shopping helpers run against a real shop's REST API (the bundled
// shop answers the Magento subset they use).
func TestShoppingHelpersOnTheBundledShop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := shop.Generate(t.Context(), dir, shop.GenerateOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := shop.Open(dir, shop.Options{EvalToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	sites := map[string]tasks.Site{"shopping": {BaseURL: hs.URL, Admin: tasks.Account{Username: shop.AdminUser, Password: shop.AdminPassword}, EvalToken: "tok"}}
	p := browserPage(t, hs.URL+"/")
	g := &tasks.Grader{}
	// The latest review of a product, found through the state endpoint.
	var sku, nick string
	var rating int
	q := func(sql string, out ...any) {
		body, _ := json.Marshal(map[string]any{"sql": sql})
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/__webserv/query", strings.NewReader(string(body)))
		req.Header.Set("X-Webserv-Eval", "tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res struct{ Rows [][]any }
		_ = json.NewDecoder(resp.Body).Decode(&res)
		for i, o := range out {
			switch v := o.(type) {
			case *string:
				*v = fmt.Sprint(res.Rows[0][i])
			case *int:
				*v = int(res.Rows[0][i].(float64))
			}
		}
	}
	q(`SELECT p.sku, r.nickname, r.rating FROM reviews r JOIN products p ON p.id = r.product_id WHERE p.id = 5 ORDER BY r.created_at DESC, r.id DESC LIMIT 1`, &sku, &nick, &rating)
	var last string
	q(`SELECT number FROM orders ORDER BY created_at DESC, id DESC LIMIT 1`, &last)
	grade := func(locator, want string) float64 {
		tk := task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["program_html"], "program_html": [{"url": "last", "locator": `+
			fmt.Sprintf("%q", locator)+`, "required_contents": {"exact_match": `+fmt.Sprintf("%q", want)+`}}]}}]`)
		res, err := g.Grade(t.Context(), tk, p, "", sites)
		if err != nil {
			t.Fatalf("%s: %v", locator, err)
		}
		return res.Reward
	}
	if got := grade("func:shopping_get_sku_latest_review_rating('"+sku+"')", fmt.Sprint(rating*20)); got != 1 {
		t.Errorf("latest review rating of %s: want %d percent", sku, rating*20)
	}
	if got := grade("func:shopping_get_sku_latest_review_author('"+sku+"')", nick); got != 1 {
		t.Errorf("latest review author of %s: want %s", sku, nick)
	}
	// shopping_get_latest_order_url as a program_html url: navigating there
	// lands on the order page URL WebArena builds from the increment id.
	tk := task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["program_html"], "program_html": [{"url": "func:shopping_get_latest_order_url()", "locator": "location.href", "required_contents": {"must_include": ["x"]}}]}}]`)
	if _, err := g.Grade(t.Context(), tk, p, "", sites); err == nil || !strings.Contains(err.Error(), "locator") {
		t.Errorf("a locator that is neither document... nor func: must be refused: %v", err)
	}
	tk = task(t, `[{"task_id": 1, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["program_html"], "program_html": [{"url": "func:shopping_get_latest_order_url()", "locator": "document.location.href", "required_contents": {"must_include": ["/sales/order/view/order_id/`+strings.TrimLeft(last, "0")+`/"]}}]}}]`)
	if res, err := g.Grade(t.Context(), tk, p, "", sites); err != nil || res.Reward != 1 {
		t.Errorf("latest order url: %v %v", res, err)
	}
	// Helpers need the shopping site.
	if _, err := g.Grade(t.Context(), tk, p, "", nil); err == nil || !strings.Contains(err.Error(), "shopping site") {
		t.Errorf("helper without the shopping site: %v", err)
	}
}

func TestRedditPostURLAndCallParsing(t *testing.T) {
	for in, want := range map[string]tasks.Call{
		"func:reddit_get_post_url('__last_url__')":                {Name: "reddit_get_post_url", Args: []string{"__last_url__"}},
		`func:gitlab_get_project_memeber_role(__page__, "alice")`: {Name: "gitlab_get_project_memeber_role", Args: []string{"__page__", "alice"}},
		"func:shopping_get_latest_order_url()":                    {Name: "shopping_get_latest_order_url"},
	} {
		got, err := tasks.ParseCall(in)
		if err != nil || got.Name != want.Name || strings.Join(got.Args, "|") != strings.Join(want.Args, "|") {
			t.Errorf("ParseCall(%s) = %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"func:reddit_get_post_url(x)", "func:shopping_get_latest_order_url('a')", "func:eval('1')", "func:reddit_get_post_url('a'"} {
		if _, err := tasks.ParseCall(bad); err == nil {
			t.Errorf("ParseCall(%s) accepted", bad)
		}
	}
}

// judgeServer is an OpenAI-compatible chat endpoint on loopback that
// decides like a strict grader would for these tests: "correct" when the
// student's answer contains the reference's first word.
func judgeServer(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		prompt := req.Messages[len(req.Messages)-1].Content
		ref := between(prompt, "reference answer: ", "\n")
		pred := between(prompt, "student answer: ", "\n")
		verdict := "incorrect"
		if f := strings.Fields(strings.ToLower(ref)); len(f) > 0 && strings.Contains(strings.ToLower(pred), f[0]) {
			verdict = "correct"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": "Verdict: " + verdict}}}})
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL + "/v1"
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	out, _, _ := strings.Cut(rest, b)
	return out
}

func TestFuzzyMatchThroughAJudgeEndpoint(t *testing.T) {
	ctx := t.Context()
	refs := &tasks.ReferenceAnswers{FuzzyMatch: []string{"Refund requested for a broken item"}}
	j := tasks.NewOpenAIJudge(judgeServer(t), "test-judge", "")
	if got, err := tasks.StringMatch(ctx, refs, "They asked for a refund", j, "What did the customer ask?", ""); err != nil || got != 1 {
		t.Errorf("judged correct: %v %v", got, err)
	}
	if got, err := tasks.StringMatch(ctx, refs, "They were happy", j, "What did the customer ask?", ""); err != nil || got != 0 {
		t.Errorf("judged incorrect: %v %v", got, err)
	}
	// A judge that is down makes the grade an error, never a silent 0.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + l.Addr().String() + "/v1"
	l.Close()
	_, err := tasks.StringMatch(ctx, refs, "a refund", tasks.NewOpenAIJudge(down, "m", ""), "q", "")
	if err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("judge down: %v", err)
	}
}

// Malformed task files fail with the file, the task and the field named.
func TestMalformedTaskFiles(t *testing.T) {
	for js, want := range map[string]string{
		`{"task_id": 1}`: "bad.json: want a JSON list",
		`[{"task_id": 3, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["url_match"]}}]`:                                                      "bad.json: task 3: eval.reference_url",
		`[{"task_id": 4, "sites": ["shopping"], "intent": "", "start_url": "/", "eval": {"eval_types": ["string_match"]}}]`:                                                    "bad.json: task 4: intent",
		`[{"task_id": 5, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["magic"]}}]`:                                                          "task 5: eval.eval_types: unknown type \"magic\"",
		`[{"task_id": 6, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["program_html"], "program_html": [{"url": ""}]}}]`:                    "task 6: eval.program_html[0].url",
		`[{"task_id": 7, "sites": ["shopping"], "intent": "x", "start_url": "/", "eval": {"eval_types": ["state"], "state": [{"sql": " "}]}}]`:                                 "task 7: eval.state[0].sql",
		`[{"task_id": 8, "sites": ["shopping"], "intent": "x", "start_url": "/", "login": {"as": "root"}, "eval": {"eval_types": ["string_match"], "reference_answers": {}}}]`: "task 8: login.as",
	} {
		_, err := tasks.ParseTasks([]byte(js), "bad.json")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", js, err, want)
		}
	}
	if _, err := tasks.LoadWebArena(filepath.Join(t.TempDir(), "missing.json"), nil); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// The quirks listed in the data's README grade as the data says.
func TestWebArenaDataQuirks(t *testing.T) {
	lite, err := tasks.LoadWebArena(data+"test_webarena_lite.raw.json", bases)
	if err != nil {
		t.Fatal(err)
	}
	byOld := map[int]*tasks.Task{}
	for i := range lite.Tasks {
		if o := lite.Tasks[i].OldID; o != nil {
			byOld[*o] = &lite.Tasks[i]
		}
	}
	ctx := context.Background()
	// 349: must_include is a lone string; it still grades.
	t349 := byOld[349]
	if t349 == nil || len(t349.Eval.ReferenceAnswers.MustInclude) != 1 {
		t.Fatalf("lite task for old id 349: %+v", t349)
	}
	ref := t349.Eval.ReferenceAnswers.MustInclude[0]
	if got, _ := tasks.StringMatch(ctx, t349.Eval.ReferenceAnswers, "answer: "+ref, nil, "", ""); got != 1 {
		t.Errorf("349 with its reference %q: %v", ref, got)
	}
	// 182: no url_note; the default GOLD in PRED applies.
	t182 := byOld[182]
	if t182 == nil || t182.Eval.URLNote != "" {
		t.Fatalf("lite task for old id 182: %+v", t182)
	}
	if got := tasks.URLMatch(t182.Eval.ReferenceURL, "", t182.Eval.ReferenceURL+"?extra=1"); got != 1 {
		t.Errorf("182: the reference URL with an extra parameter scores %v under GOLD in PRED", got)
	}
	// 590: the intent says 2023, the reference says 2030; graded as the
	// data says (we do not fix third-party references).
	full, err := tasks.LoadWebArena(data+"test.raw.json", bases)
	if err != nil {
		t.Fatal(err)
	}
	t590 := full.ByID[590]
	raw, _ := json.Marshal(t590.Eval)
	if !strings.Contains(string(raw), "2030") || !strings.Contains(t590.Intent, "2023") {
		t.Fatalf("task 590 is not the quirk the README describes: %s / %s", t590.Intent, raw)
	}
}

// WebArena's storage states move to the instance: the cookies keep name,
// value and path, and lose the host they were recorded on.
func TestStorageStateCookies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shopping_state.json")
	state := `{"cookies": [{"name": "PHPSESSID", "value": "abc", "domain": "localhost", "path": "/", "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"},
	  {"name": "form_key", "value": "k", "domain": ".localhost", "path": "", "httpOnly": false}], "origins": [{"origin": "http://localhost:7770", "localStorage": [{"name": "mage-cache", "value": "{}"}]}]}`
	if err := os.WriteFile(path, []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := tasks.LoadStorageState(path)
	if err != nil {
		t.Fatal(err)
	}
	cs := st.HostlessCookies()
	if len(cs) != 2 || cs[0].Name != "PHPSESSID" || cs[0].Value != "abc" || !cs[0].HTTPOnly || cs[0].Domain != "" || cs[1].Path != "/" {
		t.Errorf("cookies = %+v", cs)
	}
	if err := os.WriteFile(path, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tasks.LoadStorageState(path); err == nil || !strings.Contains(err.Error(), "Playwright storage state") {
		t.Errorf("bad file: %v", err)
	}
}
