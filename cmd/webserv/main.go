// Command webserv runs WebServ web-agent environments.
//
//	webserv try URL     open URL, print the observation, read actions from stdin
//	webserv demo        run a scripted episode on a bundled demo shop
//	webserv serve       serve environments over MessagePack WebSockets
//	webserv mcp         serve one Model Context Protocol session over stdio
//	webserv gc          remove containers leaked by servers that are gone
//	webserv image import --alias NAME IMAGE   import a Docker/OCI image into Incus
//	webserv export DIR  turn recorded trajectories into training datasets (or HAR traces)
//	webserv regrade DIR grade exported HAR traces again with WebArena-Verified
//	webserv wm-eval     score a world model on held-out real transitions
//	webserv replay DIR  serve the replayer of recorded trajectories (--rerun: run them again)
//	webserv tasks validate|check --sites DIR   check a site definition's own tasks
//	webserv explore     make demonstrations and tasks by exploring a site (the Python loop, docs/explore.md)
//	webserv eval        benchmark a model's agent over a task set (the Python runner, docs/eval.md)
//	webserv image shop  build the bundled shop's Incus image
//	webserv shop serve|generate   run the bundled shop, or make a catalog
//	webserv version     print the release, commit and Go version
//
// Each command parses its own flags and calls the packages: the sites it
// serves and their task sets are package catalog's (sites/catalog,
// catalog.Open with the hosting flags). The benchmark suites are the
// webserv-bench command (bench/cmd/webserv-bench).
//
// Run "webserv COMMAND -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/webserv-rl/webserv/internal/logs"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/shop"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful stop; with the handler gone, a
	// second one ends the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	log, err := logs.New(logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() { _ = log.Sync() }()

	var run func(context.Context, *zap.Logger, []string, io.Reader, io.Writer) error
	switch os.Args[1] {
	case "try":
		run = tryCmd
	case "demo":
		run = demoCmd
	case "serve":
		run = serveCmd
	case "mcp":
		run = mcpCmd
	case "gc":
		run = gcCmd
	case "image":
		run = imageCmd
	case "export":
		run = exportCmd
	case "regrade":
		run = regradeCmd
	case "wm-eval":
		run = wmEvalCmd
	case "replay":
		run = replayCmd
	case "tasks":
		run = tasksCmd
	case "explore":
		run = exploreCmd
	case "eval":
		run = evalCmd
	case "bench":
		fmt.Fprintln(os.Stderr, "webserv: the benchmark suites are their own binary: make bench-scale (and the other bench- targets) or go run ./bench/cmd/webserv-bench SUITE")
		os.Exit(2)
	case "version", "--version":
		fmt.Println(server.Build())
		return
	case "shop":
		os.Exit(shop.Main(ctx, os.Args[2:], os.Stdout, os.Stderr))
	case "-h", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "webserv: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := run(ctx, log, os.Args[2:], os.Stdin, os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h, --help: the usage was asked for and printed
		}
		fmt.Fprintln(os.Stderr, "webserv:", err)
		os.Exit(1)
	}
}

// logLevel is the level of the command's logger: info unless a
// command's --log-level changes it (serve, mcp) once its flags are read.
var logLevel = zap.NewAtomicLevelAt(zap.InfoLevel)

// logLevelFlag adds --log-level to fs, setting logLevel when parsed.
func logLevelFlag(fs *flag.FlagSet) {
	fs.Func("log-level", "least severe log level printed: debug, info, warn or error (default info)", func(s string) error {
		l, err := zapcore.ParseLevel(s)
		if err != nil || l < zapcore.DebugLevel || l > zapcore.ErrorLevel {
			return fmt.Errorf("unknown log level %q: use debug, info, warn or error", s)
		}
		logLevel.SetLevel(l)
		return nil
	})
}

// flagNames are the names of the flags fs has now.
func flagNames(fs *flag.FlagSet) map[string]bool {
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// printFlags prints the defaults of fs's flags that are in names.
func printFlags(fs *flag.FlagSet, names map[string]bool) {
	sub := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	sub.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if names[f.Name] {
			sub.Var(f.Value, f.Name, f.Usage)
		}
	})
	sub.PrintDefaults()
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: webserv COMMAND [flags]

commands:
  try URL   open URL in an environment, print the observation, then read
            actions from stdin (click("id"), fill("id", "text"), goto [url],
            stop [answer], ...) and print each next observation
  demo      run a scripted episode on a bundled demo shop and print every step
  serve     serve environments over MessagePack WebSockets (docs/protocol.md):
            the bundled shop (sites shopping and cms, docs/tasks.md) and
            --sites DIR (docs/sites.md); the web UI at /ui (docs/ui.md)
  mcp       serve one Model Context Protocol session over stdin/stdout, for
            MCP hosts that launch a command (docs/mcp.md); serve has it over
            HTTP at /v1/mcp
  gc        remove Incus containers leaked by servers that are gone (--all: every one)
  image import --alias NAME IMAGE
            import a docker-save tarball or OCI layout as an Incus image
  image shop [--alias webserv-shop]
            build the bundled shop's image (for serve --shop-image)
  export DIR
            turn recorded trajectories into transition or demonstration datasets;
            --format har -o OUT: each episode's network trace, answer and grading
            in WebArena-Verified's layout (OUT/<env>-<episode>/network.har)
  regrade OUT
            grade exported episodes again with WebArena-Verified's evaluators
            and compare with the rewards given online
  wm-eval --model MODEL --transitions FILE
            score a world model (memory:SRC, or an OpenAI-compatible endpoint)
            on held-out real transitions: exact next state, change F1, URL
            accuracy, and their decay over dream length (docs/dream.md)
  replay DIR
            serve the replayer of recorded trajectories (docs/ui.md); --rerun:
            run them again and report the first step that differs
  tasks validate|check --sites DIR [--site NAME]
            a site definition's own tasks (docs/tasks.md): validate loads and
            checks the task files; check replays every task's oracle (reward
            must be 1) and wrong sequence (reward 0) on fresh instances, in
            parallel, prints a table and exits 1 on any failure
  explore --site NAME --episodes N --out DIR [--model URL --model-name NAME]
            explore a site (NNetNav's loop, a Go-Browse frontier) and write
            demonstrations, tasks and a definition serving them (docs/explore.md);
            runs the Python package's loop (python -m webserv.explore)
  eval --model URL --model-name NAME --tasks SPEC --out DIR [--parallel N]
            run the reference agent on a model over a task set, with retries
            of infrastructure failures, and report success with 95% intervals
            (docs/eval.md); eval compare DIR_A DIR_B: the paired difference;
            runs the Python package's runner (python -m webserv.eval)
  shop serve|generate
            run the bundled shop, or generate a catalog (--seed, --scale)
  version   print the release, the commit it was built from and the Go version
`)
}
