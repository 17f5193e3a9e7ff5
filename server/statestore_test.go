package server_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// state_diff on sites whose state is not one SQLite file (a definition's
// state:, the notes test site in its three kinds): a null episode changed
// nothing; a note the agent saves is one inserted row (of table files,
// with its text and JSON; of the database's table notes), and a check on
// it is 0 at the start and 1 now; after a reset the diff is empty again.
// notes-mysql: MariaDB, read with the mysql client.
func TestStateDiffOfSitesWhoseStateIsFilesOrADatabase(t *testing.T) {
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
		{"notes-mysql", `SELECT COUNT(*) FROM notes WHERE title = ?`, func(c map[string]any) bool {
			row := c["row"].(map[string]any)
			return c["table"] == "notes" && row["slug"] == "hiker" && row["title"] == "hiker" && toInt(row["id"]) == 2
		}},
	} {
		t.Run(tc.site, func(t *testing.T) {
			t.Parallel()
			cl, env := storageSiteEnv(t, tc.site)
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

// The notes site on Incus, its state files declared: the same state_diff
// as on the local backend, read by sh and tar in the container, relative
// to the image's $DATA_DIR. An image of the notes app made of this host's
// Python, sh and tar (nothing can be pulled here).
func TestStateDiffOfFilesOnIncus(t *testing.T) {
	t.Parallel()
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Fatalf("the image is made of this host's Python: %v (apt-get install python3)", err)
	}
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	tar, err := exec.LookPath("tar")
	if err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs("../examples/storage-sites/notes")
	if err != nil {
		t.Fatal(err)
	}
	version := filepath.Base(python)
	img, err := hostingtest.HostImage(hostingtest.ImageSpec{
		Files: map[string]string{
			"/usr/bin/python3": python, "/usr/bin/env": "/usr/bin/env", "/bin/sh": sh, "/usr/bin/tar": tar,
			"/usr/lib/" + version:      "/usr/lib/" + version,
			"/site/notes/app.py":       filepath.Join(src, "app.py"),
			"/data/notes/welcome.json": filepath.Join(src, "data", "notes", "welcome.json"),
		},
		Skip:       []string{"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "config-" + strings.TrimPrefix(version, "python") + "-x86_64-linux-gnu"},
		Entrypoint: []string{"/usr/bin/python3", "/site/notes/app.py", "--store", "files"},
		Env:        []string{"PATH=/usr/bin:/bin", "DATA_DIR=/data", "PORT=8080"},
		WorkingDir: "/site",
		Port:       8080,
	})
	if err != nil {
		t.Fatal(err)
	}
	const alias = "webserv-test-notes-files"
	m := incusWith(t, img, alias)
	site, err := hosting.ParseSite([]byte("name: notes-files\nincus: {image: "+alias+"}\nport: 8080\nready: {path: /healthz, timeout_ms: 60000}\nstate: {files: [notes]}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New([]*hosting.Site{site}, []hosting.Backend{m}, nil)
	srv := server.New(zap.NewNop(), browser, f, server.Config{Env: envConfig(), MaxCreating: 2, MaxEnvs: 4})
	t.Cleanup(func() { _ = srv.Close() })
	cl := dial(t, serve(t, srv))
	env := okResult(t, wait(t, cl.send("make", "", map[string]any{"site": "notes-files", "state_diff": true, "options": map[string]any{"start_url": "/"}})))["env"].(string)
	if d := okResult(t, wait(t, cl.send("state_diff", env, nil)))["diff"].(map[string]any); len(d["changes"].([]any)) != 0 {
		t.Errorf("a null episode: %v", d)
	}
	if _, err := play(cl, env, []string{`type("new-note.title", "hiker", enter=True)`}); err != nil {
		t.Fatal(err)
	}
	d := okResult(t, wait(t, cl.send("state_diff", env, nil)))["diff"].(map[string]any)
	changes := d["changes"].([]any)
	if len(changes) != 1 || changes[0].(map[string]any)["row"].(map[string]any)["path"] != "notes/hiker.json" {
		t.Errorf("saving a note on Incus: %v", d)
	}
}

// Snapshots of the local backend keep a site's state wherever it is kept:
// a note saved before the snapshot is there after a restore and in a
// fork, one saved after it is not (notes-pg, notes-mysql: the rows of
// their database, not the seed a fresh start makes).
func TestSnapshotsKeepStateInFilesOrADatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ site, check string }{
		{"notes-files", `SELECT COUNT(*) FROM files WHERE json_extract(json, '$.title') = ?`},
		{"notes-pg", `SELECT COUNT(*) FROM notes WHERE title = ?`},
		{"notes-mysql", `SELECT COUNT(*) FROM notes WHERE title = ?`},
	} {
		t.Run(tc.site, func(t *testing.T) {
			t.Parallel()
			cl, env := storageSiteEnv(t, tc.site)
			has := func(env, title string) string {
				t.Helper()
				res := okResult(t, wait(t, cl.send("state_diff", env, map[string]any{"queries": []any{map[string]any{"sql": tc.check, "args": []any{title}}}})))
				q := res["queries"].([]any)[0].(map[string]any)
				if q["error"] != nil {
					t.Fatalf("the check of %q: %v", title, q)
				}
				return q["now"].(string)
			}
			save := func(env, title string) {
				t.Helper()
				if _, err := play(cl, env, []string{`goto("/")`, `type("new-note.title", "` + title + `", enter=True)`}); err != nil {
					t.Fatal(err)
				}
				if n := has(env, title); n != "1" {
					t.Fatalf("after saving %q the state has %s of it, want 1", title, n)
				}
			}
			save(env, "hiker")
			okResult(t, wait(t, cl.send("snapshot", env, map[string]any{"name": "saved"})))
			save(env, "later")

			forked := okResult(t, wait(t, cl.send("fork", env, map[string]any{"name": "saved", "n": 1})))
			fork := forked["envs"].([]any)[0].(map[string]any)["env"].(string)
			restored := okResult(t, wait(t, cl.send("restore", env, map[string]any{"name": "saved"})))
			if html := obsOf(restored)["html"].(string); !strings.Contains(html, "hiker") || strings.Contains(html, "later") {
				t.Errorf("the page after the restore shows the notes of another state: %q", html)
			}
			for _, e := range []struct{ name, env string }{{"restored", env}, {"forked", fork}} {
				if n := has(e.env, "hiker"); n != "1" {
					t.Errorf("the %s instance has %s notes saved before the snapshot, want 1", e.name, n)
				}
				if n := has(e.env, "later"); n != "0" {
					t.Errorf("the %s instance has %s notes saved after the snapshot, want 0", e.name, n)
				}
				if n := has(e.env, "Welcome"); n != "1" {
					t.Errorf("the %s instance has %s seed notes, want 1", e.name, n)
				}
			}
			// Their futures are their own: a note saved in the fork is not in the restored instance.
			save(fork, "forked")
			if n := has(env, "forked"); n != "0" {
				t.Errorf("the fork's note is in the restored instance too (%s)", n)
			}
		})
	}
}

// storageSiteEnv serves examples/storage-sites/<site>.yaml and makes an
// environment of it with state diffs on, at its start page.
func storageSiteEnv(t *testing.T, site string) (*client, string) {
	t.Helper()
	def, err := filepath.Abs("../examples/storage-sites/" + site + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, cl := trackerServer(t, def)
	env := okResult(t, wait(t, cl.send("make", "", map[string]any{"site": site, "state_diff": true, "options": map[string]any{"start_url": "/"}})))["env"].(string)
	return cl, env
}
