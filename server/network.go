package server

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
)

// Each environment sees the network through its own netroute.Table: its
// sites at their canonical origins (whatever instance serves them now) and
// its policy for everything else. The browser's contexts reach the table
// through per-context proxies (Routed); the server's own requests for the
// environment (sign-in, grading) through the table's Client.

// Network is what an environment reaches while it holds an instance.
type Network struct {
	// Origins maps each canonical origin of the instance's sites to how
	// the instance is dialed.
	Origins map[string]netroute.Dialer
	// Policy applies to every other request.
	Policy netroute.Policy
}

// Routed returns opts with every browser context given its own route of
// router, which is what a Server's environments need.
func Routed(opts envcore.BrowserOptions, router *netroute.Router) envcore.BrowserOptions {
	opts.Proxy = func() (envcore.ContextProxy, error) { return router.NewRoute() }
	return opts
}

// tableNetwork is an environment's table as envcore sees it.
type tableNetwork struct{ t *netroute.Table }

func (n tableNetwork) Bind(p envcore.ContextProxy) {
	if r, ok := p.(*netroute.Route); ok {
		r.Bind(n.t)
	}
}

func (n tableNetwork) Check(rawURL string) error { return n.t.Check(rawURL) }

// openPolicy is the open site's policy for an episode starting at start: the
// open web, plus the start URL's own host when it is local (so a site under
// development on 127.0.0.1 works), plus the allowlist.
func openPolicy(start string, allow []string) netroute.Policy {
	p := netroute.Policy{Open: true, Allow: append([]string{}, allow...)}
	if u, err := url.Parse(start); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		p.Allow = append(p.Allow, net.JoinHostPort(u.Hostname(), port))
	}
	return p
}

// reportRefusals puts what the environment's policy refused since the last
// reply into info.Refused; a refused navigation of the page becomes the
// observation's last_action_error, with code refused, when the action had
// no error or only the browser's view of the same refusal (a navigation
// that failed: net::ERR_ABORTED and the like).
func reportRefusals(x *session, obs *envcore.Observation, info *StepInfo) {
	refs := x.net.Refused()
	if len(refs) == 0 {
		return
	}
	info.Refused = make([]Refusal, len(refs))
	for i, r := range refs {
		info.Refused[i] = Refusal{URL: r.URL, Method: r.Method, Reason: r.Reason, Navigation: r.Navigation, Time: r.Time.UTC().Format(time.RFC3339Nano)}
	}
	if obs.LastActionError != "" && info.ActionErrorCode != "navigation" {
		return
	}
	for _, r := range refs {
		if r.Navigation {
			obs.LastActionError = fmt.Sprintf("navigation to %s was refused: %s", r.URL, r.Reason)
			info.ActionError, info.ActionErrorCode = obs.LastActionError, "refused"
			return
		}
	}
}
