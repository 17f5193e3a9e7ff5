package server_test

import (
	"path/filepath"
	"testing"
)

// state_diff on a site whose state is files (a definition's state: files,
// the notes test site): a null episode changed nothing; a note the agent
// saves is one inserted row of table files, with its text and JSON, and a
// check on its field is 0 at the start and 1 now; after a reset the diff
// is empty again.
func TestStateDiffOfASiteWhoseStateIsFiles(t *testing.T) {
	t.Parallel()
	def, err := filepath.Abs("../examples/storage-sites/notes-files.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, cl := trackerServer(t, def)
	env := okResult(t, wait(t, cl.send("make", "", map[string]any{"site": "notes-files", "state_diff": true, "options": map[string]any{"start_url": "/"}})))["env"].(string)

	check := map[string]any{"sql": `SELECT COUNT(*) FROM files WHERE json_extract(json, '$.title') = ?`, "args": []any{"hiker"}}
	empty := func(when string) {
		t.Helper()
		res := okResult(t, wait(t, cl.send("state_diff", env, map[string]any{"queries": []any{check}})))
		diff := res["diff"].(map[string]any)
		if n := len(diff["changes"].([]any)); n != 0 || toInt(diff["total"]) != 0 || diff["db"] != "@state" {
			t.Errorf("%s: the diff = %v, want no change of @state", when, diff)
		}
		if v := res["queries"].([]any)[0].(map[string]any); v["base"] != "0" || v["now"] != "0" {
			t.Errorf("%s: the check = %v, want 0 and 0", when, v)
		}
	}
	empty("a null episode")

	if _, err := play(cl, env, []string{`type("new-note.title", "hiker", enter=True)`}); err != nil {
		t.Fatal(err)
	}
	res := okResult(t, wait(t, cl.send("state_diff", env, map[string]any{"queries": []any{check}})))
	diff := res["diff"].(map[string]any)
	changes := diff["changes"].([]any)
	if len(changes) != 1 {
		t.Fatalf("saving a note changed %d rows, want 1: %v", len(changes), diff)
	}
	c := changes[0].(map[string]any)
	row := c["row"].(map[string]any)
	if c["table"] != "files" || c["op"] != "insert" || row["path"] != "notes/hiker.json" || row["json"] != `{"title": "hiker", "body": ""}` {
		t.Errorf("the change = %v, want the insert of notes/hiker.json", c)
	}
	if v := res["queries"].([]any)[0].(map[string]any); v["base"] != "0" || v["now"] != "1" {
		t.Errorf("the check = %v, want 0 at the start and 1 now", v)
	}

	okResult(t, wait(t, cl.send("reset", env, map[string]any{"options": map[string]any{"start_url": "/"}})))
	empty("after a reset")
}
