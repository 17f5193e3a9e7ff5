package envcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod/lib/proto"
	"go.uber.org/zap"
)

// Viewport is the size of every tab's window in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Config configures one environment. The zero value of each field means its
// default.
type Config struct {
	// Viewport of every tab. Default 1280x720.
	Viewport Viewport
	// IdleWindow is the least a step waits after its action, and after the
	// last request the action caused starts or ends or the last navigation
	// event, before it observes the page (WebServ paper, 3.3;
	// docs/envcore.md, "Settling"). Default DefaultIdleWindow (30ms).
	IdleWindow time.Duration
	// SettleTimeout bounds the wait for the work an action caused. A page
	// still busy then is observed as it is and the step reports
	// Settled=false, SettleReason "timeout". Default 10s. A restore
	// (RestoreState) waits for its pages to load as long as its context
	// allows, and then settles within SettleTimeout.
	SettleTimeout time.Duration
	// LongRequest is the age after which a request in flight stops
	// counting once its server has answered a later request of the page
	// (a long poll), so long polling does not hold every step; a slow
	// server's requests are waited for. WebSocket and EventSource never
	// count. Default 5s.
	LongRequest time.Duration
	// ActionTimeout bounds the action itself (not the settle). Default 10s.
	// An action still running then (a page script that never ends) has the
	// page's script stopped; a page that does not answer even then fails
	// the step with ErrUnresponsive.
	ActionTimeout time.Duration
	// MaxMemoryMB bounds what the environment's largest page holds in its
	// JavaScript heap and array buffers, in MiB, sampled while it steps.
	// Over it the step fails with a *ResourceLimitError (ErrResourceLimit)
	// and the environment is closed until Reset. Default 1024.
	MaxMemoryMB int
	// MaxDOMNodes bounds the DOM nodes of the environment's largest page
	// (its renderer's count), sampled like MaxMemoryMB. Default 300000.
	MaxDOMNodes int
	// MaxObservationBytes bounds one observation's size as the page
	// produces it (HTML, ids, states; screenshots apart). Over it the step
	// fails like over MaxMemoryMB. Default 16 MiB.
	MaxObservationBytes int
	// MaxBusy bounds the main-thread CPU time a page may spend without a
	// break between steps (a script in an endless loop started after a
	// step ended takes a core of the host until the next). It counts CPU
	// time, not wall time: on a loaded host a page is charged for what it
	// ran, never for the host's load. Over it the environment is closed
	// like over MaxMemoryMB; the next step answers the
	// *ResourceLimitError. During a step the timeouts bound it.
	// Default 10s.
	MaxBusy time.Duration
	// ObserveTimeout bounds reading the observation. A page that takes
	// longer and is over a resource limit fails the step with that limit;
	// otherwise its script is stopped and it is read once more; late again,
	// the step fails with ErrUnresponsive. Default 20s: an observation takes
	// milliseconds, and the margin is for a starved host, where a misfire
	// would cost the episode. A step therefore lasts at most about
	// ActionTimeout + SettleTimeout + 2 ObserveTimeout plus a few seconds of
	// recovery (about 65 s with the defaults, under the server's 2 minute
	// request timeout), whatever the page does.
	ObserveTimeout time.Duration
	// Retries is how many times an element action is retried when its
	// target is covered or not yet visible. Default 2; -1 means none.
	Retries int
	// MaxTabs is the most tabs an environment may have open. Default 10.
	MaxTabs int
	// UploadDir is the directory upload_file and mouse_upload_file choose
	// files from: the root of their paths ("/a.pdf" and "a.pdf" are both
	// UploadDir/a.pdf; ".." cannot leave it). Chromium reads the files, so
	// its user must be able to. Empty: uploads are refused.
	UploadDir string
	// Observe are the optional observation parts every Step returns.
	Observe ObserveOptions
}

