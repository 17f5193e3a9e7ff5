package envcore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/launcher/flags"
	"github.com/go-rod/rod/lib/proto"
	"go.uber.org/zap"
)

// The browser binaries used when BrowserOptions.Bin is empty and
// $WEBSERV_CHROMIUM is unset: Debian's chromium-headless-shell (the old
// headless build, about half the CPU and memory per environment) when it
// is installed and no window is asked for, else Debian's chromium.
const (
	DefaultChromium      = "/usr/bin/chromium"
	DefaultHeadlessShell = "/usr/bin/chromium-headless-shell"
)

// ChromiumBin is the binary Launch runs for opts: opts.Bin, else
// $WEBSERV_CHROMIUM, else the headless shell when installed and opts.Show
// is false, else DefaultChromium.
func ChromiumBin(opts BrowserOptions) string {
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

// BrowserOptions configures the Chromium process.
type BrowserOptions struct {
	// Bin is the Chromium binary. Empty means ChromiumBin's choice.
	// WebServ never downloads a browser.
	Bin string
	// Show opens a visible window instead of running headless (with the
	// full browser: the headless shell has no window).
	Show bool
	// Flags are extra command-line switches, without the leading dashes
	// ("lang=en-US", "disable-gpu"). $WEBSERV_CHROMIUM_FLAGS adds more,
	// separated by spaces, after these (for trying a switch on any
	// command without rebuilding).
	Flags []string
	// WarmContexts is how many browser contexts (each with a blank tab) to
	// keep ready, so resets and forks need not wait for Chromium to create
	// them. 0 keeps none.
	WarmContexts int
	// Proxy, when set, gives every browser context a proxy of its own
	// (see Network); nil sends contexts straight to the network.
	Proxy func() (ContextProxy, error)
	// User is the account Chromium runs as when the server runs as root:
	// empty means DefaultBrowserUser. It must exist and must not be root
	// (Launch fails and says how to create it). When the server is not
	// root, Chromium runs as the server's own user and User must be empty
	// or name that user.
	User string
	// NoSandbox turns Chromium's sandbox off (--no-sandbox), for hosts
	// where it cannot start (no unprivileged user namespaces). Every
	// renderer then runs unconfined, as User; Launch logs a warning. A
	// "no-sandbox" in Flags or $WEBSERV_CHROMIUM_FLAGS does the same.
	NoSandbox bool
}

// Browser owns one Chromium process. Many environments share it, each in its
// own browser context (an incognito profile: separate cookies, storage and
// cache). A Browser is safe for concurrent use.
type Browser struct {
	log    *zap.Logger
	rod    *rod.Browser
	proc   *chromiumProcess
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the event loop ends

	pool     chan *warmContext
	poolWake chan struct{}
	proxy    func() (ContextProxy, error)
	busy     atomic.Int32 // environment operations in progress (see working)
	// unreported: tabs get no Network reports (netwatch.go), for the
	// benchmark that weighs what they cost.
	unreported bool
	// unsampled: environments' pages are not sampled for their resource
	// limits (resources.go), for the benchmark that weighs what the
	// samples cost.
	unsampled bool
	lastTake  atomic.Int64 // when the pool was last drawn from, in Unix ns

	// Supervision (crash.go, supervisor.go).
	started    time.Time
	mainPID    int          // Chromium's browser process (not its wrapper or guard)
	placed     atomic.Int32 // environments on this browser (Pool.NewEnv balances them)
	diedAt     atomic.Int64 // Unix ns when the browser was found dead, 0 while it lives
	supervised bool         // a Pool replaces it when it dies

	mu       sync.RWMutex
	sessions map[proto.TargetSessionID]*tab
	children map[proto.TargetSessionID]*tab // workers' and frames' sessions, by the tab that started them
	targets  map[proto.TargetTargetID]*tab
	contexts map[proto.BrowserBrowserContextID]*Env
	proxies  map[proto.BrowserBrowserContextID]ContextProxy
	closed   bool
	// deliberate: Close began while the browser lived; its end is then
	// no crash.
	deliberate bool
	// cause: why the server ended a browser that could no longer serve
	// (wedged.go); "" when it died on its own.
	cause string
}

// Launch starts Chromium and connects to it over a pipe (pipe.go). The
// process ends when Close is called; ctx bounds the start. Nothing
// restarts the browser if it dies: a Pool (supervisor.go) does.
func Launch(ctx context.Context, log *zap.Logger, opts BrowserOptions) (*Browser, error) {
	return launch(ctx, log, opts, false)
}

// launch is Launch, for a Pool when supervised.
func launch(ctx context.Context, log *zap.Logger, opts BrowserOptions, supervised bool) (*Browser, error) {
	if log == nil {
		log = zap.NewNop()
	}
	bin := ChromiumBin(opts)
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("chromium not found at %s: install Debian's chromium-headless-shell or chromium package (apt-get install chromium-headless-shell chromium) or set WEBSERV_CHROMIUM: %w", bin, err)
	}

	proc, err := launchProcess(ctx, log, bin, opts)
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(context.Background())
	tap := &netTap{ws: proc.conn} // reads the tabs' Network events (netwatch.go)
	rb, err := connect(ctx, bctx, proc, tap)
	if err != nil {
		cancel()
		_ = proc.stop(0)
		return nil, err
	}
	b := &Browser{
		log:      log,
		rod:      rb,
		proc:     proc,
		ctx:      bctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		started:  time.Now(),
		sessions: map[proto.TargetSessionID]*tab{},
		children: map[proto.TargetSessionID]*tab{},
		targets:  map[proto.TargetTargetID]*tab{},
		contexts: map[proto.BrowserBrowserContextID]*Env{},
		proxies:  map[proto.BrowserBrowserContextID]ContextProxy{},
		proxy:    opts.Proxy,

		supervised: supervised,
	}
	tap.b = b
	b.mainPID = browserPID(ctx, rb, proc)
	events := rb.Event() // subscribe before auto-attach so no attach is missed
	go b.loop(events)
	go b.watchExit()

	// Every new page target (ours or a popup) starts paused until we have
	// installed the injected script; see onAttached.
	err = proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true}.Call(rb)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("chromium auto-attach: %w", err)
	}
	if ver, err := (proto.BrowserGetVersion{}).Call(rb); err == nil {
		log.Info("browser started", zap.String("product", ver.Product), zap.String("bin", bin), zap.String("user", proc.acct.name),
			zap.Bool("sandbox", proc.sandboxed), zap.Int("pid", b.mainPID), zap.String("devtools", "pipe"))
	}
	if opts.WarmContexts > 0 {
		b.startPool(opts.WarmContexts)
	}
	return b, nil
}

