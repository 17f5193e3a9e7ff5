package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
)

// A site's own task may check the state its definition declares (db
// "@state", the notes-files site's task); the same task under a
// definition that declares none is refused when the tasks load, not when
// an episode is graded.
func TestStateChecksNeedADeclaredState(t *testing.T) {
	site, err := hosting.LoadSite("../../examples/storage-sites/notes-files.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := SiteTaskSet(site, nil, nil)
	if err != nil || len(st.Set.Tasks) != 1 || st.Set.Tasks[0].Eval.State[0].DB != hosting.StateTables {
		t.Fatalf("notes-files' tasks: %v, %v", st, err)
	}

	dir := t.TempDir()
	tasksFile, err := filepath.Abs("../../examples/storage-sites/notes/tasks-files.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def := "name: bare\nlocal: {command: [./app]}\ntasks: [" + tasksFile + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "bare.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	bare, err := hosting.LoadSite(filepath.Join(dir, "bare.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := SiteTaskSet(bare, nil, nil); err == nil || !strings.Contains(err.Error(), `eval.state[0].db "@state"`) || !strings.Contains(err.Error(), "declares none") {
		t.Errorf("a @state check on a site without state: %v", err)
	}
}
