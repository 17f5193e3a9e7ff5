package catalog

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/miniwob"
	"github.com/webserv-rl/webserv/tasks"
)

// TaskSet is a site's task set: which tasks it has, how an episode of
// one starts (signed in where the task says so) and how it is graded.
type TaskSet struct {
	Set *tasks.Set
	// Name names the task set in info (like "bundled" or "webarena-lite").
	Name string
	// Variant says which site serves it: "bundled" or "webarena".
	Variant string
	// Roles are the task files' site names this site serves (their
	// placeholders are replaced by the site's canonical origin), like
	// shopping and shopping_admin for the bundled shop.
	Roles []string
	// Admin is the account the WebArena shopping helpers use.
	Admin tasks.Account
	// EvalToken enables the native state evaluator on the site.
	EvalToken string
	// Login returns the cookies that sign a new episode in on the site at
	// origin; hc reaches the environment's instance of it.
	Login func(ctx context.Context, hc *http.Client, origin string, l *tasks.TaskLogin) ([]envcore.Cookie, error)
	// AuthDir holds WebArena storage state files (<site>_state.json) for
	// tasks with require_login and storage_state.
	AuthDir string
	// Grader scores episodes.
	Grader *tasks.Grader
	// IDPrefix starts the set's task ids ("verified." for
	// verified.shopping.21) when the site has other sets.
	IDPrefix string
	// Verified grades the set's WebArena-Verified tasks; VerifiedByID
	// grades them as tasks of the package's dataset (by id) rather than
	// by their inline definitions (the bundled shop's Verified-style set).
	Verified     *tasks.VerifiedGrader
	VerifiedByID bool
	// Unlisted keeps the set out of the tasks op (a subset of another
	// listed set, like the Verified Hard subset).
	Unlisted bool
	// MiniWoB, when set, makes the set MiniWoB++'s task pages (Set is then
	// empty): each page starts its own episode from the reset's seed and
	// grades it (package miniwob).
	MiniWoB *miniwob.Pages
}

// count is how many tasks the set has.
func (st *TaskSet) count() int {
	if st.MiniWoB != nil {
		return len(st.MiniWoB.Tasks)
	}
	return len(st.Set.Tasks)
}

// check refuses a task id the set does not have.
func (st *TaskSet) check(site, id string) error {
	if st.MiniWoB != nil {
		if _, err := st.MiniWoB.Pick(st.miniwobName(site, id), nil); err != nil {
			return server.BadRequest(err)
		}
		return nil
	}
	_, err := st.pick(site, id, nil)
	return err
}

// miniwobName is a MiniWoB task's page name in a task id ("click-test" or
// "miniwob.click-test").
func (st *TaskSet) miniwobName(site, id string) string {
	return strings.TrimPrefix(id, site+".")
}

// ids lists the task ids in order.
func (st *TaskSet) ids() []int {
	ids := make([]int, 0, len(st.Set.Tasks))
	for _, t := range st.Set.Tasks {
		ids = append(ids, t.ID)
	}
	slices.Sort(ids)
	return ids
}

// pick chooses an episode's task: by id ("17" or "shopping.17"), else by
// seed (the same seed always gives the same task), else at random.
func (st *TaskSet) pick(site, id string, seed *int64) (*tasks.Task, error) {
	if id != "" {
		raw := strings.TrimPrefix(strings.TrimPrefix(id, st.IDPrefix), site+".")
		n, err := strconv.Atoi(raw)
		if err != nil {
			return nil, server.BadRequest(fmt.Errorf("task id %q: want a number like 17 or %s.17", id, site))
		}
		t, ok := st.Set.ByID[n]
		if !ok {
			ids := st.ids()
			return nil, server.BadRequest(fmt.Errorf("site %s has no task %d (its %s tasks are %d..%d; the tasks op lists them)", site, n, st.Name, ids[0], ids[len(ids)-1]))
		}
		return t, nil
	}
	ids := st.ids()
	if len(ids) == 0 {
		return nil, server.BadRequest(fmt.Errorf("site %s has no tasks", site))
	}
	var i int
	if seed != nil {
		i = int(uint64(*seed) % uint64(len(ids)))
	} else {
		i = rand.IntN(len(ids))
	}
	return st.Set.ByID[ids[i]], nil
}