func (c Config) withDefaults() Config {
	if c.Viewport.Width <= 0 || c.Viewport.Height <= 0 {
		c.Viewport = Viewport{1280, 720}
	}
	if c.IdleWindow <= 0 {
		c.IdleWindow = DefaultIdleWindow
	}
	if c.SettleTimeout <= 0 {
		c.SettleTimeout = 10 * time.Second
	}
	if c.LongRequest <= 0 {
		c.LongRequest = 5 * time.Second
	}
	if c.ActionTimeout <= 0 {
		c.ActionTimeout = 10 * time.Second
	}
	if c.MaxMemoryMB <= 0 {
		c.MaxMemoryMB = 1024
	}
	if c.MaxDOMNodes <= 0 {
		c.MaxDOMNodes = 300_000
	}
	if c.MaxObservationBytes <= 0 {
		c.MaxObservationBytes = 16 << 20
	}
	if c.MaxBusy <= 0 {
		c.MaxBusy = 10 * time.Second
	}
	if c.ObserveTimeout <= 0 {
		c.ObserveTimeout = 20 * time.Second
	}
	if c.Retries == 0 {
		c.Retries = 2
	} else if c.Retries < 0 {
		c.Retries = 0
	}
	if c.MaxTabs <= 0 {
		c.MaxTabs = 10
	}
	return c
}

// StepInfo tells how a step went.
type StepInfo struct {
	// Action, Settle and Extract split the step's time.
	Action  time.Duration `json:"action"`
	Settle  time.Duration `json:"settle"`
	Extract time.Duration `json:"extract"`
	// Settled is false when work the action caused was still pending at
	// SettleTimeout; SettleError then says what it was waiting for.
	Settled     bool   `json:"settled"`
	SettleError string `json:"settle_error,omitempty"`
	// SettleReason says why the step stopped waiting: "drained" (the work
	// the action caused finished, then the idle window passed), "idle" (the
	// action caused no work that could be tracked: the idle window alone)
	// or "timeout". Empty for steps that do not wait (terminate, send_msg,
	// an action that does not parse).
	SettleReason string `json:"settle_reason,omitempty"`
	// Pending names, on a timeout, a few of the things the action caused
	// that were still pending: "GET http://host/api (for 9.8s)",
	// "setTimeout 700ms (for 0.3s)", "document loading: http://host/".
	Pending []string `json:"pending,omitempty"`
	// ActionError is the action's failure, as also put in
	// Observation.LastActionError; ActionErrorCode classifies it.
	ActionError     string `json:"action_error,omitempty"`
	ActionErrorCode string `json:"action_error_code,omitempty"`
	// Attempts is how many times the action ran (1 plus retries).
	Attempts int `json:"attempts"`
	// Terminated is set when the step was a terminate action.
	Terminated bool   `json:"terminated,omitempty"`
	Answer     string `json:"answer,omitempty"`
	Infeasible bool   `json:"infeasible,omitempty"`
}

// Errors of environment operations (not of agent actions, which are
// reported in the observation).
var (
	ErrClosed     = errors.New("environment is closed: make a new one")
	ErrTerminated = errors.New("episode ended with terminate: call Reset to start a new one")
	ErrNotReset   = errors.New("environment has no page yet: call Reset first")
)

// Env is one web-agent environment: an isolated browser context with its
// tabs. Its methods are safe for concurrent use and run one at a time.
type Env struct {
	src placer                  // where it gets a browser (its Browser, or a Pool)
	bp  atomic.Pointer[Browser] // the browser its pages are in (br)
	// holder: it only holds a warm context (pool.go), uncounted.
	holder bool
	log    *zap.Logger
	cfg    Config

	mu         sync.Mutex // serializes Reset, Step, Observe, Close
	net        Network    // nil: contexts are not routed
	ctxID      proto.BrowserBrowserContextID
	closed     bool
	terminated bool
	lost       error         // why the environment was given up (ErrUnresponsive, a limit), until Reset
	quit       chan struct{} // closed by Close: ends watchIdle
	chat       []ChatMessage
	act        uint64 // the latest action's number, for settle (inject/settle.js)
	// sampled is when the resource watch last found every page within
	// its limits, in Unix ns (resources.go, dueSample).
	sampled atomic.Int64

	tabMu     sync.Mutex
	clock     string // the episode's clock script (clock.go), "" for none
	tabs      []*tab
	active    int
	attaching int           // tabs admitted by admitTab, not yet added
	blocked   int           // tabs refused since the last observation
	changed   chan struct{} // closed and replaced whenever tabs change
}

