package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/webserv-rl/webserv/attack"
	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/tasks"
)

// Factory makes the site side of environments. The server owns the browser
// side (an envcore.Env per environment); a Factory says which sites exist,
// which tasks they have, and prepares each episode: where it starts, its
// goal, and how it is scored. Site hosting (local processes, Incus
// containers) and task sets plug in here: OpenFactory serves the open web,
// package catalog (sites/catalog) serves site definitions, the bundled
// shop and WebArena's images with their task sets.
//
// A Factory marks what a request got wrong with BadRequest and what this
// server is not set up for with Unconfigured; any other error it returns
// is the infrastructure's.
type Factory interface {
	Sites() []SiteInfo
	Tasks(site string) ([]TaskInfo, error)
	// Make prepares a site instance for one environment.
	Make(ctx context.Context, spec MakeSpec) (Instance, error)
}

// SiteInfo describes a site for the sites op.
type SiteInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Backend says how the site's server runs: "none" (external URL),
	// "local" or "incus".
	Backend string `json:"backend"`
	// Tasks counts the site's tasks (the tasks op lists them).
	Tasks int `json:"tasks,omitempty"`
}

// TaskInfo describes a task for the tasks op.
type TaskInfo struct {
	ID       string `json:"id"`
	Site     string `json:"site"`
	Goal     string `json:"goal"`
	StartURL string `json:"start_url"`
	Category string `json:"category,omitempty"`
	// Oracle is an action sequence that solves the task (bundled tasks).
	Oracle []string `json:"oracle,omitempty"`
	// Attacks is how many attacks an episode of the task draws one from
	// by its seed (an attacked task set's, a task file's attacks:), 0
	// for a task without (docs/attacks.md).
	Attacks int `json:"attacks,omitempty"`
}

// SiteSep joins the sites one environment holds into its site name
// ("gitlab+reddit"): make's sites argument is joined with it, and a
// Factory that serves several sites at once splits MakeSpec.Site on it.
const SiteSep = "+"

// MakeSpec is what a make request asks for.
type MakeSpec struct {
	// Site names the site, or several joined with SiteSep.
	Site string
	Task string
	// TaskSet names the site's task set when it has several (like
	// "webarena-verified"); a task id's prefix ("verified.") picks it too.
	TaskSet  string
	StartURL string
	Goal     string
	// Allow lists hosts the environment may reach besides its sites
	// ("host", "host:port", "*.suffix").
	Allow []string
	// Politeness bounds what an open-site environment asks of live hosts
	// (its rate, concurrency, request cap, user agent and robots fields).
	Politeness netroute.Policy
	// StrictAnswers grades the answers of WebArena's configs as typed
	// values (tasks.Grader.StrictAnswers; make's strict_answers).
	StrictAnswers bool
}

// Instance is one environment's site side.
type Instance interface {
	// Episode prepares a new episode (restoring the site's state where it
	// has any) and says how it starts. Its URLs are canonical: the sites'
	// origins, never the instance's own address.
	Episode(ctx context.Context, opts EpisodeOptions) (Episode, error)
	// Network is what the environment reaches while it holds the
	// instance: its sites' origins, routed to it, and its policy.
	Network() Network
	// Close frees the instance.
	Close(ctx context.Context) error
}

// Snapshotter is an Instance whose site state can be captured and branched:
// the ops snapshot, restore and fork need it (not_supported otherwise).
type Snapshotter interface {
	Snapshot(ctx context.Context, name string) error
	Restore(ctx context.Context, name string) error
	Fork(ctx context.Context, name string, n int) ([]Instance, error)
}

// ExecInstance is an Instance that can run commands in its site's
// instance (task setup and check programs, Episode.Evaluate's in):
// Execer returns nil where its backend cannot.
type ExecInstance interface {
	Instance
	Execer() hosting.Execer
}

// execerOf is the Execer of an environment's site instance, nil where it
// has none (the open site, several sites at once).
func execerOf(inst Instance) hosting.Execer {
	if e, ok := inst.(ExecInstance); ok {
		return e.Execer()
	}
	return nil
}

// EpisodeOptions are a reset's options.
type EpisodeOptions struct {
	Seed     *int64
	Task     string
	StartURL string
	Goal     string
}

