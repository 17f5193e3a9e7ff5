package netroute

import (
	"context"
	"math"
	"sync"

	"golang.org/x/time/rate"
)

// politeness holds the per-host rate and concurrency state of a policy; nil
// when the policy limits neither.
type politeness struct {
	rate  float64
	conc  int
	mu    sync.Mutex
	hosts map[string]*gate
}

// gate is one host's token bucket and in-flight slots.
type gate struct {
	lim *rate.Limiter
	sem chan struct{}
}

// maxGates bounds the hosts a politeness remembers; past it, hosts with
// nothing in flight are forgotten.
const maxGates = 4096

// newPoliteness returns the politeness of p, reusing prev when p's limits
// are prev's.
func newPoliteness(p Policy, prev *politeness) *politeness {
	if p.RatePerHost <= 0 && p.ConcurrencyPerHost <= 0 {
		return nil
	}
	if prev != nil && prev.rate == p.RatePerHost && prev.conc == p.ConcurrencyPerHost {
		return prev
	}
	return &politeness{rate: p.RatePerHost, conc: p.ConcurrencyPerHost, hosts: map[string]*gate{}}
}

// acquire waits for host's turn under p: a token of its bucket, then a
// slot among its requests in flight. The returned gate's release gives the
// slot back. It fails only when ctx ends (the browser gave up).
func (p *politeness) acquire(ctx context.Context, host string) (*gate, error) {
	if p == nil {
		return nil, nil
	}
	p.mu.Lock()
	g := p.hosts[host]
	if g == nil {
		if len(p.hosts) >= maxGates {
			for h, o := range p.hosts {
				if len(o.sem) == 0 {
					delete(p.hosts, h)
				}
			}
		}
		g = &gate{}
		if p.rate > 0 {
			g.lim = rate.NewLimiter(rate.Limit(p.rate), int(math.Max(1, math.Ceil(p.rate))))
		}
		if p.conc > 0 {
			g.sem = make(chan struct{}, p.conc)
		}
		p.hosts[host] = g
	}
	p.mu.Unlock()
	if g.lim != nil {
		if err := g.lim.Wait(ctx); err != nil {
			return nil, err
		}
	}
	if g.sem != nil {
		select {
		case g.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g, nil
}

// release ends a request that acquire let through.
func (g *gate) release() {
	if g != nil && g.sem != nil {
		<-g.sem
	}
}