// NewEnv creates an environment on b. It opens no page until Reset; its
// resource watch runs until Close.
func (b *Browser) NewEnv(cfg Config) *Env {
	return b.newEnv(cfg, b)
}

// newEnv is NewEnv for an environment placed on b by src.
func (b *Browser) newEnv(cfg Config, src placer) *Env {
	e := &Env{src: src, log: b.log, cfg: cfg.withDefaults(), changed: make(chan struct{}), quit: make(chan struct{})}
	e.moveTo(b)
	go e.watchIdle()
	return e
}

// newHolder is an environment that holds a warm context for the pool
// (pool.go): it is not counted among b's environments.
func (b *Browser) newHolder() *Env {
	e := &Env{src: b, log: b.log, cfg: Config{}.withDefaults(), changed: make(chan struct{}), quit: make(chan struct{}), holder: true}
	e.bp.Store(b)
	go e.watchIdle()
	return e
}

// br is the browser e's pages are in. It changes only in a Reset or
// RestoreState after that browser died (place).
func (e *Env) br() *Browser { return e.bp.Load() }

// moveTo makes b e's browser, keeping the browsers' counts of their
// environments.
func (e *Env) moveTo(b *Browser) {
	if old := e.bp.Swap(b); old != b && !e.holder {
		if old != nil {
			old.placed.Add(-1)
		}
		if b != nil {
			b.placed.Add(1)
		}
	}
}

// Config returns the environment's configuration with defaults filled in.
func (e *Env) Config() Config { return e.cfg }

// Reset starts a new episode: a fresh browser context (no cookies, storage
// or history of the last episode) with one tab at startURL, observed once
// the page has settled.
func (e *Env) Reset(ctx context.Context, startURL string) (Observation, StepInfo, error) {
	return e.ResetWithCookies(ctx, startURL, nil)
}

// Cookie is a cookie an episode starts with, such as a signed-in session.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// URL the cookie belongs to (its scheme, host and path).
	URL      string `json:"url"`
	HTTPOnly bool   `json:"http_only,omitempty"`
}

// ResetWithCookies is Reset with cookies set in the fresh context before
// the start page loads (a task that starts signed in).
func (e *Env) ResetWithCookies(ctx context.Context, startURL string, cookies []Cookie) (Observation, StepInfo, error) {
	return e.ResetWith(ctx, startURL, ResetOptions{Cookies: cookies})
}

// ResetOptions say how an episode's start page is prepared.
type ResetOptions struct {
	// Cookies are set in the fresh context before the start page loads.
	Cookies []Cookie
	// Start is a JavaScript expression run in the start page once it has
	// loaded and settled, before the first observation: a task's own
	// episode start (MiniWoB's seeded start). A promise is awaited; the
	// work it causes is settled like an action's. A script that throws
	// fails the reset.
	Start string
	// StartResult, when not nil, receives the Start expression's value
	// (decoded from JSON, as Evaluate does).
	StartResult any
	// Clock, when not nil, makes the episode's pages deterministic: a
	// seeded Math.random and a virtual clock (see Clock).
	Clock *Clock
}

// ResetWith is Reset with the options o.
func (e *Env) ResetWith(ctx context.Context, startURL string, o ResetOptions) (Observation, StepInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.br().working()()
	ctx, stop := e.live(ctx)
	defer stop()
	obs, info, err := e.reset(ctx, startURL, o)
	return obs, info, e.orCrash(err)
}

