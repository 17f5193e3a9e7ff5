// Package netroute gives every web-agent environment its own view of the
// network. Each browser context sends all its traffic to a Route, a proxy
// on a loopback port of its own; the route asks the Table it is bound to
// where each request goes:
//
//   - a canonical origin of one of the environment's sites
//     ("http://shop.webserv.test") goes to the instance serving that site
//     for this environment now, with the Host header the browser sent, so
//     N environments open one URL and each reaches its own copy;
//   - everything else goes through the table's Policy: for hosted sites
//     only an allowlist, for the open web public hosts (loopback, private
//     and link-local addresses refused unless allowed, names resolved once
//     and every address checked), with per-host rate and concurrency
//     limits and a request cap per episode for live sites.
//
// A refused request is recorded (Table.Refused) and answered 204 when it
// is a navigation (the browser stays on its page) or 403 otherwise, with
// the reason in X-WebServ-Refused.
//
//	r := netroute.New(log, netroute.Options{Refuse: []string{serverAddr}})
//	route, _ := r.NewRoute() // one per browser context: its ProxyURL goes to Chromium
//	t := netroute.NewTable(netroute.Policy{})
//	_ = t.Set("http://shop.webserv.test", netroute.TCPDialer("127.0.0.1:40125"))
//	route.Bind(t) // re-bound when the context changes hands
//
// Re-pointing an origin (Table.Set) or a route (Route.Bind) takes effect
// for the next request; the browser never learns an instance's address.
// The server's own requests for an environment (sign-in, grading) use
// Table.Client, which routes the same way.
package netroute
