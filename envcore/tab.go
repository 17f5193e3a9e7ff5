package envcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// tab is one page target of an environment. Its CDP session is the
// auto-attach session the injected script was installed on. Fields under mu
// are written by the browser's event loop and read by the environment.
type tab struct {
	b       *Browser
	id      proto.TargetTargetID
	ctxID   proto.BrowserBrowserContextID
	session proto.TargetSessionID
	born    time.Time
	lag     lagWatch // how late the browser answers (settle.go)

	load *loadWatch // documents loading, for settle
	net  netWatch   // requests as the browser reports them, for settle (netwatch.go)

	mu      sync.Mutex
	env     *Env // the owner; changes when a warm context is taken
	url     string
	title   string
	dialogs []Dialog
	crashed bool
	clocked bool // its environment's clock is registered (clock.go)
	standIn bool // document requests get the stand-in (see useStandIns)
	mouseX  float64
	mouseY  float64
	// buttons are the mouse buttons held down (MouseEvent.buttons bits),
	// mods the modifier keys held down (CDP's modifier bits), by
	// mouse_down and keyboard_down until released; every mouse and key
	// event carries them, as a real device's do.
	buttons int
	mods    int
	// chooser, while an upload waits for it, is told of the file chooser
	// a click opened (upload.go).
	chooser chan proto.PageFileChooserOpened
	// pointerIn: the mouse has been over the current document (see
	// pointerOut).
	pointerIn bool
	// spin is how long the page's main thread has been busy without a
	// break, as the resource watch samples it (resources.go).
	spin spinWatch
	// fold is what an expand keeps of the budgeted observations (expand.go).
	fold foldState
}

func newTab(env *Env, session proto.TargetSessionID, info *proto.TargetTargetInfo) *tab {
	return &tab{
		b:       env.br(),
		env:     env,
		id:      info.TargetID,
		ctxID:   info.BrowserContextID,
		session: session,
		born:    time.Now(),
		url:     info.URL,
		title:   info.Title,
		load:    newLoadWatch(),
	}
}

// install prepares a new target that Chromium holds paused: page and
// network events on (the workers and frames it starts attached, for theirs),
// the injected bundle registered for every new document, the viewport
// fixed, focus emulated (so background tabs behave like the focused one),
// and then the target resumed.
//
// The commands are pipelined, not awaited one by one: a popup's renderer
// answers none of them until it runs, and it runs only after
// Runtime.runIfWaitingForDebugger. CDP handles a session's commands in the
// order they arrive, so everything sent before the resume is in force before
// the page's first script. A Page.getFrameTree round trip at the end waits
// until all of it has been handled.
func (t *tab) install(ctx context.Context, vp Viewport) error {
	c := t.client(ctx)
	reqs := []proto.Request{
		proto.PageEnable{},
		proto.PageAddScriptToEvaluateOnNewDocument{Source: inject.Bundle()},
		proto.EmulationSetDeviceMetricsOverride{Width: vp.Width, Height: vp.Height, DeviceScaleFactor: 1},
		proto.EmulationSetFocusEmulationEnabled{Enabled: true},
		proto.PerformanceEnable{}, // the resource watch reads its metrics (resources.go)
		// Every request the tab's documents, workers and frames create is
		// reported as it is created (netwatch.go).
		netEnable,
		proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true},
		proto.RuntimeRunIfWaitingForDebugger{},
	}
	if t.b.unreported {
		reqs = slices.DeleteFunc(reqs, func(r proto.Request) bool {
			m := r.ProtoReq()
			return m == "Network.enable" || m == "Target.setAutoAttach"
		})
	}
	if clock := t.env.clockScript(); clock != "" {
		// After the bundle, before the page's first script (clock.go).
		reqs = slices.Insert(reqs, 2, proto.Request(proto.PageAddScriptToEvaluateOnNewDocument{Source: clock}))
		t.clocked = true
	}
	for _, r := range reqs {
		if err := c.send(r); err != nil {
			return fmt.Errorf("prepare tab (%s): %w", r.ProtoReq(), err)
		}
	}
	if _, err := (proto.PageGetFrameTree{}).Call(c); err != nil {
		return fmt.Errorf("prepare tab: %w", err)
	}
	return nil
}

// client returns the tab's CDP client bound to ctx.
func (t *tab) client(ctx context.Context) session {
	return session{b: t.b.rod, id: t.session, ctx: ctx}
}

// owner is the environment the tab belongs to now.
func (t *tab) owner() *Env {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.env
}

func (t *tab) setInfo(url, title string) {
	t.mu.Lock()
	t.url, t.title = url, title
	t.mu.Unlock()
}

