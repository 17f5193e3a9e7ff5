// Command webserv-bench runs the Go benchmark suites of bench/suites
// (bench/README.md): webserv-bench SUITE [flags]. It is a binary of its own
// so that the server, webserv, links none of the suites' plotting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/internal/logs"

	"github.com/webserv-rl/webserv/sites/shop"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The server's own logger (internal/logs), so that a suite measures the
	// server as it runs in production.
	log, err := logs.New(zap.NewAtomicLevelAt(zap.InfoLevel))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() { _ = log.Sync() }()
	switch {
	case len(os.Args) > 1 && os.Args[1] == "shop":
		// The suites run the bundled shop as [this binary, shop, ...].
		os.Exit(shop.Main(ctx, os.Args[2:], os.Stdout, os.Stderr))
	case len(os.Args) > 1 && (os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help"):
		fmt.Println(benchUsage)
		return
	}
	if err := benchCmd(ctx, log, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "webserv-bench:", err)
		os.Exit(1)
	}
}