// browserPID is Chromium's browser process, as Chromium itself names it.
// proc.pid can be a wrapper (Debian's chromium and chromium-headless-shell
// are shell scripts that start the binary as their child), and no reading
// of /proc tells the browser from a process it has just forked: until
// that child execs (a zygote, a utility), it has the browser's own command
// line. On a loaded host that window is long, and a pid taken in it named
// such a child (the network service, a zygote), so a kill meant for the
// browser (a health report's, a test's) ended the child instead, and the
// browser lived on, without zygotes unable to start pages (wedged.go).
// When Chromium does not answer, proc.pid is the best guess.
func browserPID(ctx context.Context, rb *rod.Browser, proc *chromiumProcess) int {
	info, err := proto.SystemInfoGetProcessInfo{}.Call(rb.Context(ctx))
	if err == nil {
		for _, p := range info.ProcessInfo {
			if p.Type == "browser" {
				return p.ID
			}
		}
	}
	return proc.pid
}

// connect starts rod's CDP client on proc's pipe, bound to life, and
// waits, within ctx, for the browser to answer its first command: a
// browser that ends before it does (a bad switch, a sandbox that cannot
// start) fails the launch with what it printed.
func connect(ctx, life context.Context, proc *chromiumProcess, conn cdp.WebSocketable) (*rod.Browser, error) {
	client := cdp.New().Start(conn)
	rb := rod.New().Client(client).Context(life)
	err := rb.Connect()
	if err == nil {
		_, err = proto.BrowserGetVersion{}.Call(rb.Context(ctx))
	}
	if err == nil {
		return rb, nil
	}
	// A browser that did not answer is usually ending (a pipe that broke on
	// read or on write): give it a moment to exit, so the error says what
	// it printed instead of the pipe's own complaint.
	select {
	case <-proc.exit:
	case <-time.After(5 * time.Second):
	}
	select {
	case <-proc.exit:
		err = fmt.Errorf("chromium ended before it answered on its DevTools pipe; it printed: %s", firstNonEmpty(proc.out.String(), "nothing"))
	default:
		err = fmt.Errorf("chromium did not answer on its DevTools pipe: %w (it printed: %s)", err, firstNonEmpty(proc.out.String(), "nothing"))
	}
	return nil, explainLaunchFailure(err, proc.acct)
}

