package server

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
)

// Snapshotter is an Instance whose site state can be captured and branched:
// the ops snapshot, restore and fork need it.
type Snapshotter interface {
	Snapshot(ctx context.Context, name string) error
	Restore(ctx context.Context, name string) error
	Fork(ctx context.Context, name string, n int) ([]Instance, error)
}

// HostedFactory serves sites from definitions, each on its backend
// (local processes or Incus containers), plus the open site.
type HostedFactory struct {
	open     OpenFactory
	sites    map[string]*hosting.Site
	order    []string
	backends map[string]hosting.Backend
	missing  map[string]string // backend name -> why it is not available
	tasks    map[string]*SiteTasks
	sets     map[string][]*SiteTasks // further named task sets by site (verified.go)
	absent   map[string]SiteInfo     // sites listed but not servable here
}

// SetUnavailable lists a site that cannot start on this server, with why
// (and what to do) in its description; make on it fails with that text.
func (f *HostedFactory) SetUnavailable(name, why string) {
	if f.absent == nil {
		f.absent = map[string]SiteInfo{}
	}
	f.absent[name] = SiteInfo{Name: name, Description: "unavailable: " + why, Backend: "none"}
}

// SetTasks gives a site its task set.
func (f *HostedFactory) SetTasks(site string, st *SiteTasks) {
	if f.tasks == nil {
		f.tasks = map[string]*SiteTasks{}
	}
	f.tasks[site] = st
}

// NewHostedFactory serves sites on backends. unavailable maps a backend
// name to why it is missing here; its sites are listed but cannot start.
func NewHostedFactory(sites []*hosting.Site, backends []hosting.Backend, unavailable map[string]string) *HostedFactory {
	f := &HostedFactory{sites: map[string]*hosting.Site{}, backends: map[string]hosting.Backend{}, missing: unavailable}
	for _, b := range backends {
		f.backends[b.Name()] = b
	}
	for _, s := range sites {
		f.sites[s.Name] = s
		f.order = append(f.order, s.Name)
	}
	return f
}

// Sites lists the open site and every defined site.
func (f *HostedFactory) Sites() []SiteInfo {
	out := f.open.Sites()
	for _, name := range f.order {
		s := f.sites[name]
		info := SiteInfo{Name: s.Name, Description: s.Description, Backend: s.Backend(), Tasks: f.taskCount(s.Name)}
		if why, ok := f.missing[s.Backend()]; ok {
			info.Description = strings.TrimSpace(info.Description + " (unavailable: " + why + ")")
		}
		out = append(out, info)
	}
	for _, name := range f.multiNames() {
		out = append(out, SiteInfo{Name: name, Description: "sites " + strings.Join(siteNames(name), " and ") + " in one environment, with the tasks that need them all", Backend: f.sites[siteNames(name)[0]].Backend()})
	}
	for _, info := range f.absent {
		out = append(out, info)
	}
	return out
}

// taskCount counts a site's listed tasks.
func (f *HostedFactory) taskCount(site string) int {
	n := 0
	if st := f.tasks[site]; st != nil {
		n = len(st.Set.Tasks)
	}
	return n + len(f.listedSets(site))
}

