package server

import (
	"sync"

	"github.com/webserv-rl/webserv/netroute"
)

// EnvRoute is the route that carries environment env's browser requests
// now (nil when it has none): the fault tests close it under the
// environment.
func EnvRoute(s *Server, env string) *netroute.Route {
	x, err := s.session(env)
	if err != nil || x.net == nil {
		return nil
	}
	return x.net.Route()
}

// HoldGroupBases holds every group's background base build until release
// is called, so a test can have members join a group before its base
// build can fail. Call it before the server's first make.
func HoldGroupBases(s *Server) (release func()) {
	s.baseGate = make(chan struct{})
	var once sync.Once
	return func() { once.Do(func() { close(s.baseGate) }) }
}
