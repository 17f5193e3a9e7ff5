package envcore

// What the browser reports of a tab's requests. A step waits for every
// request its action caused (docs/envcore.md, "Settling"), and the route's
// log (settle_route.go) sees a request only once Chromium's network
// service passes it on, which on a starved host can be later than any
// grace. The renderer knows of a request the moment it creates it, and
// says so in CDP's Network.requestWillBeSent, in order with everything
// else it says on the tab's session: an answer to a settle question comes
// after the events of every request created before it. So every tab has
// Network on from its first document (tab.install), and so have the
// workers and out-of-process frames it starts (auto-attached to the tab's
// session, onChildAttached), and those events feed the tab's netWatch,
// read by settle as a second log beside the route's.
//
// The events are taken off the browser's connection before rod sees them
// (netTap): four kinds are read (a request created, its response's
// headers, its end or failure), the rest dropped unparsed; what is read
// is recorded before the next message on the connection is, so no answer
// can overtake the report of a request created before it.

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/internal/traffic"
)

// netTap is the browser connection as rod reads it, with the Network
// events handed to the browser's tabs on the way (see above).
type netTap struct {
	ws cdp.WebSocketable // the browser's DevTools pipe (pipe.go)
	b  *Browser          // set once the Browser exists; nothing is enabled before
}

func (w *netTap) Send(msg []byte) error { return w.ws.Send(msg) }

func (w *netTap) Read() ([]byte, error) {
	for {
		data, err := w.ws.Read()
		if err != nil || !bytes.HasPrefix(data, networkPrefix) {
			return data, err
		}
		if w.b != nil {
			w.b.onNetwork(data[len(networkPrefix):], data)
		}
	}
}

// networkPrefix starts every Network event on the connection: Chromium
// writes an event's method first.
var networkPrefix = []byte(`{"method":"Network.`)

// netEvent is what the read events carry that a netWatch needs.
type netEvent struct {
	SessionID proto.TargetSessionID `json:"sessionId"`
	Params    struct {
		RequestID string `json:"requestId"`
		LoaderID  string `json:"loaderId"`
		FrameID   string `json:"frameId"`
		Type      string `json:"type"`
		Request   *struct {
			URL    string `json:"url"`
			Method string `json:"method"`
		} `json:"request"`
		Response *struct {
			MimeType string `json:"mimeType"`
		} `json:"response"`
	} `json:"params"`
}

// The Network events a netWatch reads, by name.
const (
	netBegin = iota + 1
	netHead
	netEnd
)

var netEvents = map[string]int{
	"requestWillBeSent": netBegin,
	"responseReceived":  netHead,
	"loadingFinished":   netEnd,
	"loadingFailed":     netEnd,
}

// onNetwork takes a Network event (rest is the message after
// networkPrefix) to the tab whose session, or whose worker's or frame's
// session, sent it.
func (b *Browser) onNetwork(rest, msg []byte) {
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return
	}
	kind := netEvents[string(rest[:i])]
	if kind == 0 {
		return
	}
	var ev netEvent
	if json.Unmarshal(msg, &ev) != nil {
		return
	}
	t := b.requestTab(ev.SessionID)
	if t == nil {
		return
	}
	p := &ev.Params
	switch kind {
	case netBegin:
		if p.Request != nil {
			t.net.begin(ev.SessionID, p.RequestID, p.Request.Method, p.Request.URL, p.Type, p.FrameID, p.LoaderID)
		}
	case netHead:
		mime := ""
		if p.Response != nil {
			mime = p.Response.MimeType
		}
		t.net.head(p.RequestID, mime)
	case netEnd:
		t.net.end(p.RequestID)
	}
}