// launchProcess starts Chromium for opts as Launch does (as
// browserAccountFor's user, with the sandbox unless opts turn it off, its
// DevTools protocol on a pipe).
func launchProcess(ctx context.Context, log *zap.Logger, bin string, opts BrowserOptions) (*chromiumProcess, error) {
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

// newLauncher is Chromium's command line as Launch starts it: bin with the
// closed-network switches, the features it runs without, --no-sandbox only
// when opts.NoSandbox asks for it, and opts' and WEBSERV_CHROMIUM_FLAGS's
// switches. (Launch starts the process itself: see startChromium.)
func newLauncher(ctx context.Context, bin string, opts BrowserOptions) *launcher.Launcher {
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

// Close ends every environment and the Chromium process, and removes its
// profile and temporary files.
func (b *Browser) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.deliberate = b.Alive()
	b.mu.Unlock()
	if b.Alive() {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		_ = proto.BrowserClose{}.Call(b.rod.Context(ctx)) // the process is stopped below either way
		cancel()
	}
	b.cancel()
	b.drainPool()
	err := b.proc.stop(2 * time.Second)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
	}
	return err
}

// Alive reports whether the Chromium process is still connected.
func (b *Browser) Alive() bool {
	select {
	case <-b.proc.conn.closed:
		return false
	default:
		return true
	}
}

// loop receives every CDP event and dispatches it by session to its tab.
func (b *Browser) loop(events <-chan *rod.Message) {
	defer close(b.done)
	for msg := range events {
		switch msg.Method {
		case "Target.attachedToTarget":
			var ev proto.TargetAttachedToTarget
			msg.Load(&ev)
			if msg.SessionID != "" {
				// A worker or frame a tab started (auto-attached to the
				// tab's session): its requests are the tab's.
				b.onChildAttached(msg.SessionID, ev)
				continue
			}
			go b.onAttached(ev)
		case "Target.detachedFromTarget":
			var ev proto.TargetDetachedFromTarget
			msg.Load(&ev)
			if msg.SessionID != "" {
				b.onChildDetached(ev.SessionID)
				continue
			}
			b.forget(b.tabBySession(ev.SessionID))
		case "Target.targetDestroyed":
			var ev proto.TargetTargetDestroyed
			msg.Load(&ev)
			b.forget(b.tabByTarget(ev.TargetID))
		case "Target.targetInfoChanged":
			var ev proto.TargetTargetInfoChanged
			msg.Load(&ev)
			if t := b.tabByTarget(ev.TargetInfo.TargetID); t != nil {
				t.setInfo(ev.TargetInfo.URL, ev.TargetInfo.Title)
			}
		default:
			if t := b.tabBySession(msg.SessionID); t != nil {
				t.onEvent(msg)
			}
		}
	}
}

