package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

// Catalog is a server.Factory that serves sites from definitions, each on
// its backend (local processes or Incus containers), with their task sets,
// plus the open site. New makes one from sites and backends its caller
// owns; Open makes one from Options and owns what it opened.
type Catalog struct {
	open     server.OpenFactory
	sites    map[string]*hosting.Site
	order    []string
	backends map[string]hosting.Backend
	missing  map[string]string // backend name -> why it is not available
	tasks    map[string]*TaskSet
	sets     map[string][]*TaskSet      // further named task sets by site (WebArena-Verified)
	absent   map[string]server.SiteInfo // sites listed but not servable here
	close    func()                     // frees what Open opened
}

var _ server.Factory = (*Catalog)(nil)

// New serves sites on backends (which the caller closes). unavailable
// maps a backend name to why it is missing here; its sites are listed but
// cannot start.
func New(sites []*hosting.Site, backends []hosting.Backend, unavailable map[string]string) *Catalog {
	c := &Catalog{sites: map[string]*hosting.Site{}, backends: map[string]hosting.Backend{}, missing: unavailable}
	for _, b := range backends {
		c.backends[b.Name()] = b
	}
	for _, s := range sites {
		c.sites[s.Name] = s
		c.order = append(c.order, s.Name)
	}
	return c
}

// SetUnavailable lists a site that cannot start on this server, with why
// (and what to do) in its description; make on it fails with that text.
func (c *Catalog) SetUnavailable(name, why string) {
	if c.absent == nil {
		c.absent = map[string]server.SiteInfo{}
	}
	c.absent[name] = server.SiteInfo{Name: name, Description: "unavailable: " + why, Backend: "none"}
}

// SetTasks gives a site its task set.
func (c *Catalog) SetTasks(site string, st *TaskSet) {
	if c.tasks == nil {
		c.tasks = map[string]*TaskSet{}
	}
	c.tasks[site] = st
}

// Sites lists the open site and every defined site.
func (c *Catalog) Sites() []server.SiteInfo {
	out := c.open.Sites()
	for _, name := range c.order {
		s := c.sites[name]
		info := server.SiteInfo{Name: s.Name, Description: s.Description, Backend: s.Backend(), Tasks: c.taskCount(s.Name)}
		if why, ok := c.missing[s.Backend()]; ok {
			info.Description = strings.TrimSpace(info.Description + " (unavailable: " + why + ")")
		}
		out = append(out, info)
	}
	for _, name := range c.multiNames() {
		out = append(out, server.SiteInfo{Name: name, Description: "sites " + strings.Join(siteNames(name), " and ") + " in one environment, with the tasks that need them all", Backend: c.sites[siteNames(name)[0]].Backend()})
	}
	for _, info := range c.absent {
		out = append(out, info)
	}
	return out
}

// taskCount counts a site's listed tasks.
func (c *Catalog) taskCount(site string) int {
	n := 0
	if st := c.tasks[site]; st != nil {
		n = st.count()
	}
	return n + len(c.listedSets(site))
}

