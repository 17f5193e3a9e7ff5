package envcore

import (
	"context"
	"fmt"

	"github.com/go-rod/rod/lib/proto"
)

// What an environment can reach is decided outside envcore: a Browser
// launched with BrowserOptions.Proxy creates every browser context with a
// proxy of its own (loopback not bypassed), and an Env given a Network
// binds each context it takes to that Network before any of its pages
// loads. Package netroute provides both; envcore only learns a proxy URL
// and asks the Network whether a URL may be opened.

// ContextProxy is the proxy one browser context sends all its traffic
// through.
type ContextProxy interface {
	// ProxyURL is the proxy server, like "http://127.0.0.1:40123".
	ProxyURL() string
	// Close frees the proxy once its context is gone.
	Close() error
}

// Network is an environment's view of the network.
type Network interface {
	// Bind points a browser context's proxy at this environment. It is
	// called each time the environment takes a context (a fresh one or a
	// warm one from the pool), before any page of it loads.
	Bind(p ContextProxy)
	// Check reports whether rawURL may be opened; its error is the action
	// error an agent sees (goto, new_tab, a reset's start page).
	Check(rawURL string) error
}

// SetNetwork routes the environment's browser contexts through n from its
// next Reset or RestoreState on. It needs a Browser launched with
// BrowserOptions.Proxy.
func (e *Env) SetNetwork(n Network) error {
	if n != nil && e.br().proxy == nil {
		return fmt.Errorf("the browser was launched without per-context proxies (BrowserOptions.Proxy), so an environment's network cannot be routed")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.net = n
	return nil
}

// bindContext binds the context e has just taken to e's network.
func (e *Env) bindContext(p ContextProxy) {
	if e.net != nil && p != nil {
		e.net.Bind(p)
	}
}

// checkURL asks e's network whether u may be opened.
func (e *Env) checkURL(u string) error {
	if e.net == nil || u == "about:blank" {
		return nil
	}
	if err := e.net.Check(u); err != nil {
		return actionErr("refused", "%v", err)
	}
	return nil
}

// createContext creates a browser context, with a proxy of its own when the
// browser routes contexts.
func (b *Browser) createContext(ctx context.Context) (proto.BrowserBrowserContextID, ContextProxy, error) {
	req := proto.TargetCreateBrowserContext{}
	var p ContextProxy
	if b.proxy != nil {
		var err error
		if p, err = b.proxy(); err != nil {
			return "", nil, fmt.Errorf("create a browser context's proxy: %w", err)
		}
		// "<-loopback>" takes loopback off Chromium's implicit bypass
		// list: every request, 127.0.0.1 included, goes to the proxy.
		req.ProxyServer, req.ProxyBypassList = p.ProxyURL(), "<-loopback>"
	}
	res, err := req.Call(b.rod.Context(ctx))
	if err != nil {
		if p != nil {
			_ = p.Close()
		}
		return "", nil, fmt.Errorf("create browser context: %w", err)
	}
	return res.BrowserContextID, p, nil
}