// Episode is how an episode starts and is scored.
type Episode struct {
	StartURL string
	Goal     string
	TaskID   string
	// Seed is the reset's seed, when one was given (recorded in the
	// trajectory, so that a re-run starts the same instance).
	Seed *int64
	// TaskSet and Variant name the task set and the site variant serving
	// it (reported in info).
	TaskSet, Variant string
	// Cookies are set before the start page loads (a signed-in start).
	Cookies []envcore.Cookie
	// Evaluate grades the episode after a step; hc reaches the
	// environment's sites at their canonical origins. A nil result means
	// no grade at this step (reward 0). everyStep asks for a grade before
	// the agent stops, where the task allows it.
	// trace is the episode's network trace (nil unless Trace or recording).
	// in runs commands in the environment's own site instance (nil where
	// it cannot): a group member's, not the leader's whose episode it shares.
	Evaluate func(ctx context.Context, env *envcore.Env, hc *http.Client, in hosting.Execer, info envcore.StepInfo, everyStep bool, trace *netroute.Recorder) (*tasks.Result, error)
	// Trace asks for the episode's network trace (HAR), for Evaluate.
	Trace bool
	// Clock, when not nil, makes the episode's pages deterministic (a
	// seeded Math.random and a virtual clock, envcore.Clock): set by a
	// site that opts in, from the episode's seed.
	Clock *envcore.Clock
	// Start is JavaScript run in the start page once it has loaded, before
	// the first observation (envcore.ResetOptions.Start): the start of a
	// task whose page runs its own episodes (MiniWoB). Its value, when a
	// non-empty string, is the episode's goal.
	Start string
	// Restart, for an episode with a Start script, is JavaScript that
	// starts the episode in the start page its environment already has,
	// left there by the last episode of the same start page, in place of a
	// fresh load (envcore.Env.RestartInPlace): set only where that is the
	// same as a fresh load. Its value is the goal, or null when the page
	// cannot restart in place (the reset then loads the page afresh).
	// info.restart says which way a reset went.
	Restart string
	// restart is how the episode's page was started (a Restart... value),
	// set by its loader for info.restart.
	restart Restart
	// carried says the episode continues a captured site state (a
	// snapshot's, a group leader's): its data already holds whatever the
	// data attack channel wrote at the start, which is not written again.
	carried bool
	// Scope is what the episode's task may change in its site's state:
	// any other change is a side effect, reported on the step that ends
	// the episode (docs/tasks.md "Side effects"). nil: none are looked for.
	Scope *tasks.ChangeScope
	// SideEffects is the task's side-effect mode (tasks.SideEffectModes;
	// "": report); make's side_effects, when given, decides instead.
	SideEffects string
	// Attacks are the task's own attacks (a task file's attacks:): an
	// episode without an attack of make's or the reset's draws one of them
	// by its seed (docs/attacks.md).
	Attacks []attack.Spec
}

// OpenFactory serves the "open" site: any http(s) URL, no hosting, reward 0
// until the agent terminates (the analogue of BrowserGym's openended task).
type OpenFactory struct{}

// Sites lists the open site.
func (OpenFactory) Sites() []SiteInfo {
	return []SiteInfo{{Name: "open", Description: "any http(s) URL given as start_url; reward 0, the episode ends on terminate", Backend: "none"}}
}

// Tasks: the open site has none.
func (OpenFactory) Tasks(site string) ([]TaskInfo, error) {
	if site != "" && site != "open" {
		return nil, BadRequest(fmt.Errorf("unknown site %q", site))
	}
	return []TaskInfo{}, nil
}

// Make checks the spec and returns an instance that starts at its URL.
func (OpenFactory) Make(ctx context.Context, spec MakeSpec) (Instance, error) {
	if spec.Site != "open" {
		return nil, BadRequest(fmt.Errorf("unknown site %q; this server has: open", spec.Site))
	}
	if spec.Task != "" {
		return nil, BadRequest(fmt.Errorf("site open has no tasks; give start_url (and optionally goal) instead"))
	}
	if err := checkURL(spec.StartURL); err != nil {
		return nil, BadRequest(err)
	}
	return &openInstance{url: spec.StartURL, goal: spec.Goal, allow: spec.Allow, polite: spec.Politeness}, nil
}

func checkURL(s string) error {
	if s == "" {
		return fmt.Errorf("site open needs start_url, an http or https URL")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("start_url %q is not an http or https URL", s)
	}
	return nil
}

type openInstance struct {
	url, goal string
	allow     []string
	polite    netroute.Policy
	start     string // the current episode's start URL
}

func (o *openInstance) Episode(ctx context.Context, opts EpisodeOptions) (Episode, error) {
	u, goal := o.url, o.goal
	if opts.StartURL != "" {
		if err := checkURL(opts.StartURL); err != nil {
			return Episode{}, BadRequest(err)
		}
		u = opts.StartURL
	}
	if opts.Goal != "" {
		goal = opts.Goal
	}
	o.start = u
	return Episode{StartURL: u, Goal: goal}, nil
}

// Network: the open web, with the start URL's host allowed even when it is
// local.
func (o *openInstance) Network() Network {
	start := o.start
	if start == "" {
		start = o.url
	}
	p := openPolicy(start, o.allow)
	p.RatePerHost, p.ConcurrencyPerHost, p.MaxRequests = o.polite.RatePerHost, o.polite.ConcurrencyPerHost, o.polite.MaxRequests
	p.UserAgent, p.Robots = o.polite.UserAgent, o.polite.Robots
	p.DenySubmit, p.SubmitAllow = o.polite.DenySubmit, o.polite.SubmitAllow
	return Network{Policy: p}
}

func (o *openInstance) Close(context.Context) error { return nil }
