package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// stack is what every command that hosts environments brings up, in one
// path: a router whose per-context routes refuse the given addresses, the
// browsers (a supervised pool of --browsers processes) routed through it,
// and the site catalogue with its backends.
type stack struct {
	browser *envcore.Pool
	factory *catalog.Catalog
	close   func()
}

// startStack brings the stack up; close takes it down in reverse order.
func startStack(ctx context.Context, log *zap.Logger, ef *envFlags, hf *hostingFlags, refuse ...string) (*stack, error) {
	if ef.browsers < 1 {
		return nil, fmt.Errorf("--browsers %d: give 1 or more browser processes (default %d)", ef.browsers, envcore.DefaultBrowsers)
	}
	router := netroute.New(log.Named("route"), netroute.Options{Refuse: refuse})
	b, err := envcore.LaunchPool(ctx, log.Named("browser"), server.Routed(ef.browserOptions(), router), ef.browsers)
	if err != nil {
		_ = router.Close()
		return nil, err
	}
	cat, err := hf.open(ctx, log)
	if err != nil {
		_ = b.Close()
		_ = router.Close()
		return nil, err
	}
	return &stack{browser: b, factory: cat, close: func() {
		cat.Close()
		_ = b.Close()
		_ = router.Close()
	}}, nil
}