func (t *tab) info() (url, title string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.url, t.title
}

// refreshInfo asks the browser for the tab's current url and title (the
// info-changed events can trail a late title change), falling back to the
// last known values.
func (t *tab) refreshInfo(ctx context.Context, b *Browser) (url, title string) {
	if res, err := (proto.TargetGetTargetInfo{TargetID: t.id}).Call(b.rod.Context(ctx)); err == nil {
		t.setInfo(res.TargetInfo.URL, res.TargetInfo.Title)
	}
	return t.info()
}

// onEvent is called by the browser's event loop for this tab's session.
func (t *tab) onEvent(msg *rod.Message) {
	if msg.Method == "Page.frameNavigated" {
		var ev proto.PageFrameNavigated
		if msg.Load(&ev) {
			t.net.onFrameNavigated(&ev)
			if ev.Frame.ParentID == "" {
				t.navigated()
			}
		}
	}
	if msg.Method == "Page.navigatedWithinDocument" {
		var ev proto.PageNavigatedWithinDocument
		if msg.Load(&ev) && string(ev.FrameID) == string(t.id) {
			t.navigated()
		}
	}
	if t.load.onEvent(msg) {
		return
	}
	switch msg.Method {
	case "Page.javascriptDialogOpening":
		var ev proto.PageJavascriptDialogOpening
		msg.Load(&ev)
		t.mu.Lock()
		t.dialogs = append(t.dialogs, Dialog{Type: string(ev.Type), Message: ev.Message})
		t.mu.Unlock()
		t.load.touch()
		// A dialog blocks the page, and every call into it, until answered.
		// Accept it the way a cooperative user would; the observation
		// reports what it said.
		go func() {
			_ = proto.PageHandleJavaScriptDialog{Accept: true, PromptText: ev.DefaultPrompt}.Call(t.client(t.b.ctx))
		}()
	case "Fetch.requestPaused":
		var ev proto.FetchRequestPaused
		msg.Load(&ev)
		t.mu.Lock()
		standIn := t.standIn
		t.mu.Unlock()
		go t.answerPaused(ev.RequestID, standIn)
	case "Page.frameStartedNavigating":
		t.pointerOut(msg)
	case "Page.fileChooserOpened":
		var ev proto.PageFileChooserOpened
		if msg.Load(&ev) {
			t.mu.Lock()
			ch := t.chooser
			t.mu.Unlock()
			if ch != nil {
				select {
				case ch <- ev:
				default:
				}
			}
		}
	case "Inspector.targetCrashed":
		t.mu.Lock()
		t.crashed = true
		t.mu.Unlock()
	}
}

// useStandIns turns stand-in documents on or off: while on, every document
// the tab requests is answered with inject.StandIn instead of going to the
// network, so a navigation commits a history entry at its real URL without
// loading the page (RestoreState's cheap history entries).
func (t *tab) useStandIns(ctx context.Context, on bool) error {
	c := t.client(ctx)
	if !on {
		err := (proto.FetchDisable{}).Call(c)
		t.mu.Lock()
		t.standIn = false
		t.mu.Unlock()
		return err
	}
	t.mu.Lock()
	t.standIn = true
	t.mu.Unlock()
	return proto.FetchEnable{Patterns: []*proto.FetchRequestPattern{{
		URLPattern: "*", ResourceType: proto.NetworkResourceTypeDocument, RequestStage: proto.FetchRequestStageRequest,
	}}}.Call(c)
}

var standInBody = []byte(inject.StandIn())

// answerPaused answers a request paused by useStandIns.
func (t *tab) answerPaused(id proto.FetchRequestID, standIn bool) {
	c := t.client(t.b.ctx)
	if !standIn {
		_ = proto.FetchContinueRequest{RequestID: id}.Call(c)
		return
	}
	_ = proto.FetchFulfillRequest{RequestID: id, ResponseCode: 200, Body: standInBody, ResponseHeaders: []*proto.FetchHeaderEntry{
		{Name: "Content-Type", Value: "text/html; charset=utf-8"},
		{Name: "Cache-Control", Value: "no-store"},
	}}.Call(c)
}

// takeDialogs returns and clears the dialogs seen since the last call.
func (t *tab) takeDialogs() []Dialog {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dialogs
	t.dialogs = nil
	return d
}

// errNoInjection means the document has no injected script: about:blank's
// initial document, Chromium's error pages, a PDF viewer.
var errNoInjection = errors.New("page has no injected script")

// evalJSON evaluates a JavaScript expression that returns a JSON-encodable
// value and decodes that value into out (which may be nil).
func (t *tab) evalJSON(ctx context.Context, expr string, out any) error {
	return t.eval(ctx, proto.RuntimeEvaluate{Expression: expr, ReturnByValue: true, Silent: true}, out)
}