// reset is ResetWith's work, with e.mu held.
func (e *Env) reset(ctx context.Context, startURL string, o ResetOptions) (Observation, StepInfo, error) {
	cookies := o.Cookies
	if e.closed {
		return Observation{}, StepInfo{}, ErrClosed
	}
	if err := e.dispose(ctx); err != nil {
		e.log.Warn("disposing the last episode's context failed", zap.Error(err))
	}
	start := time.Now()
	e.terminated, e.lost = false, nil
	e.chat = nil
	e.act++ // no document of the new context has seen it: settle waits for their start-up
	var info StepInfo
	info.Attempts = 1
	e.setClock(o.Clock)
	t, err := e.freshContext(ctx)
	if err != nil {
		return Observation{}, info, err
	}
	if err := t.addClock(ctx, e.clockScript()); err != nil {
		return Observation{}, info, err
	}
	if len(cookies) > 0 {
		params := make([]*proto.NetworkCookieParam, len(cookies))
		for i, c := range cookies {
			params[i] = &proto.NetworkCookieParam{Name: c.Name, Value: c.Value, URL: c.URL, HTTPOnly: c.HTTPOnly}
		}
		if err := (proto.StorageSetCookies{Cookies: params, BrowserContextID: e.ctxID}).Call(e.br().rod.Context(ctx)); err != nil {
			return Observation{}, info, fmt.Errorf("set the episode's cookies: %w", err)
		}
	}
	if startURL != "" {
		if aerr := e.navigate(ctx, t, startURL); aerr != nil {
			var ae *ActionError
			if !errors.As(aerr, &ae) {
				return Observation{}, info, aerr
			}
			info.ActionError, info.ActionErrorCode = ae.Message, ae.Code
		}
	}
	info.Action = time.Since(start)
	if o.Start == "" || info.ActionError != "" {
		return e.finishStep(ctx, info, start, "", e.cfg.Observe)
	}
	// The page's own start runs in the loaded page, as an action would:
	// settle what loading caused, run it, and settle what it caused.
	if _, err := e.settle(ctx, e.act, start, time.Now()); err != nil {
		var nse *NotSettledError
		if !errors.As(err, &nse) {
			return Observation{}, info, err
		}
	}
	begun := time.Now()
	e.act++
	t.beginAction(ctx, e.act, true)
	if err := t.evalAwait(ctx, o.Start, o.StartResult); err != nil {
		return Observation{}, info, fmt.Errorf("start the episode in %s: %w", startURL, err)
	}
	info.Action = time.Since(begun)
	return e.finishStep(ctx, info, begun, "", e.cfg.Observe)
}

// Step executes one action, waits for the page to settle and returns the
// next observation. An action that fails (unknown id, element covered, page
// not reachable) is not an error: the observation reports it in
// LastActionError and the episode goes on. Errors are for the environment
// itself: closed, terminated, browser gone, ctx done.
func (e *Env) Step(ctx context.Context, a Action) (Observation, StepInfo, error) {
	return e.StepObserve(ctx, a, e.cfg.Observe)
}

// StepObserve is Step with the optional observation parts chosen per call.
func (e *Env) StepObserve(ctx context.Context, a Action, opts ObserveOptions) (Observation, StepInfo, error) {
	return e.StepParsed(ctx, Structured(a), opts)
}

// StepParsed steps an action read at the edge (Parsed), without reading
// it again: the entry of Step, StepText and the server. An action string
// that did not parse is reported like a failed action: the observation of
// the unchanged page with the parse error in LastActionError.
func (e *Env) StepParsed(ctx context.Context, p Parsed, opts ObserveOptions) (Observation, StepInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return Observation{}, StepInfo{}, err
	}
	if p.Err != nil {
		info := StepInfo{ActionError: p.Err.Error(), ActionErrorCode: "bad_action"}
		obs, info, err := e.finishStep(ctx, info, time.Time{}, p.Text, opts)
		return obs, info, e.orCrash(err)
	}
	defer e.br().working()()
	ctx, stop := e.live(ctx)
	defer stop()
	obs, info, err := e.watched(ctx, func(ctx context.Context) (Observation, StepInfo, error) { return e.step(ctx, p, opts) })
	return obs, info, e.orCrash(err)
}

