package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/trajectory"
)

// export --describe-with: every transition is asked of the endpoint (a
// stand-in for the user's model, answering from a script) and written in
// DynaWeb's layout, the exported row with its reasoning and description.
// A malformed answer is asked again; one still malformed after the
// retries leaves its transition without a description and with the
// reason, as does a dead endpoint for all of them; the command counts
// them.
func TestExportDescribeWith(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Setenv("OPENAI_API_KEY", "test-key")
	dir := t.TempDir()
	writeShopEpisode(t, filepath.Join(dir, "env-1", "0001"+trajectory.Ext))

	plainPath := filepath.Join(dir, "plain.jsonl")
	var out strings.Builder
	if err := exportCmd(ctx, zap.NewNop(), []string{"--format", "transitions", "-o", plainPath, dir}, nil, &out); err != nil {
		t.Fatal(err)
	}
	plain := readRows(t, plainPath)
	if len(plain) != 3 {
		t.Fatalf("the plain export has %d rows, not the episode's 3", len(plain))
	}

	sb := newStandinDescriber(t, map[string][]string{
		`click("lamp")`: {"```json\n" + `{"reasoning": "The link names the lamp, so following it opens the lamp's page.", "description": "The lamp's page opens at /lamp, with an Add to cart button."}` + "\n```"},
		`click("add")`:  {"I am " + standinDescriberNote + ", and I forgot the JSON.", `{"reasoning": "Adding puts the lamp in the cart.", "description": "The cart link now counts 1 item."}`},
		`click("gone")`: {`{"reasoning": "There is no such element.", "description": ""}`},
	})
	describedPath := filepath.Join(dir, "described.jsonl")
	out.Reset()
	err := exportCmd(ctx, zap.NewNop(), []string{"--format", "transitions", "--describe-with", sb.url + "/v1", "--describe-model", "standin",
		"--describe-retries", "1", "-o", describedPath, dir}, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3 rows, 2 described, 1 without a description") {
		t.Errorf("the export's report does not count the described transitions: %q", out.String())
	}
	rows := readRows(t, describedPath)
	if len(rows) != 3 {
		t.Fatalf("the described export has %d rows, not 3: a transition was dropped", len(rows))
	}
	want := []struct{ reasoning, description, err string }{
		{"The link names the lamp, so following it opens the lamp's page.", "The lamp's page opens at /lamp, with an Add to cart button.", ""},
		{"Adding puts the lamp in the cart.", "The cart link now counts 1 item.", ""},
		{"", "", `the answer has no "description"`},
	}
	for i, r := range rows {
		for _, k := range []string{"reasoning", "description", "describe_error"} {
			if _, ok := r[k]; !ok {
				t.Errorf("row %d has no %q column: every described row has them all", i+1, k)
			}
		}
		if r["reasoning"] != want[i].reasoning || r["description"] != want[i].description {
			t.Errorf("row %d: reasoning %q, description %q; want %q, %q", i+1, r["reasoning"], r["description"], want[i].reasoning, want[i].description)
		}
		if e, _ := r["describe_error"].(string); want[i].err == "" && e != "" || want[i].err != "" && !strings.Contains(e, want[i].err) {
			t.Errorf("row %d: describe_error %q, want one saying %q", i+1, e, want[i].err)
		}
		for k, v := range plain[i] {
			if !reflect.DeepEqual(r[k], v) {
				t.Errorf("row %d: its %q differs from the plain export's", i+1, k)
			}
		}
	}

	// A described file is still a transitions file: wm-eval and the
	// memory model read it as the plain one.
	if got, err := dream.ReadTransitions(describedPath); err != nil || !reflect.DeepEqual(got, typedRows(t, plainPath)) {
		t.Errorf("the described file read as transitions: %v", err)
	}

	// What the stand-in was asked: with the key, the model, the
	// observation, the action and the row's exact delta; a malformed
	// answer asked again with the reason.
	calls := sb.calls()
	perAction := map[string]int{}
	for _, c := range calls {
		if c.auth != "Bearer test-key" || c.model != "standin" {
			t.Errorf("a request with Authorization %q and model %q; want the key from $OPENAI_API_KEY and --describe-model", c.auth, c.model)
		}
		perAction[c.action]++
	}
	if !reflect.DeepEqual(perAction, map[string]int{`click("lamp")`: 1, `click("add")`: 2, `click("gone")`: 2}) {
		t.Errorf("requests per transition %v: one for a good answer, and with --describe-retries 1 two for a malformed one", perAction)
	}
	for i, r := range typedRows(t, plainPath) {
		var b strings.Builder // the delta as JSON, its HTML as it is
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r.Delta); err != nil {
			t.Fatal(err)
		}
		delta := strings.TrimSpace(b.String())
		c := sb.first(r.Action)
		if c == nil {
			t.Fatalf("transition %d was not asked", i+1)
		}
		user := c.messages[1].Content
		for _, part := range []string{"Goal: buy a brass lamp", "URL: " + r.URL, r.Observation, "Action: " + r.Action, delta, `"html": {"edits"`} {
			if !strings.Contains(user, part) {
				t.Errorf("the prompt of transition %d lacks %.120q:\n%s", i+1, part, user)
			}
		}
		if strings.Contains(user, `\u003c`) {
			t.Errorf("the prompt of transition %d shows the delta's HTML escaped:\n%s", i+1, user)
		}
	}
	if c := sb.nth(`click("add")`, 1); c == nil || len(c.messages) != 4 || !strings.Contains(c.messages[3].Content, "no JSON object") {
		t.Errorf("the malformed answer was not asked again with its reason: %+v", c)
	}

	// A dead endpoint: every row written, each saying why it has no
	// description, and the command fails saying none was described.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	deadPath := filepath.Join(dir, "dead.jsonl")
	out.Reset()
	err = exportCmd(ctx, zap.NewNop(), []string{"--format", "transitions", "--describe-with", deadURL + "/v1", "-o", deadPath, dir}, nil, &out)
	if err == nil || !strings.Contains(err.Error(), "described none of the 3 transitions") || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("export with a dead endpoint: %v", err)
	}
	if !strings.Contains(out.String(), "3 rows, 0 described, 3 without a description") {
		t.Errorf("the export's report with a dead endpoint: %q", out.String())
	}
	rows = readRows(t, deadPath)
	if len(rows) != 3 {
		t.Fatalf("with a dead endpoint the export has %d rows, not 3", len(rows))
	}
	for i, r := range rows {
		if e, _ := r["describe_error"].(string); !strings.Contains(e, "not reachable") || r["description"] != "" {
			t.Errorf("row %d with a dead endpoint: description %q, describe_error %q", i+1, r["description"], e)
		}
	}

	// Settings that cannot work are refused before anything is asked.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "sft", "--describe-with", sb.url + "/v1", dir}, "--format transitions"},
		{[]string{"--describe-model", "standin", dir}, "--describe-model without --describe-with"},
		{[]string{"--describe-with", "127.0.0.1:8000", dir}, "base URL"},
	} {
		if err := exportCmd(ctx, zap.NewNop(), c.args, nil, &out); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("export %v: %v; want an error saying %q", c.args, err, c.want)
		}
	}
}

