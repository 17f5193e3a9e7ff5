package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
)

// Validation finds what loading lets through, each problem naming its
// task: an oracle action that does not parse, a setup program the local
// backend would not find.
func TestValidateSiteTasksNamesEachProblem(t *testing.T) {
	dir := t.TempDir()
	def := "name: notes\nlocal:\n  command: [./notes, --port, \"{port}\"]\nready:\n  path: /\ntasks: [tasks.yaml]\n"
	tasksFile := `- task_id: 1
  intent: Open the second note.
  eval:
    eval_types: [url_match]
    reference_url: __SITE__/notes/2
  oracle: ['clack("note-2")', 'stop("")']
  wrong: ['stop("")']
- task_id: 2
  intent: Open the first note.
  setup: [[./seed.sh, one]]
  eval:
    eval_types: [url_match]
    reference_url: __SITE__/notes/1
  oracle: ['goto("__SITE__/notes/1")', 'stop("")']
  wrong: ['stop("")']
`
	for name, text := range map[string]string{"notes.yaml": def, "tasks.yaml": tasksFile} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	site, err := hosting.LoadSite(filepath.Join(dir, "notes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, n, err := ValidateSiteTasks(site)
	if n != 2 || len(files) != 1 || files[0].Count != 2 {
		t.Errorf("%d tasks, files %+v", n, files)
	}
	for _, want := range []string{`task notes.1: oracle[0] "clack(\"note-2\")"`, "task notes.2: program ./seed.sh"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validation: %v; want it to say %s", err, want)
		}
	}
}
