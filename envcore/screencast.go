package envcore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
// sends none. It does not take the environment's lock: steps go on while
// it runs.
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := e.b.rod.Context(ctx).Event() // subscribed before the start, so no frame is missed
	c := t.client(ctx)
	if err := casts.join(c, t, proto.PageStartScreencast{Format: proto.PageStartScreencastFormatJpeg, Quality: &opts.Quality, MaxWidth: &opts.MaxWidth}); err != nil {
		return fmt.Errorf("start screencast: %w", err)
	}
	defer casts.leave(t)
	// The browser sends frames as the page changes: a still page would
	// send none, so the first picture is taken now.
	if first, err := e.still(c, opts); err == nil {
		if err := frame(first); err != nil {
			return err
		}
	}
	frames := make(chan proto.PageScreencastFrame, 1)
	go func() {
		for msg := range events {
			if msg.SessionID != t.session {
				continue
			}
			var f proto.PageScreencastFrame
			if msg.Load(&f) {
				select {
				case frames <- f:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	last := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			return errTabsChanged
		case f := <-frames:
			if err := frame(f.Data); err != nil {
				return err
			}
			// The browser sends the next frame only once this one is
			// acknowledged: waiting out the interval first throttles it.
			if wait := opts.Interval - time.Since(last); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			last = time.Now()
			if err := (proto.PageScreencastFrameAck{SessionID: f.SessionID}).Call(c); err != nil {
				return fmt.Errorf("screencast: %w", err)
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

// casts counts the screencasts of each tab: the browser has one per page,
// so the first viewer starts it and the last one stops it.
var casts = castCount{n: map[*tab]int{}}

type castCount struct {
	mu sync.Mutex
	n  map[*tab]int
}

func (cc *castCount) join(c proto.Client, t *tab, start proto.PageStartScreencast) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n[t] == 0 {
		if err := start.Call(c); err != nil {
			return err
		}
	}
	cc.n[t]++
	return nil
}

func (cc *castCount) leave(t *tab) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n[t]--; cc.n[t] > 0 {
		return
	}
	delete(cc.n, t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = proto.PageStopScreencast{}.Call(t.client(ctx))
}