// multiNames lists the multi-site names that have task sets, in order.
func (c *Catalog) multiNames() []string {
	var out []string
	for name := range c.tasks {
		if strings.Contains(name, server.SiteSep) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// known reports whether site names a site or a combination of sites.
func (c *Catalog) known(site string) bool {
	for _, n := range siteNames(site) {
		if _, ok := c.sites[n]; !ok {
			return false
		}
	}
	return true
}

// Tasks lists a site's tasks (every site's when site is "").
func (c *Catalog) Tasks(site string) ([]server.TaskInfo, error) {
	if site == "open" {
		return []server.TaskInfo{}, nil
	}
	if site == "" {
		out := []server.TaskInfo{}
		for _, name := range append(append([]string{}, c.order...), c.multiNames()...) {
			if st := c.tasks[name]; st != nil {
				out = append(out, st.infos(name)...)
			}
			out = append(out, c.listedSets(name)...)
		}
		return out, nil
	}
	if !c.known(site) {
		return nil, server.BadRequest(fmt.Errorf("unknown site %q", site))
	}
	out := []server.TaskInfo{}
	if st := c.tasks[site]; st != nil {
		out = st.infos(site)
	}
	return append(out, c.listedSets(site)...), nil
}

// Make starts an instance of the site.
func (c *Catalog) Make(ctx context.Context, spec server.MakeSpec) (server.Instance, error) {
	if spec.Site == "open" {
		return c.open.Make(ctx, spec)
	}
	if a, ok := c.absent[spec.Site]; ok {
		return nil, server.Unconfigured(fmt.Errorf("site %s is %s", spec.Site, a.Description))
	}
	s, ok := c.sites[spec.Site]
	if !ok && !strings.Contains(spec.Site, server.SiteSep) {
		names := append([]string{"open"}, c.order...)
		return nil, server.BadRequest(fmt.Errorf("unknown site %q; this server has: %s (and combinations like a%sb)", spec.Site, strings.Join(names, ", "), server.SiteSep))
	}
	st, err := c.taskSet(spec)
	if err != nil {
		return nil, server.BadRequest(err)
	}
	if spec.Task != "" {
		if st == nil {
			return nil, server.BadRequest(fmt.Errorf("site %s has no tasks", spec.Site))
		}
		if err := st.check(spec.Site, spec.Task); err != nil {
			return nil, server.BadRequest(err) // an unknown task fails before an instance starts
		}
	}
	if s == nil {
		parts, err := c.startParts(ctx, siteNames(spec.Site), spec)
		if err != nil {
			return nil, err
		}
		return newMultiInstance(spec.Site, parts, spec, st), nil
	}
	b, ok := c.backends[s.Backend()]
	if !ok {
		return nil, server.Unconfigured(fmt.Errorf("site %s runs on %s, which is not available on this server: %s", s.Name, s.Backend(), c.missing[s.Backend()]))
	}
	in, err := b.Start(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("start site %s: %w", s.Name, err)
	}
	return newHostedInstance(s, in, spec, st), nil
}

// AddTaskSet gives site a further task set (st.Name names it in make's
// task_set; st.IDPrefix starts its task ids).
func (c *Catalog) AddTaskSet(site string, st *TaskSet) {
	if c.sets == nil {
		c.sets = map[string][]*TaskSet{}
	}
	c.sets[site] = append(c.sets[site], st)
}

// taskSet is the task set an environment of spec runs: the one make's
// task_set names, else the one whose id prefix the task has, else the
// site's own.
func (c *Catalog) taskSet(spec server.MakeSpec) (*TaskSet, error) {
	if spec.TaskSet != "" {
		names := []string{}
		if st := c.tasks[spec.Site]; st != nil {
			if st.Name == spec.TaskSet {
				return st, nil
			}
			names = append(names, st.Name)
		}
		for _, st := range c.sets[spec.Site] {
			if st.Name == spec.TaskSet {
				return st, nil
			}
			names = append(names, st.Name)
		}
		return nil, server.BadRequest(fmt.Errorf("site %s has no task set %q (it has: %s)", spec.Site, spec.TaskSet, strings.Join(names, ", ")))
	}
	for _, st := range c.sets[spec.Site] {
		if st.IDPrefix != "" && !st.Unlisted && strings.HasPrefix(spec.Task, st.IDPrefix) {
			return st, nil
		}
	}
	return c.tasks[spec.Site], nil
}

// listedSets lists the tasks of site's further sets.
func (c *Catalog) listedSets(site string) []server.TaskInfo {
	var out []server.TaskInfo
	for _, st := range c.sets[site] {
		if !st.Unlisted {
			out = append(out, st.infos(site)...)
		}
	}
	return out
}

// Close frees what Open opened: the Verified grader and the backends. A
// Catalog made with New owns nothing; its Close does nothing.
func (c *Catalog) Close() {
	if c.close != nil {
		c.close()
	}
}

// TaskSet returns the site's own task set (nil when it has none).
func (c *Catalog) TaskSet(site string) *TaskSet { return c.tasks[site] }

// SitesWithTasks lists the defined sites that have a task set with
// oracles to replay (not MiniWoB's pages), in order.
func (c *Catalog) SitesWithTasks() []string {
	var out []string
	for _, name := range c.order {
		if st := c.tasks[name]; st != nil && st.MiniWoB == nil {
			out = append(out, name)
		}
	}
	return out
}

// TaskScripts lists the oracle and wrong sequences of every task of
// sites' own task sets, in id order, with their placeholders filled at the
// sites' canonical origins, for the server's check loop (CheckTasks).
func (c *Catalog) TaskScripts(sites []string) ([]server.TaskScripts, error) {
	var out []server.TaskScripts
	for _, site := range sites {
		st := c.tasks[site]
		if st == nil {
			return nil, fmt.Errorf("site %s has no tasks", site)
		}
		if st.MiniWoB != nil {
			return nil, fmt.Errorf("site %s's tasks are MiniWoB's pages, which grade themselves and have no oracle to replay (python/tests/test_miniwob.py plays scripted solutions)", site)
		}
		origins := map[string]string{}
		if def := c.sites[site]; def != nil {
			origins = st.roleOrigins(def.Origin)
		}
		for _, n := range st.ids() {
			id := st.IDPrefix + site + "." + strconv.Itoa(n)
			// The sequences' placeholders (goto("__SITE__/...")) as the
			// episode's task has them.
			t, err := tasks.Instantiate(st.Set.ByID[n], origins)
			if err != nil {
				return nil, fmt.Errorf("task %s: %w", id, err)
			}
			login := ""
			if t.Login != nil {
				b, err := json.Marshal(t.Login)
				if err != nil {
					return nil, fmt.Errorf("task %s: login: %w", id, err)
				}
				login = string(b)
			}
			login += t.StorageState
			out = append(out, server.TaskScripts{Site: site, Task: id, Oracle: t.Oracle, Wrong: t.Wrong, Solutions: t.Solutions,
				Intent: t.Intent, Category: t.Category, Evals: t.Eval.Types, AnswerType: t.Eval.AnswerType, Login: login})
		}
	}
	return out, nil
}