// watched runs a step while its environment's resources are watched (see
// resources.go): over a limit, before the step (the page grew since the
// last one) or during it, the environment is given up and the step fails
// with the *ResourceLimitError. The sample before the step is the watch's
// when it is due: a step that begins within watchEvery of the last sample
// (the previous step's, in a loop that steps without pause) is sampled
// watchEvery after that one, as within a step.
func (e *Env) watched(ctx context.Context, step func(ctx context.Context) (Observation, StepInfo, error)) (Observation, StepInfo, error) {
	if e.dueSample(time.Now()) <= 0 {
		pctx, pcancel := context.WithTimeout(ctx, time.Second) // a silent page is the step's to find
		rl := e.overLimit(pctx)
		pcancel()
		if rl != nil {
			return Observation{}, StepInfo{}, e.giveUpOver(rl)
		}
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := e.watch(sctx, cancel)
	obs, info, err := step(sctx)
	stop()
	rl := overLimitErr(sctx)
	if rl == nil && !errors.As(err, &rl) {
		return obs, info, err
	}
	return Observation{}, info, e.giveUpOver(rl)
}

// step is StepObserve's work, with e.mu held.
func (e *Env) step(ctx context.Context, p Parsed, opts ObserveOptions) (Observation, StepInfo, error) {
	start := time.Now()
	info := StepInfo{Attempts: 1}
	a := p.Action
	if !p.valid {
		if err := a.Validate(); err != nil {
			info.ActionError, info.ActionErrorCode = err.Error(), "bad_action"
			return e.finishStep(ctx, info, time.Time{}, EchoOf(a), opts)
		}
	}
	acts := append([]Action{a}, p.Then...)
	actx, cancel := context.WithTimeout(ctx, e.cfg.ActionTimeout)
	var (
		attempts int
		err      error
		acted    *tab
		failed   = -1
		begun    bool // an action of the step has begun in the page
	)
	for i, x := range acts { // BrowserGym's multi-action mode (multiaction.go)
		a, acted = x, e.activeTab()
		var n int
		n, err = e.execute(actx, a, begun)
		if s, ok := specOf(a.Type); !ok || !s.inert {
			begun = true
		}
		attempts += n
		if err != nil {
			failed = i
			break
		}
		if a.Type == SendMsg {
			e.chat = append(e.chat, ChatMessage{Role: "assistant", Text: a.Text})
		}
	}
	timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	if timedOut && err != nil && ctx.Err() == nil {
		// The page may be held by a script that never ends: stop it, so
		// that the settle and the observation can read the page.
		if lerr := e.regainOrLose(ctx, acted, fmt.Sprintf("%s did not finish within %s", a.Type, e.cfg.ActionTimeout)); lerr != nil {
			return Observation{}, info, lerr
		}
	}
	info.Attempts = attempts
	info.Action = time.Since(start)
	var ae *ActionError
	switch {
	case errors.As(err, &ae):
		info.ActionError, info.ActionErrorCode = ae.Message, ae.Code
	case err != nil && ctx.Err() != nil:
		return Observation{}, info, ctx.Err()
	case err != nil && timedOut:
		info.ActionError, info.ActionErrorCode = fmt.Sprintf("action did not finish within %s; the page's running script, if any, was stopped", e.cfg.ActionTimeout), "timeout"
	case err != nil:
		return Observation{}, info, fmt.Errorf("step %s: %w", a, err)
	}
	if failed >= 0 && len(acts) > 1 {
		info.ActionError = fmt.Sprintf("action %d of %d, %s: %s", failed+1, len(acts), clipStr(a.String(), 80), info.ActionError)
		if failed < len(acts)-1 {
			info.ActionError += fmt.Sprintf(" (the %d after it did not run)", len(acts)-1-failed)
		}
	}
	if a.Type == Terminate && err == nil {
		e.terminated = true
		info.Terminated, info.Answer, info.Infeasible = true, a.Answer, a.Infeasible
	}
	settleFrom := time.Time{} // nothing happened in the page
	for _, x := range acts {
		if s, ok := specOf(x.Type); !ok || !s.inert {
			settleFrom = start
		}
	}
	echo := make([]string, len(acts))
	for i, x := range acts {
		echo[i] = x.String()
	}
	return e.finishStep(ctx, info, settleFrom, strings.Join(echo, "\n"), opts)
}

// StepText parses an action string (see ParseAction) and steps it. A string
// that does not parse is reported like a failed action: the observation of
// the unchanged page with the parse error in LastActionError.
func (e *Env) StepText(ctx context.Context, s string) (Observation, StepInfo, error) {
	return e.StepTextObserve(ctx, s, e.cfg.Observe)
}

// StepTextObserve is StepText with the optional observation parts chosen
// per call.
func (e *Env) StepTextObserve(ctx context.Context, s string, opts ObserveOptions) (Observation, StepInfo, error) {
	return e.StepParsed(ctx, ParseText(s), opts)
}

// Observe returns the current observation without acting or waiting.
func (e *Env) Observe(ctx context.Context, opts ObserveOptions) (Observation, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Observation{}, ErrClosed
	}
	if e.lost != nil {
		return Observation{}, e.lost
	}
	if err := e.crashed(); err != nil {
		return Observation{}, err
	}
	if e.ctxID == "" {
		return Observation{}, ErrNotReset
	}
	ctx, stop := e.live(ctx)
	defer stop()
	obs, err := e.observeBounded(ctx, opts)
	return obs, e.orCrash(err)
}

