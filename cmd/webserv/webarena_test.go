package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/tasks"
)

// A role whose WebArena image has been imported runs that image with the
// WebArena tasks of that role alone; roles without one are not touched.
// (The image here is the test site under a WebArena alias: what is checked
// is the selection, not Magento or GitLab.) Needs incusd.
func TestWebArenaImageReplacesItsRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A prefix of this run's own: other runs may import under theirs.
	prefix := "webserv-test-wa-" + randomSuffix() + "-"
	importTestSite(ctx, t, prefix+"gitlab")
	c, err := incusmgr.Client(incusmgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sites, sets, err := webarenaSites(c, webarenaOptions{prefix: prefix, tasks: "../../../shared/data/webarena/test.raw.json"}, &tasks.Grader{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sites) != 1 || sites[0].Name != "gitlab" || sites[0].Incus.Image != prefix+"gitlab" || sites[0].Port != 8023 {
		t.Fatalf("sites = %+v", sites)
	}
	st := sets["gitlab"]
	if st == nil || st.Variant != "webarena" || st.Name != "webarena" {
		t.Fatalf("gitlab task set = %+v", st)
	}
	for _, tk := range st.Set.Tasks {
		if len(tk.Sites) != 1 || tk.Sites[0] != "gitlab" {
			t.Fatalf("task %d of sites %v in the gitlab set", tk.ID, tk.Sites)
		}
	}
	// WebArena has 180 tasks on GitLab alone (and 18 more with reddit).
	if n := len(st.Set.Tasks); n != 180 {
		t.Errorf("%d gitlab tasks, want 180", n)
	}
	if _, ok := sets["shopping"]; ok {
		t.Error("shopping has no WebArena image here and must stay bundled")
	}
}

// With the images of several roles present, the tasks that need those
// roles together are offered under the joined site name; tasks that need a
// role without an image here (map, wikipedia) are not.
func TestWebArenaMultiSiteTasks(t *testing.T) {
	for _, c := range []struct {
		file string
		want map[string]int
	}{
		{"test.raw.json", map[string]int{"gitlab+reddit": 18, "shopping+reddit": 5}},
		{"test_webarena_lite.raw.json", map[string]int{"gitlab+reddit": 4, "shopping+reddit": 1}},
	} {
		set, err := tasks.LoadWebArena("../../../shared/data/webarena/"+c.file, nil)
		if err != nil {
			t.Fatal(err)
		}
		var served []*hosting.Site
		for _, name := range []string{"shopping", "cms", "gitlab", "reddit"} {
			served = append(served, &hosting.Site{Name: name})
		}
		sets := multiSiteSets(set, served, "webarena", "", &tasks.Grader{})
		got := map[string]int{}
		for k, st := range sets {
			got[k] = len(st.Set.Tasks)
			for _, tk := range st.Set.Tasks {
				if st.Set.ByID[tk.ID] == nil || len(tk.Sites) != 2 {
					t.Errorf("%s: task %d", k, tk.ID)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: multi-site sets %v, want %v", c.file, got, c.want)
		}
		// Without reddit's image, none of these run.
		if n := len(multiSiteSets(set, served[:3], "webarena", "", &tasks.Grader{})); n != 0 {
			t.Errorf("%s: %d multi-site sets without reddit", c.file, n)
		}
	}
}
