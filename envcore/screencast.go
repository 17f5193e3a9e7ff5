package envcore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// ScreencastOptions shape a live picture of an environment's page.
type ScreencastOptions struct {
	// Interval is the least time between two frames. Default 200ms (at
	// most 5 frames a second).
	Interval time.Duration
	// MaxWidth scales frames down to this width. Default 800.
	MaxWidth int
	// Quality is the JPEG quality, 1 to 100. Default 60.
	Quality int
}

// Screencast sends JPEG pictures of the active tab's page to frame as the
// page changes (CDP Page.startScreencast), at most one per Interval, until
// ctx ends, frame returns an error or the environment closes; when another
// tab becomes active it follows. The browser draws no frames for it
// before it is called or after it returns, and a page that does not change
// sends none, except a still picture after a load or a step that the
// browser sent no frame for. Viewers of one page share its screencast. It
// does not take the environment's lock: steps go on while it runs.
func (e *Env) Screencast(ctx context.Context, opts ScreencastOptions, frame func(jpeg []byte) error) error {
	if opts.Interval <= 0 {
		opts.Interval = 200 * time.Millisecond
	}
	if opts.MaxWidth <= 0 {
		opts.MaxWidth = 800
	}
	if opts.Quality <= 0 || opts.Quality > 100 {
		opts.Quality = 60
	}
	for {
		e.tabMu.Lock()
		changed := e.changed
		var t *tab
		if len(e.tabs) > 0 {
			t = e.tabs[e.active]
		}
		e.tabMu.Unlock()
		if t == nil {
			select { // not reset yet, or between tabs: wait for one
			case <-changed:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := e.screencastTab(ctx, t, changed, opts, frame)
		if !errors.Is(err, errTabsChanged) {
			return err
		}
	}
}

var errTabsChanged = errors.New("the environment's tabs changed")

// screencastTab casts t until ctx ends, frame fails or changed is closed
// (errTabsChanged).
func (e *Env) screencastTab(ctx context.Context, t *tab, changed <-chan struct{}, opts ScreencastOptions, frame func([]byte) error) error {
	v, err := casts.join(e, t, opts)
	if err != nil {
		return fmt.Errorf("start screencast: %w", err)
	}
	defer casts.leave(t, v)
	// The browser sends frames as the page changes: a still page would
	// send none, so the first picture is taken now.
	if first, err := e.still(t.client(ctx), opts); err == nil {
		if err := frame(first); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			return errTabsChanged
		case f := <-v.frames:
			err := frame(f.jpeg)
			if f.taken != nil {
				close(f.taken)
			}
			if err != nil {
				return err
			}
			// At most one frame per interval: frames that come meanwhile
			// replace each other in v.frames, so the viewer gets the
			// newest picture next.
			select {
			case <-time.After(opts.Interval):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// still is a JPEG of the tab's viewport now, scaled to opts.MaxWidth.
func (e *Env) still(c proto.Client, opts ScreencastOptions) ([]byte, error) {
	vp := e.cfg.Viewport
	req := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatJpeg, Quality: &opts.Quality}
	if vp.Width > opts.MaxWidth {
		req.Clip = &proto.PageViewport{Width: float64(vp.Width), Height: float64(vp.Height), Scale: float64(opts.MaxWidth) / float64(vp.Width)}
	}
	res, err := req.Call(c)
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

// casts holds the screencast of each tab that has viewers. The browser has
// one screencast per page and sends its next frame only once the last one
// is acknowledged, so one pump per tab receives and acknowledges every
// frame exactly once and hands it to each viewer; the first viewer's
// quality and width apply to all. The last viewer to leave stops it.
var casts = castHub{tabs: map[*tab]*cast{}}

type castHub struct {
	mu   sync.Mutex
	tabs map[*tab]*cast
}

// cast is one tab's screencast and its viewers.
type cast struct {
	mu      sync.Mutex
	viewers map[*castViewer]struct{}
	stop    context.CancelFunc
	done    chan struct{} // closed when the pump has returned
	nudge   chan struct{} // a step finished
	opts    ScreencastOptions
}

// castViewer receives the newest frame not yet taken.
type castViewer struct{ frames chan castFrame }

// castFrame is one picture for a viewer. A frame with taken set is pinned:
// later frames do not replace it, and taken is closed once the viewer has
// been given it (show).
type castFrame struct {
	jpeg  []byte
	taken chan struct{}
}

func (h *castHub) join(e *Env, t *tab, opts ScreencastOptions) (*castViewer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := &castViewer{frames: make(chan castFrame, 1)}
	if c := h.tabs[t]; c != nil {
		c.mu.Lock()
		c.viewers[v] = struct{}{}
		c.mu.Unlock()
		return v, nil
	}
	ctx, stop := context.WithCancel(e.br().ctx)
	c := &cast{viewers: map[*castViewer]struct{}{v: {}}, stop: stop, done: make(chan struct{}), nudge: make(chan struct{}, 1), opts: opts}
	events := e.br().rod.Context(ctx).Event() // subscribed before the start, so no frame is missed
	start := proto.PageStartScreencast{Format: proto.PageStartScreencastFormatJpeg, Quality: &opts.Quality, MaxWidth: &opts.MaxWidth}
	if err := start.Call(t.client(ctx)); err != nil {
		stop()
		return nil, err
	}
	h.tabs[t] = c
	go c.pump(ctx, e, t, opts, events)
	return v, nil
}

// pump hands each frame of t's screencast to every viewer, replacing a
// frame the viewer has not taken yet, and acknowledges it.
//
// The browser drops a frame that is drawn while an earlier one is still
// unacknowledged and does not send it again; on a page that then stays
// still the viewers would keep an old picture. So after a page finishes
// loading or a step finishes (nudge), a frame that does not follow within
// castCatchUp is replaced by a still picture.
func (c *cast) pump(ctx context.Context, e *Env, t *tab, opts ScreencastOptions, events <-chan *rod.Message) {
	defer close(c.done)
	cl := t.client(ctx)
	catchUp := time.NewTimer(time.Hour)
	catchUp.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.nudge:
			catchUp.Reset(castCatchUp)
		case <-catchUp.C:
			if jpeg, err := e.still(cl, opts); err == nil {
				c.send(jpeg)
			}
		case msg, ok := <-events:
			if !ok {
				return
			}
			if msg.SessionID != t.session {
				continue
			}
			var f proto.PageScreencastFrame
			if !msg.Load(&f) {
				if msg.Method == "Page.loadEventFired" || msg.Method == "Page.navigatedWithinDocument" {
					catchUp.Reset(castCatchUp)
				}
				continue
			}
			catchUp.Stop()
			c.send(f.Data)
			if err := (proto.PageScreencastFrameAck{SessionID: f.SessionID}).Call(cl); err != nil {
				return // the tab or the browser went away
			}
		}
	}
}

// castCatchUp is how long after a load or a step a screencast frame may
// take before a still picture stands in for it.
const castCatchUp = 250 * time.Millisecond

// send gives jpeg to every viewer, replacing a frame not yet taken unless
// that frame is pinned.
func (c *cast) send(jpeg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for v := range c.viewers {
		c.put(v, castFrame{jpeg: jpeg})
	}
}

// put hands f to v, replacing a frame v has not taken unless that one is
// pinned. c.mu is held.
func (c *cast) put(v *castViewer, f castFrame) {
	select {
	case old := <-v.frames:
		if old.taken != nil && f.taken == nil {
			v.frames <- old
			return
		}
	default:
	}
	v.frames <- f
}

// castShowLimit bounds how long show waits for viewers to be given its
// picture: a viewer that stopped reading must not hold the step.
const castShowLimit = 10 * time.Second

// show makes every viewer of t's screencast, if it has any, see the page
// as it is now: it takes a still picture, hands it to each viewer pinned
// (no frame replaces it before the viewer has it, so a frame of an earlier
// state still in flight cannot hide it), and returns once every viewer has
// been given it, ctx ends or castShowLimit passes. The browser may have
// dropped its own frame of the change (it draws none while an earlier
// frame is unacknowledged), so the picture is taken here.
func (h *castHub) show(ctx context.Context, e *Env, t *tab) {
	h.mu.Lock()
	c := h.tabs[t]
	h.mu.Unlock()
	if c == nil {
		return
	}
	jpeg, err := e.still(t.client(ctx), c.opts)
	if err != nil {
		return // the step reports what is wrong with the tab
	}
	var waits []chan struct{}
	c.mu.Lock()
	for v := range c.viewers {
		f := castFrame{jpeg: jpeg, taken: make(chan struct{})}
		c.put(v, f)
		waits = append(waits, f.taken)
	}
	c.mu.Unlock()
	limit := time.NewTimer(castShowLimit)
	defer limit.Stop()
	defer c.unpin()
	for _, w := range waits {
		select {
		case <-w:
		case <-c.done: // the screencast stopped: nobody is watching
			return
		case <-ctx.Done():
			return
		case <-limit.C:
			return
		}
	}
}

// unpin lets later frames replace a pinned frame a viewer has not taken.
func (c *cast) unpin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for v := range c.viewers {
		select {
		case f := <-v.frames:
			v.frames <- castFrame{jpeg: f.jpeg}
		default:
		}
	}
}

// stepped tells t's screencast, if it has one, that a step has finished.
func (h *castHub) stepped(t *tab) {
	h.mu.Lock()
	c := h.tabs[t]
	h.mu.Unlock()
	if c != nil {
		select {
		case c.nudge <- struct{}{}:
		default:
		}
	}
}

func (h *castHub) leave(t *tab, v *castViewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.tabs[t]
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.viewers, v)
	left := len(c.viewers)
	c.mu.Unlock()
	if left > 0 {
		return
	}
	delete(h.tabs, t)
	c.stop()
	<-c.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = proto.PageStopScreencast{}.Call(t.client(ctx))
}
