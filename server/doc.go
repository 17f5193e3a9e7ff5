// Package server serves web-agent environments over one MessagePack-framed
// WebSocket per client (docs/protocol.md), over OpenEnv's WebSocket
// protocol for OpenEnv clients, and over the Model Context Protocol for
// MCP agent harnesses (/v1/mcp, and ServeMCP for stdio; docs/mcp.md). It
// is the wire and the sessions: what an environment is and does is
// package envcore's; which sites exist and where an environment's site
// runs is a Factory's: OpenFactory's open web here, or the site catalogue
// (package catalog, sites/catalog: site definitions, the bundled shop,
// WebArena's images and their task sets).
//
// # Serving
//
// New makes a Server from a browser (envcore.Launch, routed through a
// netroute.Router with Routed so every environment sees the network through
// its own table) and a Factory; Handler is its http.Handler:
//
//	router := netroute.New(log, netroute.Options{})
//	b, err := envcore.Launch(ctx, log, server.Routed(envcore.BrowserOptions{}, router))
//	...
//	s := server.New(log, b, server.OpenFactory{}, server.Config{})
//	defer s.Close()
//	http.Serve(listener, s.Handler())
//
// Close stops the server as http.Server.Shutdown does: new requests are
// answered shutting_down, the requests in flight are cancelled (every
// request's context derives from the server's) and waited for, then every
// environment and its site instance is closed.
//
// # The wire
//
// A request is a map {id, op, env, args}; the reply {id, ok, result | error,
// server_ms}. The operations are one table (ops.go): each has a typed
// argument struct, decoded strictly, so a misspelled argument is an error
// naming the nearest valid one, never a silent default. Dispatch, metric
// labels, hello's op list, the OpenEnv and MCP front ends and
// docs/protocol.md's table all read that table. Requests for one environment run in order on
// its worker; requests for different environments run at once.
//
// # Errors
//
// Handlers return errors; wireError turns them into the wire's Error, with a
// Code and the Fault it belongs to: the client's (the request is wrong), the
// agent's (the episode's state refuses it) or the infrastructure's (the
// browser, a site or the host failed). A failure nobody classified is the
// infrastructure's, so a trainer never scores an environment's failure
// against the policy.
package server
