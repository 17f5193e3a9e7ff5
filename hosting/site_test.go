package hosting_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
)

func TestParseSite(t *testing.T) {
	s, err := hosting.ParseSite([]byte(`
name: shop
description: the bundled shop
incus:
  image: webserv-shop
port: 8080
ready: {path: /healthz, timeout_ms: 5000}
env: {SHOP_SCALE: small}
post_start: [["/app/shop", "set-base-url", "{url}"]]
start_path: /
state_db: data/shop.db
login:
  cookies: [{name: session, value: abc}]
limits: {memory: 512MiB, cpu: "1", processes: 200}
attack_data: {command: [/app/shop, attack-data]}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Backend() != "incus" || s.Ready.Status != 200 || s.Ready.TimeoutMs != 5000 || s.Limits.Memory != "512MiB" || s.Login.Cookies[0].Value != "abc" || s.StateDB != "data/shop.db" || s.AttackData.Command[1] != "attack-data" {
		t.Errorf("parsed %+v", s)
	}
	// JSON works too, and the defaults are filled in.
	s, err = hosting.ParseSite([]byte(`{"name": "x", "local": {"command": ["./x"]}}`), "")
	if err != nil || s.Ready.Path != "/" || s.Ready.TimeoutMs != 60000 {
		t.Errorf("json: %+v %v", s, err)
	}
	bad := map[string]string{
		"no backend":        `name: x`,
		"two backends":      "name: x\nlocal: {command: [a]}\nincus: {image: y}\nport: 1",
		"bad name":          "name: Shop!\nlocal: {command: [a]}",
		"no port":           "name: x\nincus: {image: y}",
		"unknown field":     "name: x\nlocal: {command: [a]}\nprot: 8080",
		"relative path":     "name: x\nlocal: {command: [a]}\nstart_path: shop",
		"state_db out":      "name: x\nlocal: {command: [a]}\nstate_db: ../x.db",
		"state_db abs":      "name: x\nlocal: {command: [a]}\nstate_db: /x.db",
		"state and db":      "name: x\nlocal: {command: [a]}\nstate_db: x.db\nstate: {files: [notes]}",
		"state empty":       "name: x\nlocal: {command: [a]}\nstate: {}",
		"state file out":    "name: x\nlocal: {command: [a]}\nstate: {files: [../notes]}",
		"postgres no db":    "name: x\nlocal: {command: [a]}\nstate: {postgres: {host: /run}}",
		"attack_data empty": "name: x\nlocal: {command: [a]}\nattack_data: {command: []}",
	}
	for name, def := range bad {
		if _, err := hosting.ParseSite([]byte(def), ""); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLoadSites(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", "name: b\nlocal: {command: [x]}")
	write("a.json", `{"name": "a", "local": {"command": ["x"]}}`)
	write("notes.txt", "ignored")
	sites, err := hosting.LoadSites(dir)
	if err != nil || len(sites) != 2 || sites[0].Name != "a" || sites[1].Name != "b" {
		t.Fatalf("LoadSites = %v, %v", sites, err)
	}
	write("dup.yaml", "name: a\nlocal: {command: [x]}")
	if _, err := hosting.LoadSites(dir); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("duplicate site: %v", err)
	}
}

// tasks: paths are relative to the definition, globs allowed, each file
// once, in order; a pattern that matches nothing is an error naming it.
func TestSiteTaskFiles(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a.yaml", "more/2.yaml", "more/1.json"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("[]"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	def := filepath.Join(dir, "wiki.yaml")
	if err := os.WriteFile(def, []byte("name: wiki\nlocal: {command: [./wiki]}\ntasks: [a.yaml, 'more/*', a.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := hosting.LoadSite(def)
	if err != nil {
		t.Fatal(err)
	}
	files, err := s.TaskFiles()
	want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "more/1.json"), filepath.Join(dir, "more/2.yaml")}
	if err != nil || strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("task files = %v, %v; want %v", files, err, want)
	}
	s.Tasks = []string{"missing/*.yaml"}
	if _, err := s.TaskFiles(); err == nil || !strings.Contains(err.Error(), `site wiki: tasks[0] "missing/*.yaml": no such file`) {
		t.Errorf("a pattern matching nothing: %v", err)
	}
}

// A task file left beside the definitions in --sites is not read as a
// broken definition: the error says it is a task file and where task
// files belong, for a list of tasks (YAML or JSON) and a single task.
func TestLoadSitesNamesATaskFileBesideTheDefinitions(t *testing.T) {
	for name, body := range map[string]string{
		"tasks.yaml":  "- task_id: 1\n  intent: Open the issue.\n  eval: {eval_types: [url_match]}\n- task_id: 2\n  intent: Close it.\n",
		"tasks.json":  `[{"task_id": 1, "intent": "Open the issue."}]`,
		"task.json":   `{"task_id": 3, "intent": "Open the issue.", "eval": {"eval_types": ["url_match"]}}`,
		"broken.yaml": "name: x\nlocall: {command: [x]}\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := hosting.LoadSites(dir)
		if err == nil {
			t.Fatalf("%s: LoadSites accepted it", name)
		}
		msg := err.Error()
		if name == "broken.yaml" {
			// A definition with a typo keeps the parser's own message.
			if strings.Contains(msg, "not a site definition") || !strings.Contains(msg, "locall") {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		want := map[string]string{"tasks.yaml": "a list of 2 tasks", "tasks.json": "a list of 1 task", "task.json": "a task"}[name]
		for _, part := range []string{want + ", not a site definition", "tasks: list", "subfolder"} {
			if !strings.Contains(msg, part) {
				t.Errorf("%s: error %q does not say %q", name, msg, part)
			}
		}
	}
}

// A definition's state: files, postgres and mysql are read; an unknown setting,
// at any level, is refused with the nearest setting's name.
func TestSiteStateAndUnknownSettings(t *testing.T) {
	s, err := hosting.ParseSite([]byte("name: x\nlocal: {command: [a]}\nstate: {files: [notes], postgres: {database: app, host: \"{data}/run\"}}"), "")
	if err != nil || s.State == nil || s.State.Files[0] != "notes" || s.State.Postgres.Schema != "public" {
		t.Fatalf("state: %+v %v", s, err)
	}
	s, err = hosting.ParseSite([]byte("name: x\nlocal: {command: [a]}\nstate: {mysql: {database: app, socket: \"/tmp/m/{port}.sock\", user: root}}"), "")
	if err != nil || s.State.MySQL == nil || s.State.MySQL.Database != "app" || s.State.MySQL.Socket != "/tmp/m/{port}.sock" {
		t.Fatalf("state mysql: %+v %v", s, err)
	}
	for def, want := range map[string]string{
		"name: x\nlocal: {command: [a]}\nstat: {files: [notes]}":            "did you mean state?",
		"name: x\nlocal: {command: [a]}\nstate: {file: [notes]}":            "did you mean files?",
		"name: x\nlocal: {command: [a]}\nstate: {postgres: {databse: app}}": "did you mean database?",
		"name: x\nlocal: {command: [a]}\nstate: {mysql: {socket: /s}}":      "state.mysql.database: empty",
		"name: x\nlocal: {command: [a]}\nstate: {mysql: {databse: app}}":    "did you mean database?",
		"name: x\nlocal: {command: [a]}\nstate: {mysqll: {database: app}}":  "did you mean mysql?",
		"name: x\nlocal: {command: [a]}\nready: {path: /, timeout: 5}":      "did you mean timeout_ms?",
		"name: x\nlocal: {command: [a]}\nzzzzzzzzzzzzzzzzzz: 1":             "unknown field",
	} {
		_, err := hosting.ParseSite([]byte(def), "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", def, err, want)
		}
	}
}