// multiNames lists the multi-site names that have task sets, in order.
func (f *HostedFactory) multiNames() []string {
	var out []string
	for name := range f.tasks {
		if strings.Contains(name, multiSep) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// known reports whether site names a site or a combination of sites.
func (f *HostedFactory) known(site string) bool {
	for _, n := range siteNames(site) {
		if _, ok := f.sites[n]; !ok {
			return false
		}
	}
	return true
}

// Tasks lists a site's tasks (every site's when site is "").
func (f *HostedFactory) Tasks(site string) ([]TaskInfo, error) {
	if site == "open" {
		return []TaskInfo{}, nil
	}
	if site == "" {
		out := []TaskInfo{}
		for _, name := range append(append([]string{}, f.order...), f.multiNames()...) {
			if st := f.tasks[name]; st != nil {
				out = append(out, st.infos(name)...)
			}
			out = append(out, f.listedSets(name)...)
		}
		return out, nil
	}
	if !f.known(site) {
		return nil, badRequest(fmt.Errorf("unknown site %q", site))
	}
	out := []TaskInfo{}
	if st := f.tasks[site]; st != nil {
		out = st.infos(site)
	}
	return append(out, f.listedSets(site)...), nil
}

// Make starts an instance of the site.
func (f *HostedFactory) Make(ctx context.Context, spec MakeSpec) (Instance, error) {
	if spec.Site == "open" {
		return f.open.Make(ctx, spec)
	}
	if a, ok := f.absent[spec.Site]; ok {
		return nil, unconfigured(fmt.Errorf("site %s is %s", spec.Site, a.Description))
	}
	s, ok := f.sites[spec.Site]
	if !ok && !strings.Contains(spec.Site, multiSep) {
		names := append([]string{"open"}, f.order...)
		return nil, badRequest(fmt.Errorf("unknown site %q; this server has: %s (and combinations like a%sb)", spec.Site, strings.Join(names, ", "), multiSep))
	}
	st, err := f.taskSet(spec)
	if err != nil {
		return nil, badRequest(err)
	}
	if spec.Task != "" {
		if st == nil {
			return nil, badRequest(fmt.Errorf("site %s has no tasks", spec.Site))
		}
		if _, err := st.pick(spec.Site, spec.Task, nil); err != nil {
			return nil, badRequest(err) // an unknown task fails before an instance starts
		}
	}
	if s == nil {
		parts, err := f.startParts(ctx, siteNames(spec.Site), spec)
		if err != nil {
			return nil, err
		}
		return newMultiInstance(spec.Site, parts, spec, st), nil
	}
	b, ok := f.backends[s.Backend()]
	if !ok {
		return nil, unconfigured(fmt.Errorf("site %s runs on %s, which is not available on this server: %s", s.Name, s.Backend(), f.missing[s.Backend()]))
	}
	in, err := b.Start(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("start site %s: %w", s.Name, err)
	}
	return newHostedInstance(s, in, spec, st), nil
}

func newHostedInstance(s *hosting.Site, in hosting.Instance, spec MakeSpec, st *SiteTasks) *hostedInstance {
	h := &hostedInstance{site: s, in: in, fresh: true, spec: spec, tasks: st, routes: netroute.NewTable(netroute.Policy{})}
	if err := h.routes.Set(s.Origin, instanceDialer(in)); err != nil {
		panic(err) // site origins are checked when definitions load
	}
	return h
}

// instanceDialer reaches an instance's server: through the instance's own
// dialer where it has one (Incus: straight into the container's network
// namespace), else over TCP to its loopback address.
func instanceDialer(in hosting.Instance) netroute.Dialer {
	if d, ok := in.(interface {
		DialContext(ctx context.Context) (net.Conn, error)
	}); ok {
		return d.DialContext
	}
	u, err := url.Parse(in.URL())
	if err != nil {
		return func(context.Context) (net.Conn, error) {
			return nil, fmt.Errorf("instance %s has no usable address %q", in.ID(), in.URL())
		}
	}
	return netroute.TCPDialer(u.Host)
}

// hostedInstance is an environment's site instance.
type hostedInstance struct {
	site   *hosting.Site
	in     hosting.Instance
	spec   MakeSpec // start path, goal, task and allowlist from make
	mu     sync.Mutex
	fresh  bool // started (or forked) and not used by an episode yet
	tasks  *SiteTasks
	routes *netroute.Table // the site's origin to this instance, for sign-in
}

// prepare puts the instance in the site's base state for a new episode,
// unless it is fresh.
func (h *hostedInstance) prepare(ctx context.Context) error {
	h.mu.Lock()
	fresh := h.fresh
	h.fresh = false
	h.mu.Unlock()
	if !fresh {
		if err := h.in.Reset(ctx); err != nil {
			return fmt.Errorf("reset site %s: %w", h.site.Name, err)
		}
		// Connections kept open to the server the reset replaced are dead.
		if err := h.routes.Set(h.site.Origin, instanceDialer(h.in)); err != nil {
			return err
		}
	}
	return nil
}

func (h *hostedInstance) Episode(ctx context.Context, opts EpisodeOptions) (Episode, error) {
	if err := h.prepare(ctx); err != nil {
		return Episode{}, err
	}
	if err := oneStart(opts); err != nil {
		return Episode{}, err
	}
	if h.tasks != nil && opts.StartURL == "" && h.spec.StartURL == "" {
		ex, _ := h.in.(hosting.Execer)
		return h.tasks.episode(ctx, h.site.Name, h.tasks.roleOrigins(h.site.Origin), h.routes.Client(), opts, h.spec.Task, ex)
	}
	return plainEpisode(h.site, h.spec, opts)
}

// plainEpisode is an episode without a task: at the start path (make's or
// the reset's, else the site's) with the goal given.
func plainEpisode(site *hosting.Site, spec MakeSpec, opts EpisodeOptions) (Episode, error) {
	start := site.StartPath
	for _, p := range []string{spec.StartURL, opts.StartURL} {
		if p == "" {
			continue
		}
		if err := onOrigin(site, p); err != nil {
			return Episode{}, err
		}
		start = p
	}
	u, err := resolve(site, start)
	if err != nil {
		return Episode{}, err
	}
	goal := spec.Goal
	if opts.Goal != "" {
		goal = opts.Goal
	}
	return Episode{StartURL: u, Goal: goal, Cookies: siteCookies(site)}, nil
}

// Network routes the site's origin to this instance; everything else is
// refused but for the site's and make's allowlists.
func (h *hostedInstance) Network() Network {
	allow := append(append([]string{}, h.site.Allow...), h.spec.Allow...)
	return Network{Origins: map[string]netroute.Dialer{h.site.Origin: instanceDialer(h.in)}, Policy: netroute.Policy{Allow: allow}}
}

// resolve turns a start path ("/cart") into a URL at the site's origin.
func resolve(site *hosting.Site, p string) (string, error) {
	base := site.Origin
	if p == "" {
		return base + "/", nil
	}
	if !strings.HasPrefix(p, "/") {
		u, err := url.Parse(p)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("start_url %q: give a path on the site, like /cart", p)
		}
		// A full URL of the site (as a task file may hold one): keep its path.
		p = u.RequestURI()
	}
	return base + p, nil
}

// oneStart refuses an episode asked to start both at a task and at a URL:
// one of them would be dropped without a word.
func oneStart(opts EpisodeOptions) error {
	if opts.Task != "" && opts.StartURL != "" {
		return badRequest(fmt.Errorf("give task or start_url, not both: a task starts at its own page"))
	}
	return nil
}

// onOrigin refuses a client's start URL that is not on the site: a full
// URL must be at the site's origin (a path is always on it). The browser
// could not reach another origin anyway; the request is told so instead of
// starting somewhere it did not ask for.
func onOrigin(site *hosting.Site, p string) error {
	if strings.HasPrefix(p, "/") {
		return nil
	}
	u, err := url.Parse(p)
	if err != nil || u.Host == "" {
		return badRequest(fmt.Errorf("start_url %s: give a path on the site, like /cart", quoteKey(p)))
	}
	if origin, err := hosting.CanonicalOrigin(u.Scheme + "://" + u.Host); err != nil || origin != site.Origin {
		return badRequest(fmt.Errorf("start_url %s is not on site %s, whose origin is %s; give a path like /cart or a URL at that origin", quoteKey(p), site.Name, site.Origin))
	}
	return nil
}

func (h *hostedInstance) Close(ctx context.Context) error {
	h.routes.Close()
	return h.in.Stop(ctx)
}

func (h *hostedInstance) Snapshot(ctx context.Context, name string) error {
	return h.in.Snapshot(ctx, name)
}

func (h *hostedInstance) Restore(ctx context.Context, name string) error {
	return h.in.Restore(ctx, name)
}

func (h *hostedInstance) Fork(ctx context.Context, name string, n int) ([]Instance, error) {
	forks, err := h.in.Fork(ctx, name, n)
	if err != nil {
		return nil, err
	}
	out := make([]Instance, len(forks))
	for i, f := range forks {
		out[i] = newHostedInstance(h.site, f, h.spec, h.tasks)
	}
	return out, nil
}
