package catalog

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
)

// hostedInstance is an environment's instance of one site: its backend's
// instance, routed at the site's canonical origin, prepared for each
// episode, snapshotted and forked by the backend.
type hostedInstance struct {
	site   *hosting.Site
	in     hosting.Instance
	spec   server.MakeSpec // start path, goal, task and allowlist from make
	mu     sync.Mutex
	fresh  bool // started (or forked) and not used by an episode yet
	tasks  *TaskSet
	routes *netroute.Table // the site's origin to this instance, for sign-in
}

var (
	_ server.Snapshotter        = (*hostedInstance)(nil)
	_ server.ExecInstance       = (*hostedInstance)(nil)
	_ server.StateDBInstance    = (*hostedInstance)(nil)
	_ server.DataAttackInstance = (*hostedInstance)(nil)
	_ server.Watched            = (*hostedInstance)(nil)
	_ server.Watched            = (*multiInstance)(nil)
)

func newHostedInstance(s *hosting.Site, in hosting.Instance, spec server.MakeSpec, st *TaskSet) *hostedInstance {
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

// prepare puts the instance in the site's base state for a new episode,
// unless it is fresh.
func (h *hostedInstance) prepare(ctx context.Context) error {
	h.mu.Lock()
	fresh := h.fresh
	h.fresh = false
	h.mu.Unlock()
	if fresh && hosting.Health(ctx, h.in, h.site.Ready, false) != nil {
		fresh = false // it died before its first episode: a fresh one
	}
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

func (h *hostedInstance) Episode(ctx context.Context, opts server.EpisodeOptions) (server.Episode, error) {
	if err := h.prepare(ctx); err != nil {
		return server.Episode{}, err
	}
	if err := oneStart(opts); err != nil {
		return server.Episode{}, err
	}
	if h.tasks != nil && opts.StartURL == "" && h.spec.StartURL == "" {
		return h.tasks.episode(ctx, h.site.Name, h.tasks.roleOrigins(h.site.Origin), h.routes.Client(), opts, h.spec.Task, h.spec.StrictAnswers, h.Execer(), h.site)
	}
	return plainEpisode(h.site, h.spec, opts)
}

// plainEpisode is an episode without a task: at the start path (make's or
// the reset's, else the site's) with the goal given.
func plainEpisode(site *hosting.Site, spec server.MakeSpec, opts server.EpisodeOptions) (server.Episode, error) {
	start := site.StartPath
	for _, p := range []string{spec.StartURL, opts.StartURL} {
		if p == "" {
			continue
		}
		if err := onOrigin(site, p); err != nil {
			return server.Episode{}, err
		}
		start = p
	}
	u, err := resolve(site, start)
	if err != nil {
		return server.Episode{}, err
	}
	goal := spec.Goal
	if opts.Goal != "" {
		goal = opts.Goal
	}
	return server.Episode{StartURL: u, Goal: goal, Cookies: siteCookies(site)}, nil
}

// Network routes the site's origin to this instance; everything else is
// refused but for the site's and make's allowlists.
func (h *hostedInstance) Network() server.Network {
	allow := append(append([]string{}, h.site.Allow...), h.spec.Allow...)
	return server.Network{Origins: map[string]netroute.Dialer{h.site.Origin: instanceDialer(h.in)}, Policy: netroute.Policy{Allow: allow}}
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
func oneStart(opts server.EpisodeOptions) error {
	if opts.Task != "" && opts.StartURL != "" {
		return server.BadRequest(fmt.Errorf("give task or start_url, not both: a task starts at its own page"))
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
		return server.BadRequest(fmt.Errorf("start_url %s: give a path on the site, like /cart", quoted(p)))
	}
	if origin, err := hosting.CanonicalOrigin(u.Scheme + "://" + u.Host); err != nil || origin != site.Origin {
		return server.BadRequest(fmt.Errorf("start_url %s is not on site %s, whose origin is %s; give a path like /cart or a URL at that origin", quoted(p), site.Name, site.Origin))
	}
	return nil
}

// Execer runs commands in the site's instance, where its backend can.
func (h *hostedInstance) Execer() hosting.Execer {
	ex, _ := h.in.(hosting.Execer)
	return hosting.WithState(ex, h.site.State)
}

// StateDB is the site's state database: its definition's state_db, or
// hosting.StateTables when it declares state: (files, postgres).
func (h *hostedInstance) StateDB() string {
	if h.site.State != nil {
		return hosting.StateTables
	}
	return h.site.StateDB
}

// TakesAttackData reports whether the site's definition has attack_data.
func (h *hostedInstance) TakesAttackData() bool {
	return h.site.AttackData != nil && h.Execer() != nil
}

// WriteAttackData runs the site's attack_data command in this instance,
// the words on its standard input; its last line of output is the path of
// a page that shows them.
func (h *hostedInstance) WriteAttackData(ctx context.Context, words string, draw uint64) (string, error) {
	ex := h.Execer()
	if h.site.AttackData == nil || ex == nil {
		return "", fmt.Errorf("site %s has no attack_data", h.site.Name)
	}
	res, err := ex.Exec(ctx, hosting.ExecRequest{Command: h.site.AttackData.Command, Stdin: []byte(words),
		Env: map[string]string{"WEBSERV_ATTACK_DRAW": strconv.FormatUint(draw, 10)}})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("attack_data command %v exited %d: %s", h.site.AttackData.Command, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	out := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	return strings.TrimSpace(out[len(out)-1]), nil
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

func (h *hostedInstance) Fork(ctx context.Context, name string, n int) ([]server.Instance, error) {
	forks, err := h.in.Fork(ctx, name, n)
	if err != nil {
		return nil, err
	}
	out := make([]server.Instance, len(forks))
	for i, f := range forks {
		out[i] = newHostedInstance(h.site, f, h.spec, h.tasks)
	}
	return out, nil
}

// quoted shows a start URL as sent, cut to a readable length.
func quoted(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q... (%d bytes)", s[:max], len(s))
	}
	return s
}

// Health says whether the site's instance is alive (hosting.Health): deep
// asks its backend and probes its readiness path once.
func (h *hostedInstance) Health(ctx context.Context, deep bool) error {
	if err := hosting.Health(ctx, h.in, h.site.Ready, deep); err != nil {
		return fmt.Errorf("site %s: %w", h.site.Name, err)
	}
	return nil
}