// Close ends the environment and frees its browser context.
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	close(e.quit)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.dispose(ctx)
	if !e.holder {
		e.br().placed.Add(-1) // it stays e's browser, but counts e no more
	}
	return err
}

// Terminated reports whether the episode ended with a terminate action.
func (e *Env) Terminated() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.terminated
}

func (e *Env) usable() error {
	switch {
	case e.closed:
		return ErrClosed
	case e.lost != nil:
		return e.lost
	case e.crashed() != nil:
		return e.crashed()
	case e.ctxID == "":
		return ErrNotReset
	case e.terminated:
		return ErrTerminated
	}
	return nil
}

func (e *Env) dispose(ctx context.Context) error {
	if e.ctxID == "" {
		return nil
	}
	id := e.ctxID
	e.tabMu.Lock()
	e.ctxID = ""
	e.tabs, e.active, e.attaching, e.blocked = nil, 0, 0, 0
	e.tabMu.Unlock()
	return e.br().disposeContext(ctx, id)
}

// finishStep waits for quiescence (unless settleFrom is zero), extracts the
// observation and fills the step's bookkeeping.
func (e *Env) finishStep(ctx context.Context, info StepInfo, settleFrom time.Time, last string, opts ObserveOptions) (Observation, StepInfo, error) {
	info.Settled = true
	if !settleFrom.IsZero() {
		t0 := time.Now()
		reason, err := e.settle(ctx, e.act, settleFrom, settleFrom.Add(info.Action))
		if err != nil {
			var nse *NotSettledError
			if !errors.As(err, &nse) {
				return Observation{}, info, err
			}
			info.Settled, info.SettleError, info.Pending = false, nse.Error(), nse.Pending
		}
		info.SettleReason = reason
		info.Settle = time.Since(t0)
	}
	t0 := time.Now()
	obs, err := e.observeBounded(ctx, opts)
	// A document replaced while it was being read (a navigation the
	// browser reported late) fails the extraction: wait for the new one to
	// settle and read that. A crash or a closed tab is reported at once.
	for retry := 0; err != nil && retry < 2 && ctx.Err() == nil && e.readable() && !errors.Is(err, ErrResourceLimit); retry++ {
		now := time.Now()
		if _, serr := e.settle(ctx, e.act, now, now); serr != nil {
			var nse *NotSettledError
			if !errors.As(serr, &nse) {
				break
			}
		}
		obs, err = e.observeBounded(ctx, opts)
	}
	info.Extract = time.Since(t0)
	if err != nil {
		return Observation{}, info, err
	}
	// The agent's input comes back bounded: an action string that did not
	// parse, or an error quoting it, never repeats megabytes into the next
	// prompt.
	info.ActionError = clipEcho(info.ActionError)
	obs.LastAction = clipEcho(last)
	obs.LastActionError = info.ActionError
	casts.stepped(e.activeTab())
	return obs, info, nil
}