// requestTab is the tab whose requests session id reports: the tab's own
// session, or a worker's or frame's it started.
func (b *Browser) requestTab(id proto.TargetSessionID) *tab {
	if id == "" {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if t := b.sessions[id]; t != nil {
		return t
	}
	return b.children[id]
}

// netEnable is the Network.enable every tab, worker and frame session gets:
// no bodies kept for DevTools (nothing here reads them), no post data in
// the events.
var netEnable = func() proto.NetworkEnable {
	zero := 0
	return proto.NetworkEnable{MaxTotalBufferSize: &zero, MaxResourceBufferSize: &zero, MaxPostDataSize: &zero}
}()

// onChildAttached prepares a target a tab started (a dedicated worker, an
// out-of-process frame), which Chromium holds paused: its requests are
// reported to the tab's netWatch, and so are those of the targets it
// starts in turn.
func (b *Browser) onChildAttached(parent proto.TargetSessionID, ev proto.TargetAttachedToTarget) {
	c := session{b: b.rod, id: ev.SessionID, ctx: b.ctx}
	t := b.requestTab(parent)
	if t != nil {
		b.mu.Lock()
		b.children[ev.SessionID] = t
		b.mu.Unlock()
		_ = c.send(netEnable)
		_ = c.send(proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true})
	}
	_ = c.send(proto.RuntimeRunIfWaitingForDebugger{})
}

// onChildDetached forgets a worker's or frame's session: what it had in
// flight will not be reported ended.
func (b *Browser) onChildDetached(id proto.TargetSessionID) {
	b.mu.Lock()
	t := b.children[id]
	delete(b.children, id)
	b.mu.Unlock()
	if t != nil {
		t.net.endSession(id)
	}
}

// netWatch is a tab's requests as the browser reports them, in a
// traffic.Log like the route's (settle reads both the same way).
type netWatch struct {
	log  traffic.Log
	mu   sync.Mutex
	open map[netKey]*netReq
}

// netKey is a request's id: unique in the browser, and the same in every
// session that reports on the request (a worker's script is asked for in
// the tab's session and reported loaded in the worker's).
type netKey string

type netReq struct {
	r             *traffic.Request
	session       proto.TargetSessionID
	frame, loader string
}

func (n *netWatch) begin(session proto.TargetSessionID, id, method, url, typ, frame, loader string) {
	k := netKey(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.open[k]; ok {
		return // a redirect: the same request goes on
	}
	if n.open == nil {
		n.open = map[netKey]*netReq{}
	}
	n.open[k] = &netReq{r: n.log.Open(method, url, strings.ToLower(typ)), session: session, frame: frame, loader: loader}
}

func (n *netWatch) head(id, mime string) {
	n.mu.Lock()
	q := n.open[netKey(id)]
	n.mu.Unlock()
	if q != nil {
		n.log.Head(q.r, mime)
	}
}

func (n *netWatch) end(id string) {
	k := netKey(id)
	n.mu.Lock()
	q := n.open[k]
	delete(n.open, k)
	n.mu.Unlock()
	if q != nil {
		n.log.End(q.r)
	}
}

// endFrame ends what frame had in flight for documents other than
// loader's: a document that went away takes its requests with it, and
// their end is not always reported (a beacon sent as it unloads).
func (n *netWatch) endFrame(frame, loader string) {
	n.endWhere(func(q *netReq) bool { return q.frame == frame && q.loader != loader })
}

// endSession ends what a worker or frame session had in flight.
func (n *netWatch) endSession(session proto.TargetSessionID) {
	n.endWhere(func(q *netReq) bool { return q.session == session })
}

func (n *netWatch) endWhere(gone func(*netReq) bool) {
	var ended []*traffic.Request
	n.mu.Lock()
	for k, q := range n.open {
		if gone(q) {
			ended = append(ended, q.r)
			delete(n.open, k)
		}
	}
	n.mu.Unlock()
	for _, r := range ended {
		n.log.End(r)
	}
}

// onFrameNavigated ends the requests of the document a frame replaced.
func (n *netWatch) onFrameNavigated(ev *proto.PageFrameNavigated) {
	if ev.Frame != nil {
		n.endFrame(string(ev.Frame.ID), string(ev.Frame.LoaderID))
	}
}
