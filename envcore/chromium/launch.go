package chromium

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/launcher/flags"
	"go.uber.org/zap"
)

// The browser binaries used when Options.Bin is empty and
// $WEBSERV_CHROMIUM is unset: Debian's chromium-headless-shell (the old
// headless build, about half the CPU and memory per environment) when it
// is installed and no window is asked for, else Debian's chromium.
const (
	DefaultChromium      = "/usr/bin/chromium"
	DefaultHeadlessShell = "/usr/bin/chromium-headless-shell"
)

// Bin is the binary Start runs for opts: opts.Bin, else
// $WEBSERV_CHROMIUM, else the headless shell when installed and opts.Show
// is false, else DefaultChromium.
func Bin(opts Options) string {
	if opts.Bin != "" {
		return opts.Bin
	}
	if bin := os.Getenv("WEBSERV_CHROMIUM"); bin != "" {
		return bin
	}
	if !opts.Show {
		if _, err := os.Stat(DefaultHeadlessShell); err == nil {
			return DefaultHeadlessShell
		}
	}
	return DefaultChromium
}

// closedNetworkFlags keep Chromium from calling home. On a closed network each
// of these background connections fails, and some retry in a loop.
var closedNetworkFlags = []string{
	"disable-background-networking",
	"disable-component-update",
	"disable-sync",
	"no-first-run",
	"disable-quic",
	"disable-domain-reliability",
	"disable-client-side-phishing-detection",
}

// Options are the settings of one Chromium process.
type Options struct {
	// Bin is the Chromium binary. Empty means Bin's choice. WebServ never
	// downloads a browser.
	Bin string
	// Show opens a visible window instead of running headless (with the
	// full browser: the headless shell has no window).
	Show bool
	// Flags are extra command-line switches, without the leading dashes
	// ("lang=en-US", "disable-gpu"). $WEBSERV_CHROMIUM_FLAGS adds more,
	// separated by spaces, after these.
	Flags []string
	// User is the account Chromium runs as when the server runs as root:
	// empty means DefaultUser. It must exist and must not be root. When
	// the server is not root, Chromium runs as the server's own user and
	// User must be empty or name that user.
	User string
	// NoSandbox turns Chromium's sandbox off (--no-sandbox); Start logs a
	// warning. A "no-sandbox" in Flags or $WEBSERV_CHROMIUM_FLAGS does the
	// same.
	NoSandbox bool
}

// Start starts bin (Bin's choice for opts, found on the host) for opts:
// as the account accountFor names, with the sandbox unless opts turn it
// off, in directories of its own, its DevTools protocol on a pipe
// (Process.Pipe). ctx bounds the start only; the process runs until Stop
// or until it ends on its own (Process.Closed).
func Start(ctx context.Context, log *zap.Logger, bin string, opts Options) (*Process, error) {
	acct, err := browserAccountFor(opts)
	if err != nil {
		return nil, err
	}
	if n := removeStaleBrowserDirs(os.TempDir()); n > 0 {
		log.Info("removed the directories of browsers whose server ended without closing them", zap.Int("count", n), zap.String("under", os.TempDir()))
	}
	dirs, err := newBrowserDirs(acct)
	if err != nil {
		return nil, err
	}
	l := newLauncher(ctx, bin, opts).UserDataDir(dirs.data)
	sandboxed := !l.Has(flags.NoSandbox)
	if !sandboxed {
		log.Warn("chromium's sandbox is off (--no-sandbox): a page that exploits a renderer bug runs unconfined on this host as the browser's user; turn it off only where the sandbox cannot start",
			zap.String("user", acct.name))
	}
	proc, err := startChromium(ctx, l, bin, acct, dirs, browserEnv(acct, dirs, os.Environ()))
	if err != nil {
		_ = dirs.remove()
		return nil, fmt.Errorf("launch chromium (%s) as user %s: %w", bin, acct.name, err)
	}
	proc.sandboxed = sandboxed
	return proc, nil
}

// newLauncher is Chromium's command line as Start starts it: bin with the
// closed-network switches, the features it runs without, --no-sandbox only
// when opts.NoSandbox asks for it, and opts' and WEBSERV_CHROMIUM_FLAGS's
// switches. (Start starts the process itself: see startChromium.)
func newLauncher(ctx context.Context, bin string, opts Options) *launcher.Launcher {
	l := launcher.New().Context(ctx).Bin(bin).Headless(!opts.Show)
	for _, f := range closedNetworkFlags {
		l.Set(flagName(f))
	}
	l.Set("disable-gpu").Set("mute-audio").Set("hide-scrollbars").Set("disable-extensions").
		Set("no-default-browser-check").Set("password-store", "basic").
		Set("disable-features", disabledFeatures...)
	// Rod's defaults turn the sandbox off in a container (/.dockerenv and
	// the like); here only opts.NoSandbox (or a no-sandbox switch in the
	// flags below) does.
	l.Delete(flags.NoSandbox)
	// DevTools on a pipe (fds 3 and 4), not a TCP port any local process
	// could connect to (pipe.go).
	l.Delete(flags.RemoteDebuggingPort)
	l.Set("remote-debugging-pipe")
	if opts.NoSandbox {
		l.Set(flags.NoSandbox)
	}
	for _, f := range append(slices.Clone(opts.Flags), strings.Fields(os.Getenv("WEBSERV_CHROMIUM_FLAGS"))...) {
		f = strings.TrimLeft(f, "-")
		name, val, hasVal := cut(f, '=')
		if hasVal {
			l.Set(flagName(name), val)
		} else {
			l.Set(flagName(name))
		}
	}
	return l
}

// disabledFeatures are the Chromium features the browser runs without.
var disabledFeatures = []string{
	// One renderer process per browser context, not one per site.
	"site-per-process",
	// Services that would call out to the network or do nothing headless.
	"TranslateUI", "MediaRouter", "OptimizationHints", "AutofillServerCommunication", "InterestFeedContentSuggestions",
	// No back/forward cache: going back re-runs the page, so an
	// observation after go_back depends only on the history entry.
	"BackForwardCache",
	// RenderDocument gives every cross-document navigation a new frame
	// in the renderer, with a compositor of its own; reusing the frame
	// cuts the CPU of a navigation by about a quarter (bench/README.md,
	// "scale") and changes nothing a page can see.
	"RenderDocument",
}

func flagName(s string) flags.Flag { return flags.Flag(s) }

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