// readable reports whether the active tab has a page that could be read
// (it exists and has not crashed).
func (e *Env) readable() bool {
	t, _, _ := e.snapshotTabs()
	if t == nil {
		return false
	}
	_, _, crashed := t.loadState()
	return !crashed
}

// observe extracts the active tab's observation and the environment's parts.
func (e *Env) observe(ctx context.Context, opts ObserveOptions) (Observation, error) {
	t, tabs, active := e.snapshotTabs()
	if t == nil {
		return Observation{}, fmt.Errorf("environment has no open tab")
	}
	if _, _, crashed := t.loadState(); crashed {
		return Observation{}, fmt.Errorf("the page in tab %d crashed: reset the environment", active)
	}
	var obs Observation
	if err := t.extract(ctx, opts, &obs); err != nil {
		return Observation{}, err
	}
	obs.ActiveTab = active
	obs.Tabs = make([]Tab, len(tabs))
	for i, x := range tabs {
		url, title := obs.URL, obs.Title
		if x != t {
			url, title = x.refreshInfo(ctx, e.br())
		}
		obs.Tabs[i] = Tab{Index: i, URL: url, Title: title, Active: i == active}
	}
	for _, x := range tabs {
		obs.Dialogs = append(obs.Dialogs, x.takeDialogs()...)
	}
	obs.BlockedTabs = e.takeBlocked()
	obs.Chat = append([]ChatMessage(nil), e.chat...)
	return obs, nil
}

// Evaluate runs a JavaScript expression in the active tab's page and
// decodes its JSON-encodable result into out (which may be nil). It is for
// task checks (a locator that reads the page's state), not for agents.
func (e *Env) Evaluate(ctx context.Context, expr string, out any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.checkedTab()
	if err != nil {
		return err
	}
	ctx, stop := e.live(ctx)
	defer stop()
	err = t.evalJSON(ctx, expr, out)
	if errors.Is(err, errNoInjection) {
		return fmt.Errorf("evaluate: %w", err)
	}
	return e.orCrash(err)
}

// Goto navigates the active tab to url and waits for it to settle, without
// observing it: for task checks that read another page after an episode
// (WebArena's program_html), not for agents.
func (e *Env) Goto(ctx context.Context, url string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.checkedTab()
	if err != nil {
		return err
	}
	ctx, stop := e.live(ctx)
	defer stop()
	start := time.Now()
	e.act++
	if err := e.navigate(ctx, t, url); err != nil {
		return e.orCrash(err)
	}
	_, err = e.settle(ctx, e.act, start, time.Now())
	return e.orCrash(err)
}

// checkedTab is the active tab of an open, reset environment (e.mu held).
func (e *Env) checkedTab() (*tab, error) {
	if e.closed {
		return nil, ErrClosed
	}
	if err := e.crashed(); err != nil {
		return nil, err
	}
	t := e.activeTab()
	if t == nil {
		return nil, ErrNotReset
	}
	return t, nil
}
