package catalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/tasks"
)

// importTestSite imports internal/testsite's image into the test's incusd
// under alias, removed with the test.
func importTestSite(ctx context.Context, t *testing.T, alias string) {
	t.Helper()
	dir := t.TempDir()
	img, err := hostingtest.SiteImage(hostingtest.BuildTestSite(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := incusmgr.WriteLayout(filepath.Join(dir, "oci"), img); err != nil {
		t.Fatal(err)
	}
	c, err := incusmgr.Client(incusmgr.Config{})
	if err != nil {
		t.Fatalf("%v (run scripts/incus-setup.sh)", err)
	}
	// Registered before the import, so that an import failing half-way is
	// cleaned up too.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := incusmgr.RemoveImage(ctx, c, alias); err != nil {
			t.Errorf("remove test image %s: %v", alias, err)
		}
	})
	if _, err := incusmgr.ImportImage(ctx, c, filepath.Join(dir, "oci"), alias); err != nil {
		t.Fatal(err)
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

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
	sites, sets, err := webarenaSites(c, WebArena{ImagePrefix: prefix, Tasks: "../../../shared/data/webarena/test.raw.json"}, &tasks.Grader{})
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

// A Verified dataset is split as WebArena's configs are: each served
// role's tasks of that role alone under its site, with WebArena's admin
// account and storage states; roles not served get no set.
func TestWebArenaRoleSets(t *testing.T) {
	set, err := tasks.LoadWebArena("../../../shared/data/webarena/test.raw.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	served := []*hosting.Site{{Name: "shopping"}, {Name: "gitlab"}}
	sets := webarenaRoleSets(set, served, "webarena-verified", "/auth")
	if len(sets) != 2 || sets["cms"] != nil {
		t.Fatalf("sets for %v", sets)
	}
	for site, role := range map[string]string{"shopping": "shopping", "gitlab": "gitlab"} {
		st := sets[site]
		if st.Name != "webarena-verified" || st.Variant != "webarena" || fmt.Sprint(st.Roles) != "["+role+"]" || st.AuthDir != "/auth" || st.Admin.Username != "admin" {
			t.Errorf("%s: %+v", site, st)
		}
		for _, tk := range st.Set.Tasks {
			if fmt.Sprint(tk.Sites) != "["+role+"]" || st.Set.ByID[tk.ID] == nil {
				t.Errorf("%s: task %d of sites %v", site, tk.ID, tk.Sites)
			}
		}
	}
	if n := len(sets["gitlab"].Set.Tasks); n != 180 {
		t.Errorf("%d gitlab tasks, want 180", n)
	}
}
