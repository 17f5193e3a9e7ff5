package server

import "github.com/webserv-rl/webserv/netroute"

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