// evalAwait is evalJSON for an expression whose value is a promise: the
// answer is what the promise resolves to.
func (t *tab) evalAwait(ctx context.Context, expr string, out any) error {
	return t.eval(ctx, proto.RuntimeEvaluate{Expression: expr, ReturnByValue: true, Silent: true, AwaitPromise: true}, out)
}

func (t *tab) eval(ctx context.Context, req proto.RuntimeEvaluate, out any) error {
	res, err := req.Call(t.client(ctx))
	if err != nil {
		return fmt.Errorf("evaluate in page: %w", err)
	}
	if res.ExceptionDetails != nil {
		msg := res.ExceptionDetails.Text
		if res.ExceptionDetails.Exception != nil {
			msg = res.ExceptionDetails.Exception.Description
		}
		if strings.Contains(msg, inject.MissingMessage) {
			return errNoInjection
		}
		return fmt.Errorf("script error in page: %s", firstLine(msg))
	}
	if out == nil {
		return nil
	}
	raw, err := res.Result.Value.MarshalJSON()
	if err != nil {
		return fmt.Errorf("page answer: %w", err)
	}
	return json.Unmarshal(raw, out)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// mouse sends one mouse event at (x, y) in viewport coordinates. Presses
// and releases are of button ("" is the left one) with click count clicks;
// a move with a button is a move while that button is held.
func (t *tab) mouse(ctx context.Context, typ proto.InputDispatchMouseEventType, x, y float64, button string, clicks int) error {
	ev := proto.InputDispatchMouseEvent{Type: typ, X: x, Y: y}
	mb, named := mouseButtons[button]
	t.mu.Lock()
	buttons, mods := t.buttons, t.mods
	t.mu.Unlock()
	switch typ {
	case proto.InputDispatchMouseEventTypeMousePressed, proto.InputDispatchMouseEventTypeMouseReleased:
		if !named {
			mb = mouseButtons["left"]
		}
		ev.Button = mb.b
		ev.ClickCount = clicks
		if typ == proto.InputDispatchMouseEventTypeMousePressed {
			buttons |= mb.bit
		} else {
			buttons &^= mb.bit
		}
	case proto.InputDispatchMouseEventTypeMouseMoved:
		if named {
			ev.Button, buttons = mb.b, buttons|mb.bit
		} else {
			for _, b := range []string{"left", "right", "middle"} {
				if buttons&mouseButtons[b].bit != 0 {
					ev.Button = mouseButtons[b].b
					break
				}
			}
		}
	}
	ev.Buttons = intPtr(buttons)
	ev.Modifiers = mods
	if err := ev.Call(t.client(ctx)); err != nil {
		return fmt.Errorf("mouse %s: %w", typ, err)
	}
	t.mu.Lock()
	t.mouseX, t.mouseY = x, y
	t.pointerIn = true
	if typ != proto.InputDispatchMouseEventTypeMouseMoved {
		t.buttons = buttons
	}
	t.mu.Unlock()
	return nil
}

// frameStartedNavigating is CDP's Page.frameStartedNavigating, which rod's
// protocol package predates.
type frameStartedNavigating struct {
	FrameID        proto.PageFrameID `json:"frameId"`
	NavigationType string            `json:"navigationType"` // sameDocument, differentDocument, reload, ...
}

func (frameStartedNavigating) ProtoEvent() string { return "Page.frameStartedNavigating" }

// pointerOut moves the mouse off the page when the tab's main frame starts
// navigating to another document. The renderer keeps one frame for all the
// documents of a tab (the browser runs without RenderDocument) and with it
// the last mouse position: the next document would be hovered where the
// last one was clicked, so what an agent sees after a navigation would
// depend on where it had clicked before rather than on the page (and a
// restored or forked tab, which has no mouse position, would differ). A
// new document therefore starts with the mouse nowhere, as it does in a
// new tab.
func (t *tab) pointerOut(msg *rod.Message) {
	var ev frameStartedNavigating
	if !msg.Load(&ev) || string(ev.FrameID) != string(t.id) || ev.NavigationType == "sameDocument" || ev.NavigationType == "historySameDocument" {
		return
	}
	t.mu.Lock()
	in := t.pointerIn
	t.pointerIn = false
	t.mu.Unlock()
	if in {
		_ = t.client(t.b.ctx).send(proto.InputDispatchMouseEvent{Type: proto.InputDispatchMouseEventTypeMouseMoved, X: -1, Y: -1})
	}
}

func intPtr(i int) *int { return &i }
