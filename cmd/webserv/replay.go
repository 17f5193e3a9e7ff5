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
	"github.com/webserv-rl/webserv/trajectory"
	"github.com/webserv-rl/webserv/ui"
)

// replayCmd serves the replayer of a trajectory directory (no browser
// needed), or with --rerun runs recorded episodes again and reports where
// they first differ.
func replayCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8766", "address to serve the replayer on (port 0 picks a free one); non-loopback needs --token")
	token := fs.String("token", os.Getenv("WEBSERV_TOKEN"), "token the replayer's URL must carry as ?token= (default $WEBSERV_TOKEN)")
	rerun := fs.Bool("rerun", false, "do not serve: run each episode's actions again on a fresh environment of its site and task, and report the first step whose observation differs (exit status 1 when one does)")
	verify := fs.Bool("verify", false, "as --rerun, and every recorded observation must carry its page hash (obs_hash): each re-run observation's page (URL, HTML, inputs, focus, tabs, scroll) must be the recorded one; an episode recorded without hashes is an error")
	own := flagNames(fs)
	var ef envFlags
	ef.register(fs)
	ef.registerBrowsers(fs)
	var hf hostingFlags
	hf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv replay [flags] TRAJECTORY-DIR\n       webserv replay --rerun|--verify [flags] TRAJECTORY-DIR-OR-EPISODE...\n\nServes the replayer of the episodes `webserv serve --trajectories` recorded (docs/ui.md).")
		printFlags(fs, own)
		fmt.Fprintln(fs.Output(), "\nWith --rerun it also takes the browser and site flags of serve (webserv serve --help).")
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	*rerun = *rerun || *verify
	if fs.NArg() == 0 || !*rerun && fs.NArg() != 1 {
		fs.Usage()
		return errors.New("replay needs one trajectory directory (with --rerun: directories or episode files)")
	}
	if *rerun {
		return rerunEpisodes(ctx, log, ef, hf, fs.Args(), *verify, stdout)
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("trajectory directory %s: not a directory; give the --trajectories directory of webserv serve", dir)
	}
	if err := server.CheckListen(*listen, *token); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	h := server.MountUI(*token, ui.Handler(ui.Config{Log: log.Named("ui"), Replay: ui.NewReplay(dir)}))
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	fmt.Fprintf(stdout, "webserv replay: %s at http://%s/ui/\n", dir, l.Addr())
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// rerunEpisodes re-runs the episodes under paths on a server of its own
// (a browser and the sites of hf, as webserv serve has them).
//
// verify (--verify) asks every episode for its page hashes before any runs.
func rerunEpisodes(ctx context.Context, log *zap.Logger, ef envFlags, hf hostingFlags, paths []string, verify bool, stdout io.Writer) error {
	files, err := trajectory.Find(paths...)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no recorded episodes (*%s) under %v", trajectory.Ext, paths)
	}
	if verify {
		for _, f := range files {
			ep, err := trajectory.Read(f)
			if err != nil {
				return err
			}
			if !ep.Hashed() {
				return fmt.Errorf("%s was recorded without page hashes (obs_hash), which --verify checks; record it again with this server, or compare its URL and HTML with --rerun", f)
			}
		}
	}
	st, err := startStack(ctx, log, &ef, &hf)
	if err != nil {
		return err
	}
	defer st.close()
	b, factory := st.browser, st.factory
	srv := server.New(log.Named("server"), b, factory, server.Config{Env: ef.cfg, NoUI: true})
	defer srv.Close()
	diverged := 0
	for _, f := range files {
		ep, err := trajectory.Read(f)
		if err != nil {
			return err
		}
		rep, err := srv.Rerun(ctx, ep)
		if err != nil {
			return fmt.Errorf("re-run %s: %w", f, err)
		}
		fmt.Fprintln(stdout, rep)
		if rep.Diverged {
			diverged++
		}
	}
	if diverged > 0 {
		return fmt.Errorf("%d of %d episodes diverged from their recording", diverged, len(files))
	}
	return nil
}
