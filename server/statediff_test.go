package server_test

import (
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/server"
)

// state_diff on the bundled shop: after a cart task's oracle, the cart row
// it inserted is in the diff (with the columns a check needs) and a
// candidate check's value is 0 at the start and 1 now; the reply's limit
// cuts it and says so; a fork and a reset compare with their own start;
// an environment made without state_diff, and a site without a state
// database, are refused.
func TestStateDiffShowsWhatAnEpisodeChanged(t *testing.T) {
	t.Parallel()
	cl := shopServer(t, server.Config{MaxCreating: 2, MaxEnvs: 4}, nil)

	r := wait(t, cl.send("make", "", map[string]any{"site": "shopping", "task": "shopping.35"}))
	plain := r["result"].(map[string]any)["env"].(string)
	if e := errOf(wait(t, cl.send("state_diff", plain, nil))); e["code"] != "bad_args" || !strings.Contains(e["message"].(string), "state_diff: true") {
		t.Errorf("state_diff without make's state_diff: %v", e)
	}

	r = wait(t, cl.send("make", "", map[string]any{"site": "shopping", "task": "shopping.35", "state_diff": true}))
	if r["ok"] != true {
		t.Fatalf("make: %v", r["error"])
	}
	env := r["result"].(map[string]any)["env"].(string)
	oracle := []string{`fill("search.search-products", "Sierra Organic Pocket Tee")`, `click("search.search")`,
		`click("sierra-organic-pocket-tee")`, `select_option("add-to-cart.size", "S")`,
		`select_option("add-to-cart.colour", "Pink")`, `click("add-to-cart.add-to-cart")`}
	if _, err := play(cl, env, oracle); err != nil {
		t.Fatal(err)
	}
	check := map[string]any{"sql": "SELECT COUNT(*) FROM cart_items WHERE size = ? AND colour = ?", "args": []any{"S", "Pink"}}
	res := okResult(t, wait(t, cl.send("state_diff", env, map[string]any{"queries": []any{check, map[string]any{"sql": "SELECT nope"}}})))
	diff := res["diff"].(map[string]any)
	var cart map[string]any
	for _, c := range diff["changes"].([]any) {
		c := c.(map[string]any)
		if c["table"] == "cart_items" && c["op"] == "insert" {
			cart = c["row"].(map[string]any)
		}
	}
	if cart == nil || cart["size"] != "S" || cart["colour"] != "Pink" || diff["db"] != "shop.db" {
		t.Fatalf("the diff has no cart row of size S in Pink: %v", diff)
	}
	cols := diff["columns"].(map[string]any)["cart_items"].([]any)
	if c := cols[0].(map[string]any); c["name"] != "id" || c["pk"] != int8(1) && c["pk"] != int64(1) && c["pk"] != uint8(1) {
		t.Errorf("cart_items' first column = %v, want id, the primary key", c)
	}
	q := res["queries"].([]any)
	if v := q[0].(map[string]any); v["base"] != "0" || v["now"] != "1" {
		t.Errorf("the check's values = %v, want 0 at the start and 1 now", v)
	}
	if v := q[1].(map[string]any); !strings.Contains(v["error"].(string), "nope") {
		t.Errorf("a bad query = %v, want its error", v)
	}
	total := toInt(diff["total"])
	cut := okResult(t, wait(t, cl.send("state_diff", env, map[string]any{"max_rows": 1})))["diff"].(map[string]any)
	if n := len(cut["changes"].([]any)); n != 1 || toInt(cut["total"]) != total || cut["truncated"] != (total > 1) {
		t.Errorf("max_rows 1: %d changes of %v, truncated %v (total %d)", n, cut["total"], cut["truncated"], total)
	}
	if e := errOf(wait(t, cl.send("state_diff", env, map[string]any{"max_rows": 100000}))); e["code"] != "bad_args" {
		t.Errorf("max_rows 100000: %v", e)
	}

	// A fork's episode begins at the snapshot: the cart row is in its start state, not in its diff.
	fk := okResult(t, wait(t, cl.send("fork", env, map[string]any{"n": 1})))
	child := fk["envs"].([]any)[0].(map[string]any)["env"].(string)
	res = okResult(t, wait(t, cl.send("state_diff", child, map[string]any{"queries": []any{check}})))
	if v := res["queries"].([]any)[0].(map[string]any); v["base"] != "1" || v["now"] != "1" {
		t.Errorf("in a fork the check's values = %v, want 1 at its start and 1 now", v)
	}
	wait(t, cl.send("close", child, nil))

	// A reset puts the site back and compares with the new start.
	okResult(t, wait(t, cl.send("reset", env, map[string]any{"options": map[string]any{"task": "shopping.35"}})))
	res = okResult(t, wait(t, cl.send("state_diff", env, map[string]any{"queries": []any{check}})))
	if v := res["queries"].([]any)[0].(map[string]any); v["base"] != "0" || v["now"] != "0" {
		t.Errorf("after a reset the check's values = %v, want 0 and 0", v)
	}

	// The open site keeps no state: make with state_diff says so.
	e := errOf(wait(t, cl.send("make", "", map[string]any{"site": "open", "start_url": pageURL(0), "state_diff": true})))
	if e["code"] != "not_supported" || !strings.Contains(e["message"].(string), "state_db") {
		t.Errorf("make on the open site with state_diff: %v", e)
	}
}

func errOf(r map[string]any) map[string]any {
	if e, ok := r["error"].(map[string]any); ok {
		return e
	}
	return map[string]any{}
}

func okResult(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	if r["ok"] != true {
		t.Fatalf("request failed: %v", r["error"])
	}
	return r["result"].(map[string]any)
}

func toInt(v any) int {
	switch x := v.(type) {
	case int8:
		return int(x)
	case int16:
		return int(x)
	case int32:
		return int(x)
	case int64:
		return int(x)
	case uint8:
		return int(x)
	case uint16:
		return int(x)
	case uint32:
		return int(x)
	case uint64:
		return int(x)
	case float64:
		return int(x)
	}
	return -1
}
