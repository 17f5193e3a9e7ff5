package main

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
}

var webarenaRoles = []webarenaRole{
	{"shopping", "shopping", "shopping", 80, "/"},
	{"cms", "shopping_admin", "shopping-admin", 80, "/admin"},
	{"gitlab", "gitlab", "gitlab", 8023, "/"},
}

// webarenaOptions say where WebArena's parts are.
type webarenaOptions struct {
	prefix  string // image alias prefix, "webarena-"
	tasks   string // test.raw.json or test_webarena_lite.raw.json
	authDir string // storage states
}

// webarenaSites returns a site definition and task set for each role
// whose WebArena image has been imported into Incus (alias prefix+image).
// Tasks are those of the file whose only site is the role (multi-site
// tasks need several sites in one environment, which is not supported yet).
func webarenaSites(c incus.InstanceServer, o webarenaOptions, grader *tasks.Grader) ([]*hosting.Site, map[string]*server.SiteTasks, error) {
	var set *tasks.Set
	name := "webarena"
	if o.tasks != "" {
		var err error
		if set, err = tasks.LoadWebArena(o.tasks, nil); err != nil {
			return nil, nil, err
		}
		if strings.Contains(strings.ToLower(o.tasks), "lite") {
			name = "webarena-lite"
		}
	}
	var sites []*hosting.Site
	sets := map[string]*server.SiteTasks{}
	for _, r := range webarenaRoles {
		alias := o.prefix + r.image
		if _, _, err := c.GetImageAlias(alias); err != nil {
			continue
		}
		s := &hosting.Site{Name: r.site, Description: "WebArena's " + r.role + " (image " + alias + ")",
			Incus: &hosting.IncusRun{Image: alias}, Port: r.port, StartPath: r.start, Ready: hosting.Probe{Path: "/", TimeoutMs: 300000}}
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
			return nil, nil, fmt.Errorf("%s has no tasks for %s alone", o.tasks, r.role)
		}
		sets[r.site] = &server.SiteTasks{Set: sub, Name: name, Variant: "webarena", Roles: []string{r.role},
			Admin: tasks.Account{Username: "admin", Password: "admin1234"}, AuthDir: o.authDir, Grader: grader}
	}
	return sites, sets, nil
}