// writeShopEpisode records at path an episode of three steps on a small
// shop: a click to a new page, one that changes the cart count, and one
// on an element that is not there.
func writeShopEpisode(t *testing.T, path string) {
	t.Helper()
	page := func(url, title, body string, clickable ...string) *trajectory.Observation {
		o := &trajectory.Observation{Goal: "buy a brass lamp"}
		o.URL, o.Title, o.HTML, o.Clickable = url, title, `<body data-semantic-id="page">`+body+`</body>`, clickable
		return o
	}
	home := page("http://shop.test/", "Shop", `<a data-semantic-id="lamp" href="/lamp">Brass lamp</a><a data-semantic-id="cart" href="/cart">Cart (0)</a>`, "lamp", "cart")
	lamp := page("http://shop.test/lamp", "Brass lamp", `<h1 data-semantic-id="name">Brass lamp</h1><button data-semantic-id="add">Add to cart</button><a data-semantic-id="cart" href="/cart">Cart (0)</a>`, "add", "cart")
	added := page("http://shop.test/lamp", "Brass lamp", `<h1 data-semantic-id="name">Brass lamp</h1><button data-semantic-id="add">Add to cart</button><a data-semantic-id="cart" href="/cart">Cart (1)</a>`, "add", "cart")
	failed := *added
	failed.LastActionError = `no element with semantic id "gone"`
	w, err := trajectory.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	lines := []trajectory.Line{
		{Kind: trajectory.KindEpisode, Version: trajectory.Version, Env: "env-1", Episode: 1, Goal: "buy a brass lamp", StartURL: home.URL, Cause: "make"},
		{Kind: trajectory.KindReset, Obs: home},
		{Kind: trajectory.KindStep, Step: 1, Action: `click("lamp")`, Obs: lamp, Reward: &zero},
		{Kind: trajectory.KindStep, Step: 2, Action: `click("add")`, Obs: added, Reward: &zero},
		{Kind: trajectory.KindStep, Step: 3, Action: `click("gone")`, Obs: &failed, Reward: &zero},
	}
	for _, l := range lines {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readRows reads a JSON Lines export as generic rows.
func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// typedRows reads a transitions export as its rows.
func typedRows(t *testing.T, path string) []trajectory.TransitionRow {
	t.Helper()
	var rows []trajectory.TransitionRow
	for _, r := range readRows(t, path) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var row trajectory.TransitionRow
		if err := json.Unmarshal(b, &row); err != nil {
			t.Fatalf("%s: not a transitions row: %v", path, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// standinDescriber stands in for the user's model behind
// --describe-with: an OpenAI-compatible endpoint on 127.0.0.1 that
// answers each transition from a script, keyed by the prompt's action
// (its n-th answer to an action is the script's n-th, or its last), and
// keeps every request.
type standinDescriber struct {
	url    string
	script map[string][]string
	mu     sync.Mutex
	asked  []describeCall
}

// standinDescriberNote says, in its malformed answer, what the stand-in is.
const standinDescriberNote = "a stand-in for the user's model: it answers from a script"

type describeCall struct {
	action, auth, model string
	messages            []struct{ Role, Content string }
}

func newStandinDescriber(t *testing.T, script map[string][]string) *standinDescriber {
	sb := &standinDescriber{script: script}
	srv := httptest.NewServer(http.HandlerFunc(sb.serve))
	t.Cleanup(srv.Close)
	sb.url = srv.URL
	return sb
}

func (sb *standinDescriber) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string                           `json:"model"`
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) < 2 {
		http.Error(w, "not a chat request", http.StatusBadRequest)
		return
	}
	c := describeCall{action: line(req.Messages[1].Content, "Action: "), auth: r.Header.Get("Authorization"), model: req.Model, messages: req.Messages}
	sb.mu.Lock()
	n := 0
	for _, a := range sb.asked {
		if a.action == c.action {
			n++
		}
	}
	sb.asked = append(sb.asked, c)
	sb.mu.Unlock()
	answers, ok := sb.script[c.action]
	if !ok {
		http.Error(w, "the stand-in has no answer for "+c.action, http.StatusNotFound)
		return
	}
	content := answers[min(n, len(answers)-1)]
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}}}})
}

