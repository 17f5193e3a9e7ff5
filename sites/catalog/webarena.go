package catalog

import (
	"fmt"
	"slices"
	"strings"

	incus "github.com/lxc/incus/v6/client"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

// webarenaRole is a site role WebArena's images can serve.
type webarenaRole struct {
	site  string // our site name
	role  string // WebArena's site name (placeholder and task "sites")
	image string // alias suffix after the prefix
	port  int    // the port the image's server listens on
	start string
	// public is the port WebArena publishes the role on; with the
	// --webarena-host it makes the site's canonical origin, the base URL
	// the image has baked in (Magento's base_url, GitLab's external_url).
	public int
}

var webarenaRoles = []webarenaRole{
	{"shopping", "shopping", "shopping", 80, "/", 7770},
	{"cms", "shopping_admin", "shopping-admin", 80, "/admin", 7780},
	{"gitlab", "gitlab", "gitlab", 8023, "/", 8023},
	{"reddit", "reddit", "reddit", 80, "/", 9999},
}

// The map (an OpenStreetMap stack on its own machine) and wikipedia (kiwix
// with a mounted .zim file) are not single images, so their roles and the
// tasks that need them are not offered.

// WebArena says where WebArena's parts are.
type WebArena struct {
	// ImagePrefix is the alias prefix of imported WebArena images:
	// <prefix>shopping, <prefix>shopping-admin, <prefix>gitlab and
	// <prefix>reddit replace the bundled site of their role.
	ImagePrefix string
	// Tasks is WebArena's or WebArena-Lite's task file (test.raw.json,
	// test_webarena_lite.raw.json) for the roles served from images.
	Tasks string
	// AuthDir holds WebArena's storage states (<site>_state.json) for
	// tasks that start signed in.
	AuthDir string
	// Host is the host the images have baked into their base URLs
	// (DefaultWebArenaHost when empty).
	Host string
}

// webarenaSites returns a site definition and task set for each role
// whose WebArena image has been imported into Incus (alias prefix+image),
// with the tasks of the file whose only site is the role; and, for each
// set of roles that WebArena's multi-site tasks need and whose images are
// all present, a task set under the joined site name ("gitlab+reddit").
func webarenaSites(c incus.InstanceServer, o WebArena, grader *tasks.Grader) ([]*hosting.Site, map[string]*TaskSet, error) {
	var set *tasks.Set
	name := "webarena"
	if o.Tasks != "" {
		var err error
		if set, err = tasks.LoadWebArena(o.Tasks, nil); err != nil {
			return nil, nil, err
		}
		if strings.Contains(strings.ToLower(o.Tasks), "lite") {
			name = "webarena-lite"
		}
	}
	var sites []*hosting.Site
	sets := map[string]*TaskSet{}
	for _, r := range webarenaRoles {
		alias := o.ImagePrefix + r.image
		if _, _, err := c.GetImageAlias(alias); err != nil {
			continue
		}
		host := o.Host
		if host == "" {
			host = DefaultWebArenaHost
		}
		s := &hosting.Site{Name: r.site, Description: "WebArena's " + r.role + " (image " + alias + ")",
			Origin: fmt.Sprintf("http://%s:%d", host, r.public),
			Incus:  &hosting.IncusRun{Image: alias}, Port: r.port, StartPath: r.start, Ready: hosting.Probe{Path: "/", TimeoutMs: 300000}}
		if err := s.Validate(); err != nil {
			return nil, nil, err
		}
		sites = append(sites, s)
		if set == nil {
			continue
		}
		sub := &tasks.Set{ByID: map[int]*tasks.Task{}}
		for _, t := range set.Tasks {
			if slices.Equal(t.Sites, []string{r.role}) {
				sub.Tasks = append(sub.Tasks, t)
			}
		}
		for i := range sub.Tasks {
			sub.ByID[sub.Tasks[i].ID] = &sub.Tasks[i]
		}
		if len(sub.Tasks) == 0 {
			return nil, nil, fmt.Errorf("%s has no tasks for %s alone", o.Tasks, r.role)
		}
		sets[r.site] = &TaskSet{Set: sub, Name: name, Variant: "webarena", Roles: []string{r.role},
			Admin: tasks.Account{Username: "admin", Password: "admin1234"}, AuthDir: o.AuthDir, Grader: grader}
	}
	if set != nil {
		for site, st := range multiSiteSets(set, sites, name, o.AuthDir, grader) {
			sets[site] = st
		}
	}
	return sites, sets, nil
}

// DefaultWebArenaHost is the host in the base URLs WebArena's published
// setup uses (its task configs' reference deployment).
const DefaultWebArenaHost = "metis.lti.cs.cmu.edu"

// multiSiteSets groups the tasks that need several roles by their sites,
// keeping the groups whose roles are all served here, each under the
// joined site name in role order ("gitlab+reddit").
func multiSiteSets(set *tasks.Set, served []*hosting.Site, name, authDir string, grader *tasks.Grader) map[string]*TaskSet {
	bySite := map[string]string{} // role -> our site name, for roles served here
	for _, r := range webarenaRoles {
		for _, s := range served {
			if s.Name == r.site {
				bySite[r.role] = r.site
			}
		}
	}
	out := map[string]*TaskSet{}
	for _, t := range set.Tasks {
		if len(t.Sites) < 2 {
			continue
		}
		var names, roles []string
		for _, r := range webarenaRoles {
			if slices.Contains(t.Sites, r.role) {
				if _, ok := bySite[r.role]; ok {
					names, roles = append(names, r.site), append(roles, r.role)
				}
			}
		}
		if len(roles) != len(t.Sites) {
			continue // a role without its image here
		}
		key := strings.Join(names, server.SiteSep)
		st := out[key]
		if st == nil {
			st = &TaskSet{Set: &tasks.Set{ByID: map[int]*tasks.Task{}}, Name: name, Variant: "webarena", Roles: roles,
				Admin: tasks.Account{Username: "admin", Password: "admin1234"}, AuthDir: authDir, Grader: grader}
			out[key] = st
		}
		st.Set.Tasks = append(st.Set.Tasks, t)
	}
	for _, st := range out {
		for i := range st.Set.Tasks {
			st.Set.ByID[st.Set.Tasks[i].ID] = &st.Set.Tasks[i]
		}
	}
	return out
}

// webarenaVerifiedSets returns, for each WebArena role served here from
// its image, the WebArena-Verified tasks of that role alone (task_set
// "webarena-verified", ids verified.<site>.<id>) and their Hard subset
// ("webarena-verified-hard"), plus the multi-site groups whose roles are
// all served; graded by g by task id.
func webarenaVerifiedSets(g *tasks.VerifiedGrader, served []*hosting.Site, authDir string) (map[string][]*TaskSet, error) {
	out := map[string][]*TaskSet{}
	for _, subset := range []struct{ path, name string }{{g.Hello().Full, "webarena-verified"}, {g.Hello().Hard, "webarena-verified-hard"}} {
		set, err := tasks.LoadVerified(subset.path)
		if err != nil {
			return nil, err
		}
		for site, st := range webarenaRoleSets(set, served, subset.name, authDir) {
			st.IDPrefix, st.Verified, st.VerifiedByID, st.Unlisted = "verified.", g, true, subset.name != "webarena-verified"
			out[site] = append(out[site], st)
		}
	}
	return out, nil
}

// webarenaRoleSets splits set by the roles served here: each role's tasks
// of that role alone under its site, and multi-site tasks under the joined
// site name, as webarenaSites does for WebArena's own configs.
func webarenaRoleSets(set *tasks.Set, served []*hosting.Site, name, authDir string) map[string]*TaskSet {
	out := multiSiteSets(set, served, name, authDir, nil)
	for _, r := range webarenaRoles {
		if !hasSite(served, r.site) {
			continue
		}
		sub := &tasks.Set{ByID: map[int]*tasks.Task{}}
		for _, t := range set.Tasks {
			if len(t.Sites) == 1 && t.Sites[0] == r.role {
				sub.Tasks = append(sub.Tasks, t)
			}
		}
		for i := range sub.Tasks {
			sub.ByID[sub.Tasks[i].ID] = &sub.Tasks[i]
		}
		out[r.site] = &TaskSet{Set: sub, Name: name, Variant: "webarena", Roles: []string{r.role},
			Admin: tasks.Account{Username: "admin", Password: "admin1234"}, AuthDir: authDir}
	}
	return out
}

func hasSite(sites []*hosting.Site, name string) bool {
	for _, s := range sites {
		if s.Name == name {
			return true
		}
	}
	return false
}
