package tasks_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/tasks/taskstest"
)

// Every task of WebArena-Verified and of its Hard subset, read from the
// installed package, loads and validates, with the site roles and
// placeholders the WebArena layer uses.
func TestVerifiedDatasetsLoadAndValidate(t *testing.T) {
	t.Parallel()
	h := taskstest.VerifiedGrader(t).Hello()
	if h.Version != "1.2.3" || !strings.Contains(h.Full, "site-packages") {
		t.Fatalf("grader hello %+v: want webarena-verified 1.2.3's datasets where pip installed them", h)
	}
	full, err := tasks.LoadVerified(h.Full)
	if err != nil {
		t.Fatal(err)
	}
	hard, err := tasks.LoadVerified(h.Hard)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Tasks) != 812 || len(hard.Tasks) != 258 {
		t.Fatalf("%d tasks and %d Hard ones; WebArena-Verified has 812 and 258", len(full.Tasks), len(hard.Tasks))
	}
	for _, tk := range hard.Tasks {
		if full.ByID[tk.ID] == nil {
			t.Errorf("Hard task %d is not in the full set", tk.ID)
		}
	}
	bySites := map[string]int{}
	for _, tk := range full.Tasks {
		bySites[strings.Join(tk.Sites, "+")]++
		inst, err := tasks.Instantiate(&tk, map[string]string{"shopping": "http://shop", "shopping_admin": "http://admin", "gitlab": "http://gitlab", "reddit": "http://reddit", "map": "http://map", "wikipedia": "http://wiki"})
		if err != nil || strings.Contains(inst.StartURL, "__") {
			t.Errorf("task %d: start URL %q does not instantiate: %v", tk.ID, inst.StartURL, err)
		}
	}
	if bySites["shopping"] != 187 || bySites["shopping_admin"] != 182 || bySites["gitlab"] != 180 || bySites["reddit"] != 106 || bySites["map"] != 109 {
		t.Errorf("tasks by sites: %v", bySites)
	}
	t.Logf("tasks by sites: %v", bySites)
}

// A grader that cannot start says what to do: no command, a program that
// is not there, a Python without the package's datasets.
func TestVerifiedGraderSaysWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		command []string
		want    string
	}{
		{nil, "give one like python -m webserv.verified serve"},
		{[]string{filepath.Join(t.TempDir(), "python"), "-m", "webserv.verified", "serve"}, "check the Python environment"},
		// A process that answers hello without the datasets.
		{[]string{"sh", "-c", `read line; echo '{"version": "1.2.3", "error": "No module named webarena_verified"}'`}, "pip install webarena-verified==1.2.3"},
		// A process that ends before it answers.
		{[]string{"sh", "-c", "read line; exit 3"}, "run it by hand to see why"},
	} {
		g, err := tasks.NewVerifiedGrader(ctx, nil, c.command)
		if err == nil {
			g.Close()
			t.Errorf("%q: started", c.command)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want it to say %q", c.command, err, c.want)
		}
	}
}
