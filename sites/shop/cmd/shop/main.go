// Command shop runs WebServ's bundled shop on its own (the static binary
// that goes into a container image); `webserv shop` is the same program.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/webserv-rl/webserv/sites/shop"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(shop.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
