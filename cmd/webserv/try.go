package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/envcore/chromium"
)

// envFlags are the environment settings every command takes.
type envFlags struct {
	cfg       envcore.Config
	show      bool
	bin       string
	warm      int
	user      string
	noSandbox bool
	browsers  int // commands that host many environments (registerBrowsers)
}

func (f *envFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.cfg.IdleWindow, "idle", 0, "grace after the last request or navigation event the action caused before observing (default 30ms)")
	fs.DurationVar(&f.cfg.SettleTimeout, "settle-timeout", 0, "longest wait for the page to settle (default 10s)")
	fs.DurationVar(&f.cfg.ActionTimeout, "action-timeout", 0, "longest an action may run; a page script still running then is stopped (default 10s)")
	fs.IntVar(&f.cfg.MaxMemoryMB, "max-memory-mb", 0, "per environment: most MiB its largest page may hold in JavaScript heap and array buffers; over it the episode ends with resource_limit (default 1024)")
	fs.IntVar(&f.cfg.MaxDOMNodes, "max-dom-nodes", 0, "per environment: most DOM nodes of its largest page (default 300000)")
	fs.IntVar(&f.cfg.MaxObservationBytes, "max-observation-bytes", 0, "per environment: largest observation in bytes, screenshots apart (default 16 MiB)")
	fs.IntVar(&f.cfg.MaxTabs, "max-tabs", 0, "per environment: most tabs open at once (default 10)")
	fs.BoolVar(&f.cfg.Observe.AXTree, "axtree", false, "print the accessibility-tree view instead of the HTML")
	fs.BoolVar(&f.show, "show", false, "show the browser window instead of running headless")
	fs.StringVar(&f.bin, "chromium", "", "Chromium binary (default $WEBSERV_CHROMIUM, else /usr/bin/chromium-headless-shell when installed and --show is off, else /usr/bin/chromium)")
	fs.IntVar(&f.warm, "warm-contexts", 0, "browser contexts to keep ready for resets and forks")
	fs.StringVar(&f.user, "browser-user", "", "when run as root, the unprivileged user Chromium runs as, with its sandbox on (default "+chromium.DefaultUser+", which make setup creates)")
	fs.Func("upload-dir", "directory the upload_file and mouse_upload_file actions choose files from, read-only to agents and the root of their paths (off when empty: uploads are refused); Chromium's user must be able to read it", func(dir string) error {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("%q is not a directory: give the directory agents' uploads are chosen from", dir)
		}
		f.cfg.UploadDir = dir
		return nil
	})
	fs.BoolVar(&f.noSandbox, "no-sandbox", false, "turn Chromium's sandbox off (logs a warning): only on hosts where it cannot start, for lack of unprivileged user namespaces")
}

// registerBrowsers adds --browsers, for the commands that host many
// environments (startStack's).
func (f *envFlags) registerBrowsers(fs *flag.FlagSet) {
	fs.IntVar(&f.browsers, "browsers", envcore.DefaultBrowsers, "browser processes the environments are spread over, each restarted when it dies: a crash loses at most its share of the environments; each costs some tens of MiB more (docs/envcore.md, \"Browser processes\")")
}

func (f *envFlags) launch(ctx context.Context, log *zap.Logger) (*envcore.Browser, error) {
	return envcore.Launch(ctx, log.Named("browser"), f.browserOptions())
}

func (f *envFlags) browserOptions() envcore.BrowserOptions {
	return envcore.BrowserOptions{Bin: f.bin, Show: f.show, WarmContexts: f.warm, User: f.user, NoSandbox: f.noSandbox}
}

func tryCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("try", flag.ContinueOnError)
	var ef envFlags
	ef.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv try [flags] URL\n\nOpens URL, prints the observation, then reads one action per line from stdin.")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("try needs exactly one URL")
	}
	b, err := ef.launch(ctx, log)
	if err != nil {
		return err
	}
	defer b.Close()
	env := b.NewEnv(ef.cfg)
	defer env.Close()
	obs, info, err := env.Reset(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	printObservation(stdout, obs, info, ef.cfg.Observe.AXTree)
	return repl(ctx, env, stdin, stdout, ef.cfg.Observe.AXTree)
}

// repl reads actions line by line and prints each next observation.
func repl(ctx context.Context, env *envcore.Env, in io.Reader, out io.Writer, axtree bool) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	fmt.Fprint(out, "\naction> ")
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch line {
		case "":
			fmt.Fprint(out, "action> ")
			continue
		case "quit", "exit":
			return nil
		}
		obs, info, err := env.StepText(ctx, line)
		if errors.Is(err, envcore.ErrTerminated) {
			fmt.Fprintln(out, "the episode has ended; type quit")
			fmt.Fprint(out, "action> ")
			continue
		}
		if err != nil {
			return err
		}
		printObservation(out, obs, info, axtree)
		fmt.Fprint(out, "\naction> ")
	}
	return sc.Err()
}