// roleOrigins maps each of the task set's roles to origin (a site whose
// roles all live at one origin, like the bundled shop's storefront and
// admin).
func (st *TaskSet) roleOrigins(origin string) map[string]string {
	origins := map[string]string{}
	for _, r := range st.Roles {
		origins[r] = origin
	}
	return origins
}

func (st *TaskSet) infos(site string) []server.TaskInfo {
	if st.MiniWoB != nil {
		out := make([]server.TaskInfo, 0, len(st.MiniWoB.Tasks))
		for _, name := range st.MiniWoB.Tasks {
			// The goal is the page's, drawn from the reset's seed.
			out = append(out, server.TaskInfo{ID: site + "." + name, Site: site, StartURL: miniwob.URL(miniwob.Origin, name), Category: "miniwob"})
		}
		return out
	}
	out := make([]server.TaskInfo, 0, len(st.Set.Tasks))
	for _, id := range st.ids() {
		t := st.Set.ByID[id]
		out = append(out, server.TaskInfo{ID: st.IDPrefix + site + "." + strconv.Itoa(t.ID), Site: site, Goal: t.Intent, StartURL: t.StartURL, Category: t.Category, Oracle: t.Oracle, Attacks: len(t.Attacks)})
	}
	return out
}

// episode prepares a task episode; origins maps each task role (WebArena's
// site names) to the canonical origin of the site serving it, and hc
// reaches the environment's instances (sign-in). in runs the task's setup
// and checks in the environment's instance (nil where it cannot). strict
// grades WebArena's answers the typed way (strict_answers). state is the
// site whose declared state the episode's side effects are looked for in
// (nil: none are).
func (st *TaskSet) episode(ctx context.Context, site string, origins map[string]string, hc *http.Client, opts server.EpisodeOptions, task string, strict bool, in hosting.Execer, state *hosting.Site) (server.Episode, error) {
	id := opts.Task
	if id == "" {
		id = task
	}
	if st.MiniWoB != nil {
		name, err := st.MiniWoB.Pick(st.miniwobName(site, id), opts.Seed)
		if err != nil {
			return server.Episode{}, server.BadRequest(err)
		}
		return miniwob.Episode(origins[st.Roles[0]], name, opts.Seed)
	}
	t, err := st.pick(site, id, opts.Seed)
	if err != nil {
		return server.Episode{}, err
	}
	if t.Eval.Verified != nil && st.VerifiedByID {
		origins = verifiedOrigins(origins)
	}
	inst, err := tasks.Instantiate(t, origins)
	if err != nil {
		return server.Episode{}, err
	}
	// Sign-in is for the task's first site.
	origin := origins[st.Roles[0]]
	if len(t.Sites) > 0 && origins[t.Sites[0]] != "" {
		origin = origins[t.Sites[0]]
	}
	ep := server.Episode{StartURL: inst.StartURL, Goal: inst.Intent, TaskID: st.IDPrefix + site + "." + strconv.Itoa(t.ID), TaskSet: st.Name, Variant: st.Variant, Attacks: inst.Attacks}
	if err := setup(ctx, in, ep.TaskID, inst); err != nil {
		return server.Episode{}, err
	}
	if state != nil && (state.StateDB != "" || state.State != nil) {
		db := state.StateDB
		if state.State != nil {
			db = hosting.StateTables
		}
		if sc, ok := tasks.ScopeOf(inst, st.Roles, db, state.Bookkeeping); ok {
			ep.Scope, ep.SideEffects = &sc, inst.SideEffects
		}
	}
	if inst.Login == nil && inst.RequireLogin && inst.StorageState != "" {
		if ep.Cookies, err = st.storageCookies(origins, origin, inst.StorageState); err != nil {
			return server.Episode{}, fmt.Errorf("sign in for task %s: %w", ep.TaskID, err)
		}
	}
	if inst.Login != nil && inst.Login.As == "" {
		if ep.Cookies, err = loginCookies(inst.Login, origin); err != nil {
			return server.Episode{}, fmt.Errorf("sign in for task %s: %w", ep.TaskID, err)
		}
	} else if inst.Login != nil {
		if st.Login == nil {
			return server.Episode{}, server.Unconfigured(fmt.Errorf("task %s starts signed in, and site %s has no login method", ep.TaskID, site))
		}
		if ep.Cookies, err = st.Login(ctx, hc, origin, inst.Login); err != nil {
			return server.Episode{}, fmt.Errorf("sign in for task %s: %w", ep.TaskID, err)
		}
	}
	if t.Eval.Verified != nil {
		st.verifiedEpisode(&ep, t, origins)
		return ep, nil
	}
	everyStepOK := true
	for _, typ := range t.Eval.Types {
		if typ != "url_match" && typ != "state" {
			everyStepOK = false
		}
	}
	sites := map[string]tasks.Site{}
	for r, o := range origins {
		sites[r] = tasks.Site{BaseURL: o, Admin: st.Admin, EvalToken: st.EvalToken}
	}
	ep.Evaluate = func(ctx context.Context, env *envcore.Env, hc *http.Client, in hosting.Execer, info envcore.StepInfo, everyStep bool, _ *netroute.Recorder) (*tasks.Result, error) {
		if !info.Terminated && !(everyStep && everyStepOK) {
			return nil, nil
		}
		sites := maps.Clone(sites)
		for r, s := range sites {
			s.Instance = in
			sites[r] = s
		}
		g := *st.Grader
		g.HTTP = hc
		g.StrictAnswers = g.StrictAnswers || strict
		res, err := g.Grade(ctx, inst, envPage{env}, info.Answer, sites)
		if err != nil {
			return nil, err
		}
		return &res, nil
	}
	return ep, nil
}

