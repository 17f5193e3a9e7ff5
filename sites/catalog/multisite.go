package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
)

// Several sites in one environment: make with site "gitlab+reddit" (or
// sites: [gitlab, reddit]) gives the environment an instance of each, all
// reachable in its browser context at their own origins. Tasks that need
// both (WebArena's multi-site tasks) are the task set registered under the
// joined name.

// siteNames splits an environment's site name into its sites.
func siteNames(site string) []string { return strings.Split(site, server.SiteSep) }

// multiInstance is an environment's instances of several sites. It runs
// no commands (no Execer): a task's setup and checks need one instance.
type multiInstance struct {
	name   string
	parts  []*hostedInstance
	spec   server.MakeSpec
	tasks  *TaskSet
	routes *netroute.Table // every part's origin, for sign-in
}

var _ server.Snapshotter = (*multiInstance)(nil)

func newMultiInstance(name string, parts []*hostedInstance, spec server.MakeSpec, st *TaskSet) *multiInstance {
	m := &multiInstance{name: name, parts: parts, spec: spec, tasks: st, routes: netroute.NewTable(netroute.Policy{})}
	for _, p := range parts {
		if err := m.routes.Set(p.site.Origin, instanceDialer(p.in)); err != nil {
			panic(err) // site origins are checked when definitions load
		}
	}
	return m
}

// startParts starts an instance of each site at once.
func (c *Catalog) startParts(ctx context.Context, names []string, spec server.MakeSpec) ([]*hostedInstance, error) {
	sites := make([]*hosting.Site, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		s, ok := c.sites[n]
		if !ok {
			return nil, server.BadRequest(fmt.Errorf("unknown site %q in %q; this server has: %s", n, strings.Join(names, server.SiteSep), strings.Join(c.order, ", ")))
		}
		if seen[s.Origin] {
			return nil, server.BadRequest(fmt.Errorf("sites %q share the origin %s; one environment can hold each origin once", strings.Join(names, server.SiteSep), s.Origin))
		}
		seen[s.Origin] = true
		sites[i] = s
	}
	parts := make([]*hostedInstance, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, s := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, ok := c.backends[s.Backend()]
			if !ok {
				errs[i] = server.Unconfigured(fmt.Errorf("site %s runs on %s, which is not available on this server: %s", s.Name, s.Backend(), c.missing[s.Backend()]))
				return
			}
			in, err := b.Start(ctx, s)
			if err != nil {
				errs[i] = fmt.Errorf("start site %s: %w", s.Name, err)
				return
			}
			parts[i] = newHostedInstance(s, in, spec, c.tasks[s.Name])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range parts {
			if p != nil {
				_ = p.Close(ctx)
			}
		}
		return nil, err
	}
	return parts, nil
}

func (m *multiInstance) each(ctx context.Context, fn func(*hostedInstance) error) error {
	errs := make([]error, len(m.parts))
	var wg sync.WaitGroup
	for i, p := range m.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (m *multiInstance) Episode(ctx context.Context, opts server.EpisodeOptions) (server.Episode, error) {
	if err := m.each(ctx, func(p *hostedInstance) error { return p.prepare(ctx) }); err != nil {
		return server.Episode{}, err
	}
	if err := oneStart(opts); err != nil {
		return server.Episode{}, err
	}
	if m.tasks != nil && opts.StartURL == "" && m.spec.StartURL == "" {
		origins := map[string]string{}
		for _, p := range m.parts {
			if p.tasks == nil {
				origins[p.site.Name] = p.site.Origin
				continue
			}
			for r, o := range p.tasks.roleOrigins(p.site.Origin) {
				origins[r] = o
			}
		}
		return m.tasks.episode(ctx, m.name, origins, m.routes.Client(), opts, m.spec.Task, m.spec.StrictAnswers, nil, nil)
	}
	// Without a task: at the first site's start, or at a start URL on any
	// of the sites.
	for _, u := range []string{opts.StartURL, m.spec.StartURL} {
		if pu, err := url.Parse(u); err == nil && pu.Host != "" {
			for _, p := range m.parts {
				if o, err := hosting.CanonicalOrigin(pu.Scheme + "://" + pu.Host); err == nil && o == p.site.Origin {
					spec, o := m.spec, opts
					spec.StartURL, o.StartURL = "", ""
					ep, err := plainEpisode(p.site, spec, o)
					ep.StartURL = u
					return ep, err
				}
			}
		}
	}
	return plainEpisode(m.parts[0].site, m.spec, opts)
}

// Network routes every site's origin to its instance.
func (m *multiInstance) Network() server.Network {
	n := server.Network{Origins: map[string]netroute.Dialer{}}
	for _, p := range m.parts {
		pn := p.Network()
		for o, d := range pn.Origins {
			n.Origins[o] = d
		}
		n.Policy.Allow = append(n.Policy.Allow, pn.Policy.Allow...)
	}
	return n
}

func (m *multiInstance) Close(ctx context.Context) error {
	m.routes.Close()
	return m.each(ctx, func(p *hostedInstance) error { return p.Close(ctx) })
}

func (m *multiInstance) Snapshot(ctx context.Context, name string) error {
	return m.each(ctx, func(p *hostedInstance) error { return p.Snapshot(ctx, name) })
}

func (m *multiInstance) Restore(ctx context.Context, name string) error {
	return m.each(ctx, func(p *hostedInstance) error { return p.Restore(ctx, name) })
}

// Fork forks every site's snapshot n times and pairs the copies up.
func (m *multiInstance) Fork(ctx context.Context, name string, n int) ([]server.Instance, error) {
	forks := make([][]server.Instance, len(m.parts))
	err := m.each(ctx, func(p *hostedInstance) error {
		for i, q := range m.parts {
			if q == p {
				f, err := p.Fork(ctx, name, n)
				forks[i] = f
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, fs := range forks {
			for _, f := range fs {
				_ = f.Close(ctx)
			}
		}
		return nil, err
	}
	out := make([]server.Instance, n)
	for i := range n {
		parts := make([]*hostedInstance, len(m.parts))
		for j := range m.parts {
			parts[j] = forks[j][i].(*hostedInstance)
		}
		out[i] = newMultiInstance(m.name, parts, m.spec, m.tasks)
	}
	return out, nil
}

// Health is every site's instance's health.
func (m *multiInstance) Health(ctx context.Context, deep bool) error {
	return m.each(ctx, func(p *hostedInstance) error { return p.Health(ctx, deep) })
}
