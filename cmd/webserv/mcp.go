package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

// mcpCmd serves one MCP session over stdin and stdout (docs/mcp.md), for
// MCP hosts that launch a command: the session's environments run in
// this process, on the sites serve would host, and are closed when the
// host closes stdin or ctx ends. Logs go to stderr; stdout carries only
// the protocol.
func mcpCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	var ef envFlags
	ef.register(fs)
	ef.registerBrowsers(fs)
	var hf hostingFlags
	hf.register(fs)
	var d server.MCPDefaults
	fs.StringVar(&d.Site, "site", "", "the site a reset without arguments (or the first action) makes an environment on")
	fs.StringVar(&d.Task, "task", "", "the task a reset without arguments starts, like shopping.0")
	fs.StringVar(&d.StartURL, "start-url", "", "the page a reset without arguments starts at")
	fs.StringVar(&d.Goal, "goal", "", "the goal of an episode without a task")
	fs.BoolVar(&d.Record, "record", false, "record the session's episodes in --trajectories")
	fs.BoolVar(&d.Approve, "approve", false, "hold every action for a person's approval in the live view (needs --listen)")
	fs.IntVar(&d.MaxSteps, "max-steps", 0, "truncate an episode after this many steps (0: no limit)")
	fs.BoolVar(&d.EvaluateEveryStep, "evaluate-every-step", false, "grade every step: each reward is the change in the task's grade")
	fs.IntVar(&d.MaxTokens, "max-tokens", 0, "a token budget for every page text, counted by --tokenizer (0: none; docs/envcore.md, Token budget)")
	fs.StringVar(&d.SideEffects, "side-effects", "", "what a change the task did not ask for does to the reward: report (the default), fail or off (docs/tasks.md, Side effects)")
	fs.StringVar(&d.Tokenizer, "tokenizer", "", "the tokenizer.json the token budget counts with: a path, or a name in --tokenizers")
	var cfg server.Config
	fs.StringVar(&cfg.TrajectoryDir, "trajectories", "", "directory where recorded episodes are written (off when empty)")
	fs.StringVar(&cfg.TokenizerDir, "tokenizers", "", "directory of tokenizer.json files (NAME.json or NAME/tokenizer.json) that observe.tokenizer names for a token budget")
	fs.DurationVar(&cfg.StepTimeout, "request-timeout", 2*time.Minute, "longest a tool call may run")
	listen := fs.String("listen", "", "also serve the web UI (live view, approval), /v1/ws and /v1/mcp here, like 127.0.0.1:8765 (off when empty)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv mcp [flags]\n\nServes one Model Context Protocol session over stdin and stdout (docs/mcp.md).")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mcp takes no arguments, got %q; see webserv mcp --help", fs.Args())
	}
	if err := tasks.CheckSideEffectMode(d.SideEffects); err != nil {
		return fmt.Errorf("--side-effects: %w", err)
	}
	if d.Record && cfg.TrajectoryDir == "" {
		return errors.New("--record needs --trajectories DIR, where the episodes are written")
	}
	cfg.Env = ef.cfg
	cfg.NoUI = *listen == ""
	if d.Approve && cfg.NoUI {
		return errors.New("--approve needs --listen: a person approves actions in the live view at /ui")
	}
	var l net.Listener
	var refuse []string
	if *listen != "" {
		if err := server.CheckListen(*listen, ""); err != nil {
			return err
		}
		var err error
		if l, err = net.Listen("tcp", *listen); err != nil {
			return fmt.Errorf("listen on %s: %w", *listen, err)
		}
		defer l.Close()
		refuse = append(refuse, l.Addr().String())
	}
	st, err := startStack(ctx, log, &ef, &hf, refuse...)
	if err != nil {
		return err
	}
	defer st.close()
	b, factory := st.browser, st.factory
	srv := server.New(log.Named("server"), b, factory, cfg)
	defer srv.Close()
	if l != nil {
		hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(l) }()
		defer hs.Close()
		log.Info("web UI", zap.String("url", fmt.Sprintf("http://%s/ui/", l.Addr())))
	}
	return srv.ServeMCP(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}, d)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