func (sb *standinDescriber) calls() []describeCall {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return append([]describeCall(nil), sb.asked...)
}

// nth is the n-th request (from 0) about action, or nil.
func (sb *standinDescriber) nth(action string, n int) *describeCall {
	for _, c := range sb.calls() {
		if c.action == action {
			if n == 0 {
				return &c
			}
			n--
		}
	}
	return nil
}

func (sb *standinDescriber) first(action string) *describeCall { return sb.nth(action, 0) }

// line is the rest of text's first line that begins with prefix.
func line(text, prefix string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if s, ok := strings.CutPrefix(l, prefix); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// export leaves out the episodes the infrastructure ended and says how
// many; --include-failed keeps them, up to the step that failed; a
// misspelt flag is refused.
func TestExportLeavesOutInfraFailedEpisodes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeShopEpisode(t, filepath.Join(dir, "env-1", "0001"+trajectory.Ext))
	w, err := trajectory.Create(filepath.Join(dir, "env-2", "0001"+trajectory.Ext))
	if err != nil {
		t.Fatal(err)
	}
	obs := &trajectory.Observation{Goal: "buy a brass lamp"}
	obs.URL, obs.HTML = "http://shop.test/", "<p>shop</p>"
	zero := 0.0
	for _, l := range []trajectory.Line{
		{Kind: trajectory.KindEpisode, Version: trajectory.Version, Env: "env-2", Episode: 1, Goal: "buy a brass lamp", Cause: "make"},
		{Kind: trajectory.KindReset, Obs: obs},
		{Kind: trajectory.KindStep, Step: 1, Action: `click("lamp")`, Obs: obs, Reward: &zero},
		{Kind: trajectory.KindStep, Step: 2, Action: `click("add")`, Error: &trajectory.Failure{Code: "site_down", Fault: "infrastructure", Message: "the instance died"}},
	} {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args       []string
		rows       int
		reportHas  string
		reportLack string
	}{
		{[]string{"--format", "transitions"}, 3, "3 rows; left out 1 episodes the infrastructure ended (--include-failed keeps them)", ""},
		{[]string{"--format", "sft"}, 3, "left out 1 episodes", ""},
		{[]string{"--format", "transitions", "--include-failed"}, 4, "4 rows", "left out"},
	} {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		var out strings.Builder
		if err := exportCmd(ctx, zap.NewNop(), append(c.args, "-o", path, dir), nil, &out); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		rows := readRows(t, path)
		if len(rows) != c.rows || !strings.Contains(out.String(), c.reportHas) || c.reportLack != "" && strings.Contains(out.String(), c.reportLack) {
			t.Errorf("%v: %d rows, report %q; want %d rows and %q", c.args, len(rows), out.String(), c.rows, c.reportHas)
		}
	}
	var out strings.Builder
	if err := exportCmd(ctx, zap.NewNop(), []string{"--include-failures", dir}, nil, &out); err == nil || !strings.Contains(err.Error(), "include-failures") {
		t.Errorf("a misspelt flag: %v", err)
	}
}
