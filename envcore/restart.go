package envcore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// RestartInPlace starts a new episode in the page the environment already
// has, without the fresh browser context and page load a Reset gives: for a
// task whose page runs its own episodes (MiniWoB), starting the next one in
// the loaded page can be the same as loading it again, at a fraction of the
// cost. restart is a JavaScript expression run in the page (a promise is
// awaited); its value is JSON null when the page cannot restart in place,
// and then it must have changed nothing. Its other values are decoded into
// out (which may be nil), as Evaluate does, and the episode has begun: the
// work the restart caused is settled and the page observed, as after a
// Reset's start script.
//
// ok is false, with no error, when the environment has no page to restart
// in (never reset, more than one tab, a lost or crashed page) or the page
// refused: call ResetWith then. A restart that fails in the page is an
// error, and leaves the environment to be reset.
func (e *Env) RestartInPlace(ctx context.Context, restart string, out any) (obs Observation, info StepInfo, ok bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Observation{}, StepInfo{}, false, ErrClosed
	}
	t, tabs, _ := e.snapshotTabs()
	if e.ctxID == "" || e.lost != nil || e.crashed() != nil || len(tabs) != 1 || e.attachingTabs() != 0 {
		return Observation{}, StepInfo{}, false, nil
	}
	if loading, _, crashed := t.loadState(); loading > 0 || crashed {
		return Observation{}, StepInfo{}, false, nil
	}
	defer e.br().working()()
	ctx, stop := e.live(ctx)
	defer stop()
	begun := time.Now()
	// The mouse goes nowhere, as in a freshly loaded page (pointerOut):
	// no element of the new episode starts hovered where the last one's
	// click left the pointer.
	t.mu.Lock()
	in := t.pointerIn
	t.pointerIn = false
	t.mu.Unlock()
	if in {
		if err := (proto.InputDispatchMouseEvent{Type: proto.InputDispatchMouseEventTypeMouseMoved, X: -1, Y: -1}).Call(t.client(ctx)); err != nil {
			return Observation{}, StepInfo{}, false, e.orCrash(fmt.Errorf("restart the episode in place: move the mouse out: %w", err))
		}
	}
	e.act++
	t.beginAction(ctx, e.act, true)
	var raw json.RawMessage
	if err := t.evalAwait(ctx, restart, &raw); err != nil {
		return Observation{}, StepInfo{}, false, e.orCrash(fmt.Errorf("restart the episode in place: %w", err))
	}
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Observation{}, StepInfo{}, false, nil
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return Observation{}, StepInfo{}, false, fmt.Errorf("restart the episode in place: the page's answer: %w", err)
		}
	}
	e.terminated, e.lost, e.chat = false, nil, nil
	info = StepInfo{Attempts: 1, Action: time.Since(begun)}
	obs, info, err = e.finishStep(ctx, info, begun, "", e.cfg.Observe)
	return obs, info, err == nil, e.orCrash(err)
}

// attachingTabs is how many tabs are being attached, not yet added.
func (e *Env) attachingTabs() int {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	return e.attaching
}
