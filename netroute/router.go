package netroute

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Options configure a Router.
type Options struct {
	// Refuse lists host:port addresses refused under every policy and
	// every allowlist: the WebServ server's own listen address, Chromium's
	// DevTools port. An address of this machine (loopback, unspecified as
	// in ":8080" or "0.0.0.0:8080", or one of its interfaces) refuses that
	// port on every address of the machine; a host without a port refuses
	// all its ports. Every route's own address is refused too.
	Refuse []string
	// Resolver looks up live sites' names (nil: the system's).
	Resolver *net.Resolver
}

// Router makes routes, one per browser context, and refuses, for all of
// them, the addresses no environment may reach.
type Router struct {
	log *zap.Logger

	mu         sync.RWMutex
	exact      map[string]bool     // refused "host:port", and "host" for all its ports
	localPorts map[string]bool     // ports refused on every address of this machine
	allLocal   bool                // every port of this machine is refused
	routePorts map[string]bool     // the routes' ports, refused on every address of this machine
	local      map[netip.Addr]bool // this machine's interface addresses
	routes     map[*Route]struct{} // open routes
	closed     bool
	resolver   *net.Resolver
}

// New returns a router. log may be nil (no logging).
func New(log *zap.Logger, opts Options) *Router {
	if log == nil {
		log = zap.NewNop()
	}
	r := &Router{
		log:        log,
		exact:      map[string]bool{},
		localPorts: map[string]bool{},
		routePorts: map[string]bool{},
		local:      map[netip.Addr]bool{},
		routes:     map[*Route]struct{}{},
		resolver:   opts.Resolver,
	}
	if r.resolver == nil {
		r.resolver = net.DefaultResolver
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				r.local[p.Addr().Unmap().WithZone("")] = true
			}
		}
	} else {
		log.Warn("cannot list this machine's addresses; refused addresses are matched on loopback and exact addresses only", zap.Error(err))
	}
	for _, a := range opts.Refuse {
		r.AddRefused(a)
	}
	return r
}

// AddRefused adds hostport to Options.Refuse, as when the server learns its
// port once it listens.
func (r *Router) AddRefused(hostport string) {
	hostport = strings.TrimSpace(hostport)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = normHost(host)
	r.mu.Lock()
	defer r.mu.Unlock()
	local := host == "" || r.isLocalHost(host)
	switch {
	case local && port == "":
		r.allLocal = true
	case local:
		r.localPorts[port] = true
	case port == "":
		r.exact[host] = true
	default:
		r.exact[net.JoinHostPort(host, port)] = true
	}
}

// isLocalHost reports whether a normalized host names this machine. r.mu
// is held.
func (r *Router) isLocalHost(host string) bool {
	if isLocalName(host) {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && r.isLocalAddr(a)
}

// isLocalAddr reports whether a is an address of this machine.
func (r *Router) isLocalAddr(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	return a.IsLoopback() || a.IsUnspecified() || r.local[a]
}

// refuses reports whether host:port (normalized) is refused under every
// policy.
func (r *Router) refuses(host, port string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.exact[host] || (len(r.exact) > 0 && r.exact[net.JoinHostPort(host, port)]) {
		return true
	}
	return r.isLocalHost(host) && (r.allLocal || r.localPorts[port] || r.routePorts[port])
}

// refusesAddr reports whether a:port, an address a host name resolved to,
// is refused under every policy.
func (r *Router) refusesAddr(a netip.Addr, port string) bool {
	return r.refuses(a.Unmap().WithZone("").String(), port)
}

// NewRoute opens a loopback listener (127.0.0.1, a free port) that proxies
// one browser context's traffic. Until Bind, it refuses everything.
func (r *Router) NewRoute() (*Route, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("open a browser context's proxy on 127.0.0.1: %w; free some ports or file descriptors and retry", err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	rt := &Route{router: r, ln: ln, addr: addr, port: port, url: "http://" + addr, long: map[*longLived]struct{}{}, stopped: make(chan struct{})}
	errLog, err := zap.NewStdLogAt(r.log.With(zap.String("route", addr)), zap.DebugLevel)
	if err != nil {
		errLog = nil
	}
	rt.srv = &http.Server{
		Handler:           http.HandlerFunc(rt.serve),
		ReadHeaderTimeout: time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          errLog,
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		ln.Close()
		return nil, errors.New("open a browser context's proxy: the router is closed; make a new one with netroute.New")
	}
	r.routes[rt] = struct{}{}
	r.routePorts[port] = true
	r.mu.Unlock()
	go rt.serveOn(ln)
	r.log.Debug("route opened", zap.String("addr", addr))
	return rt, nil
}

// forget drops a closed route.
func (r *Router) forget(rt *Route) {
	r.mu.Lock()
	delete(r.routes, rt)
	delete(r.routePorts, rt.port)
	r.mu.Unlock()
}

// Close closes every route; the router makes no more.
func (r *Router) Close() error {
	r.mu.Lock()
	r.closed = true
	routes := make([]*Route, 0, len(r.routes))
	for rt := range r.routes {
		routes = append(routes, rt)
	}
	r.mu.Unlock()
	var errs []error
	for _, rt := range routes {
		errs = append(errs, rt.Close())
	}
	return errors.Join(errs...)
}
