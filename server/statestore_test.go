package server_test

import (
	"path/filepath"
	"testing"
)

// state_diff on sites whose state is not one SQLite file (a definition's
// state:, the notes test site in its two kinds): a null episode changed
// nothing; a note the agent saves is one inserted row (of table files,
// with its text and JSON; of the database's table notes), and a check on
// it is 0 at the start and 1 now; after a reset the diff is empty again.
func TestStateDiffOfSitesWhoseStateIsFilesOrPostgres(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		site, check string
		row         func(c map[string]any) bool
	}{
		{"notes-files", `SELECT COUNT(*) FROM files WHERE json_extract(json, '$.title') = ?`, func(c map[string]any) bool {
			row := c["row"].(map[string]any)
			return c["table"] == "files" && row["path"] == "notes/hiker.json" && row["json"] == `{"title": "hiker", "body": ""}`
		}},
		{"notes-pg", `SELECT COUNT(*) FROM notes WHERE title = ?`, func(c map[string]any) bool {
			row := c["row"].(map[string]any)
			return c["table"] == "notes" && row["slug"] == "hiker" && row["title"] == "hiker" && toInt(row["id"]) == 2
		}},
	} {
		t.Run(tc.site, func(t *testing.T) {
			t.Parallel()
			def, err := filepath.Abs("../examples/storage-sites/" + tc.site + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, _, cl := trackerServer(t, def)
			env := okResult(t, wait(t, cl.send("make", "", map[string]any{"site": tc.site, "state_diff": true, "options": map[string]any{"start_url": "/"}})))["env"].(string)
			check := map[string]any{"sql": tc.check, "args": []any{"hiker"}}
			diff := func() (map[string]any, map[string]any) {
				t.Helper()
				res := okResult(t, wait(t, cl.send("state_diff", env, map[string]any{"queries": []any{check}})))
				return res["diff"].(map[string]any), res["queries"].([]any)[0].(map[string]any)
			}
			empty := func(when string) {
				t.Helper()
				d, v := diff()
				if n := len(d["changes"].([]any)); n != 0 || toInt(d["total"]) != 0 || d["db"] != "@state" {
					t.Errorf("%s: the diff = %v, want no change of @state", when, d)
				}
				if v["base"] != "0" || v["now"] != "0" || v["error"] != nil {
					t.Errorf("%s: the check = %v, want 0 and 0", when, v)
				}
			}
			empty("a null episode")

			if _, err := play(cl, env, []string{`type("new-note.title", "hiker", enter=True)`}); err != nil {
				t.Fatal(err)
			}
			d, v := diff()
			changes := d["changes"].([]any)
			if len(changes) != 1 {
				t.Fatalf("saving a note changed %d rows, want 1: %v", len(changes), d)
			}
			if c := changes[0].(map[string]any); c["op"] != "insert" || !tc.row(c) {
				t.Errorf("the change = %v, want the new note's insert", c)
			}
			if v["base"] != "0" || v["now"] != "1" {
				t.Errorf("the check = %v, want 0 at the start and 1 now", v)
			}

			okResult(t, wait(t, cl.send("reset", env, map[string]any{"options": map[string]any{"start_url": "/"}})))
			empty("after a reset")
		})
	}
}
