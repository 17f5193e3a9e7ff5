package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/server"
)

// serveCmd runs the environment server until ctx ends (Ctrl-C, SIGTERM).
func serveCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var ef envFlags
	ef.register(fs)
	ef.registerBrowsers(fs)
	listen := fs.String("listen", "127.0.0.1:8765", "address to listen on (port 0 picks a free one); non-loopback needs --token")
	token := fs.String("token", os.Getenv("WEBSERV_TOKEN"), "token clients must send in hello (default $WEBSERV_TOKEN)")
	var hf hostingFlags
	hf.register(fs)
	var cfg server.Config
	fs.IntVar(&cfg.MaxEnvs, "max-envs", 32, "most environments open at once")
	fs.IntVar(&cfg.MaxCreating, "max-creating", 4, "most environments being created at once")
	fs.DurationVar(&cfg.CreateWait, "create-wait", time.Minute, "how long a make waits for one of the max-creating places before it is answered capacity")
	fs.DurationVar(&cfg.TTL, "ttl", 10*time.Minute, "close an environment no request touched for this long")
	fs.Int64Var(&cfg.MaxFrame, "max-frame", 64<<20, "largest request frame in bytes")
	fs.DurationVar(&cfg.StepTimeout, "request-timeout", 2*time.Minute, "longest a request may run")
	fs.StringVar(&cfg.TrajectoryDir, "trajectories", "", "directory where make's record option writes episodes (off when empty); the UI's replayer shows them")
	fs.StringVar(&cfg.TokenizerDir, "tokenizers", "", "directory of tokenizer.json files (NAME.json or NAME/tokenizer.json) that observe.tokenizer names for a token budget")
	shutdownBound := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM or Ctrl-C, exit after at most this long even if environments are still closing")
	fs.BoolVar(&cfg.NoUI, "no-ui", false, "do not serve the web UI at /ui (live view, approval, replayer)")
	logLevelFlag(fs)
	fs.Lookup("warm-contexts").DefValue = "4"
	ef.warm = 4
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	cfg.Token = *token
	cfg.Env = ef.cfg
	if err := server.CheckListen(*listen, cfg.Token); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	// Every environment's browser context goes through a route of its own;
	// the server's own address is refused to all of them.
	st, err := startStack(ctx, log, &ef, &hf, l.Addr().String())
	if err != nil {
		l.Close()
		return err
	}
	defer st.close()
	srv := server.New(log.Named("server"), st.browser, st.factory, cfg)
	defer srv.Close() // a no-op after the shutdown below
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	// Clients that start the server themselves read this line for the port.
	fmt.Fprintf(stdout, "webserv: listening on http://%s (protocol ws://%s/v1/ws)\n", l.Addr(), l.Addr())
	if !cfg.NoUI {
		log.Info("web UI", zap.String("url", fmt.Sprintf("http://%s/ui/", l.Addr())))
	}
	log.Info("MCP (Streamable HTTP; docs/mcp.md)", zap.String("url", fmt.Sprintf("http://%s/v1/mcp", l.Addr())))
	log.Info("serving", zap.String("addr", l.Addr().String()), zap.Int("max_envs", cfg.MaxEnvs), zap.Bool("token", cfg.Token != ""))
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	// Shutdown: requests in flight are answered shutting_down while their
	// connections are still open, every environment and site instance is
	// closed, then the listener. Past shutdownBound the process exits
	// anyway; a second signal ends it at once (main).
	log.Info("shutting down: answering requests in flight, closing environments")
	watchdog := time.AfterFunc(*shutdownBound, func() {
		log.Error("shutdown took longer than its bound; exiting now", zap.Duration("bound", *shutdownBound))
		os.Exit(1)
	})
	defer watchdog.Stop()
	_ = srv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}