func (b *Browser) tabBySession(id proto.TargetSessionID) *tab {
	if id == "" {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.sessions[id]
}

func (b *Browser) tabByTarget(id proto.TargetTargetID) *tab {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.targets[id]
}

func (b *Browser) forget(t *tab) {
	if t == nil {
		return
	}
	b.mu.Lock()
	delete(b.sessions, t.session)
	delete(b.targets, t.id)
	for id, x := range b.children {
		if x == t {
			delete(b.children, id)
		}
	}
	b.mu.Unlock()
	t.owner().dropTab(t)
}

// onAttached prepares a new page target while Chromium holds it paused: the
// injected bundle goes in before any script of the page can run, then the
// page resumes. Targets of contexts no environment owns just resume.
func (b *Browser) onAttached(ev proto.TargetAttachedToTarget) {
	sess := session{b: b.rod, id: ev.SessionID, ctx: b.ctx}
	info := ev.TargetInfo
	resume := func() { _ = proto.RuntimeRunIfWaitingForDebugger{}.Call(sess) }
	if info.Type != proto.TargetTargetInfoTypePage {
		resume()
		return
	}
	b.mu.RLock()
	env := b.contexts[info.BrowserContextID]
	b.mu.RUnlock()
	if ce := b.log.Check(zap.DebugLevel, "target attached"); ce != nil {
		ce.Write(zap.String("type", string(info.Type)), zap.String("url", info.URL), zap.Bool("managed", env != nil), zap.String("opener", string(info.OpenerID)))
	}
	if env == nil {
		resume()
		return
	}
	if !env.admitTab(info.BrowserContextID) {
		env.log.Debug("a page opened more tabs than allowed; closed the new one", zap.Int("max_tabs", env.cfg.MaxTabs))
		// Resumed before it is closed: a target closed while it waits
		// for the debugger holds up its opener's other popups.
		resume()
		_, _ = proto.TargetCloseTarget{TargetID: info.TargetID}.Call(b.rod)
		return
	}
	t := newTab(env, ev.SessionID, info)
	b.mu.Lock()
	b.sessions[ev.SessionID] = t
	b.targets[info.TargetID] = t
	b.mu.Unlock()
	ictx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	err := t.install(ictx, env.cfg.Viewport)
	cancel()
	if err != nil {
		env.log.Warn("preparing a new tab failed", zap.Error(err), zap.String("url", info.URL))
		resume()
	}
	env.addTab(t)
}

// newContext creates an isolated browser context for env, with its proxy
// when the browser routes contexts.
func (b *Browser) newContext(ctx context.Context, env *Env) (proto.BrowserBrowserContextID, ContextProxy, error) {
	id, p, err := b.createContext(ctx)
	if err != nil {
		return "", nil, err
	}
	b.mu.Lock()
	b.contexts[id] = env
	if p != nil {
		b.proxies[id] = p
	}
	b.mu.Unlock()
	// Downloads would write files on the host; an agent gets no use of them.
	_ = proto.BrowserSetDownloadBehavior{Behavior: proto.BrowserSetDownloadBehaviorBehaviorDeny, BrowserContextID: id}.Call(b.rod.Context(ctx))
	return id, p, nil
}

// disposeContext closes a browser context and all its tabs.
func (b *Browser) disposeContext(ctx context.Context, id proto.BrowserBrowserContextID) error {
	var err error
	if b.Alive() { // a dead browser's contexts went with it
		err = proto.TargetDisposeBrowserContext{BrowserContextID: id}.Call(b.rod.Context(ctx))
	}
	b.mu.Lock()
	delete(b.contexts, id)
	p := b.proxies[id]
	delete(b.proxies, id)
	for sid, t := range b.sessions {
		if t.ctxID == id {
			delete(b.sessions, sid)
			delete(b.targets, t.id)
		}
	}
	for sid, t := range b.children {
		if t.ctxID == id {
			delete(b.children, sid)
		}
	}
	b.mu.Unlock()
	if p != nil {
		_ = p.Close()
	}
	if err != nil {
		return fmt.Errorf("dispose browser context: %w", err)
	}
	return nil
}

// contextProxy is the proxy of context id (nil when contexts are not routed).
func (b *Browser) contextProxy(id proto.BrowserBrowserContextID) ContextProxy {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.proxies[id]
}
