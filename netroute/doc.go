// Package netroute gives each web-agent environment its own view of the
// network. Every Chromium browser context sends all its traffic, loopback
// included, through a proxy of its own, a Route; the route sends requests
// for the environment's canonical site origins (such as
// http://shop.webserv.test, a name no DNS resolves) to that environment's
// own instance of the site, and applies the environment's Policy to
// everything else. Two environments can thus load the same URL and see two
// different states of the same site, and observations carry canonical URLs
// only.
//
// A Router makes routes and refuses, whatever a policy allows, the
// addresses no environment may reach: the WebServ server's own, the
// browser's DevTools port, every route's. A Table is one environment's
// routing, origins and policy; routes are bound to tables and re-bound
// when a browser context moves to another environment:
//
//	router := netroute.New(logger, netroute.Options{Refuse: []string{"127.0.0.1:8080"}})
//	defer router.Close()
//	route, err := router.NewRoute() // one per browser context
//	...
//	// create the context with proxyServer route.ProxyURL(), loopback not bypassed
//
//	table := netroute.NewTable(netroute.Policy{}) // hosted: its own sites only
//	table.Set("http://shop.webserv.test", netroute.TCPDialer("127.0.0.1:41235"))
//	route.Bind(table)
//	// the context's http://shop.webserv.test/ is now that instance;
//	// http://127.0.0.1:41235/ is refused
//
//	resp, err := table.Client().Get("http://shop.webserv.test/login") // the server's own requests
//
// A route is an HTTP/1.1 forward proxy. Plain http requests go out as the
// browser sent them (same URL, same Host, no X-Forwarded-* headers) and
// their responses come back as the site sent them, streamed, redirects
// included. CONNECT tunnels bytes: to the instance for an origin's
// host:port (WebSockets), to the real host otherwise (https, opaque to the
// route).
//
// A Policy is either hosted (the environment's sites and an allowlist) or
// the open web (public addresses; loopback, private and link-local ones
// refused unless allowed, host names resolved once per connection and
// every address checked). Live sites are owed politeness: per-host rate
// and concurrency, a request cap per episode, a User-Agent, robots.txt.
//
// A refused request is recorded (Table.Refused) and answered with the
// reason in an X-WebServ-Refused header: a navigation with 204 No Content,
// so the page stays where it was, anything else with 403. Table.Check
// gives the same verdict, as an error an agent can act on, before a
// navigation is attempted.
package netroute
