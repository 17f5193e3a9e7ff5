package envcore

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore/chromium"
)

// BrowserOptions configures the Chromium process (chromium.Options) and
// what the Browser adds to it: warm contexts, per-context proxies.
type BrowserOptions struct {
	// Bin is the Chromium binary. Empty means chromium.Bin's choice.
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
	// empty means chromium.DefaultUser. It must exist and must not be root
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

// processOptions are the settings of o that the Chromium process takes.
func (o BrowserOptions) processOptions() chromium.Options {
	return chromium.Options{Bin: o.Bin, Show: o.Show, Flags: o.Flags, User: o.User, NoSandbox: o.NoSandbox}
}

// Browser owns one Chromium process. Many environments share it, each in its
// own browser context (an incognito profile: separate cookies, storage and
// cache). A Browser is safe for concurrent use.
type Browser struct {
	log    *zap.Logger
	rod    *rod.Browser
	proc   *chromium.Process
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

	// Supervision (crash.go, supervisor.go, package fleet).
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

// Launch starts Chromium and connects to it over a pipe (chromium.Start). The
// process ends when Close is called; ctx bounds the start. Nothing
// restarts the browser if it dies: a Pool (supervisor.go, with package
// fleet) does.
func Launch(ctx context.Context, log *zap.Logger, opts BrowserOptions) (*Browser, error) {
	return launch(ctx, log, opts, false)
}

// launch is Launch, for a Pool when supervised.
func launch(ctx context.Context, log *zap.Logger, opts BrowserOptions, supervised bool) (*Browser, error) {
	if log == nil {
		log = zap.NewNop()
	}
	popts := opts.processOptions()
	bin := chromium.Bin(popts)
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("chromium not found at %s: install Debian's chromium-headless-shell or chromium package (apt-get install chromium-headless-shell chromium) or set WEBSERV_CHROMIUM: %w", bin, err)
	}

	proc, err := chromium.Start(ctx, log, bin, popts)
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(context.Background())
	tap := &netTap{ws: proc.Pipe()} // reads the tabs' Network events (netwatch.go)
	rb, err := proc.Connect(ctx, bctx, tap)
	if err != nil {
		cancel()
		_ = proc.Stop(0)
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
	b.mainPID = proc.MainPID(ctx, rb)
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
		log.Info("browser started", zap.String("product", ver.Product), zap.String("bin", bin), zap.String("user", proc.User()),
			zap.Bool("sandbox", proc.Sandboxed()), zap.Int("pid", b.mainPID), zap.String("devtools", "pipe"))
	}
	if opts.WarmContexts > 0 {
		b.startPool(opts.WarmContexts)
	}
	return b, nil
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
	err := b.proc.Stop(2 * time.Second)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
	}
	return err
}

// Alive reports whether the Chromium process is still connected.
func (b *Browser) Alive() bool {
	select {
	case <-b.proc.Closed():
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