// envPage lets the grader read an environment's active tab.
type envPage struct{ env *envcore.Env }

func (p envPage) URL(ctx context.Context) (string, error) {
	var u string
	err := p.env.Evaluate(ctx, "location.href", &u)
	return u, err
}

func (p envPage) Goto(ctx context.Context, url string) error { return p.env.Goto(ctx, url) }

func (p envPage) Eval(ctx context.Context, expr string, out any) error {
	return p.env.Evaluate(ctx, expr, out)
}

// storageCookies reads a task's storage state (WebArena names it like
// ./.auth/shopping_state.json, or gitlab.reddit_state.json for a task of
// two sites) from AuthDir. A cookie recorded for the host of one of the
// environment's origins (sites keep the hosts their images have baked
// in) is set there; any other goes to fallback, the task's first site.
func (st *TaskSet) storageCookies(origins map[string]string, fallback, file string) ([]envcore.Cookie, error) {
	if st.AuthDir == "" {
		return nil, fmt.Errorf("the task starts signed in from %s: give the directory of WebArena's storage states with --webarena-auth", file)
	}
	state, err := tasks.LoadStorageState(filepath.Join(st.AuthDir, filepath.Base(file)))
	if err != nil {
		return nil, err
	}
	hosts := map[string]string{} // host name -> an origin on it
	for _, o := range origins {
		if u, err := url.Parse(o); err == nil {
			hosts[u.Hostname()] = o
		}
	}
	var out []envcore.Cookie
	for i, c := range state.HostlessCookies() {
		at := fallback
		if o, ok := hosts[strings.TrimPrefix(state.Cookies[i].Domain, ".")]; ok {
			at = o
		}
		out = append(out, envcore.Cookie{Name: c.Name, Value: c.Value, URL: at + c.Path, HTTPOnly: c.HTTPOnly})
	}
	return out, nil
}
