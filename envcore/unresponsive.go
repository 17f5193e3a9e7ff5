package envcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rod/rod/lib/proto"
	"go.uber.org/zap"
)

// A page that stops answering: a script that never ends (while(true){}
// after a click), a renderer hung on a huge DOM. Every CDP call of a step is
// bounded by its context, so the step itself returns at its deadline; what
// is left is to win the renderer back for the next step, or give the
// environment up.

// ErrUnresponsive is the error (wrapped) of a step whose page stopped
// answering and could not be regained: its script was stopped and it still
// did not answer. The environment's browser context is closed (no other
// environment is touched); Reset starts a new episode. It is the
// infrastructure's fault, not the agent's.
var ErrUnresponsive = errors.New("the page stopped answering")

// regainTimeout bounds the wait for a page to answer once its script was
// told to stop.
const regainTimeout = 5 * time.Second

// regain stops the script that holds t's renderer, if one does, and checks
// that the page answers again. Runtime.terminateExecution is handled off
// the renderer's main thread, so it reaches a page in an endless loop; it
// ends the current script (or, when none runs, the next evaluation: the
// probe, which answers either way).
func (t *tab) regain(ctx context.Context) error {
	_ = t.client(ctx).send(proto.RuntimeTerminateExecution{})
	pctx, cancel := context.WithTimeout(ctx, regainTimeout)
	defer cancel()
	_, err := proto.RuntimeEvaluate{Expression: "0", ReturnByValue: true}.Call(t.client(pctx))
	return err
}

// regainOrLose regains t's page (see regain) or, when it stays silent,
// gives the environment up (lose). why says what was under way.
func (e *Env) regainOrLose(ctx context.Context, t *tab, why string) error {
	if t == nil {
		return nil
	}
	err := t.regain(ctx)
	if err == nil || ctx.Err() != nil {
		return ctx.Err()
	}
	e.log.Warn("page unresponsive", zap.String("why", why), zap.Error(err))
	return e.lose(fmt.Sprintf("%s, and the page did not answer within %s after its script was stopped", why, regainTimeout))
}

// lose gives the environment up: its browser context is closed (its
// renderers with it) and the error returned, wrapping ErrUnresponsive, is
// what Step and Observe answer until Reset.
func (e *Env) lose(why string) error {
	lost := fmt.Errorf("%w: %s; the environment's browser context was closed: call Reset to start a new episode", ErrUnresponsive, why)
	e.log.Warn("closing an unresponsive environment's context", zap.String("why", why))
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if derr := e.dispose(dctx); derr != nil {
		e.log.Warn("disposing an unresponsive context failed", zap.Error(derr))
	}
	e.lost = lost
	return lost
}

// observeBounded is observe within Config.ObserveTimeout. A page that does
// not answer in time (a script that started spinning after the action, a
// DOM too large to walk) gets its script stopped and is read once more;
// silent again, the environment is given up (regainOrLose).
func (e *Env) observeBounded(ctx context.Context, opts ObserveOptions) (Observation, error) {
	for attempt := 0; ; attempt++ {
		octx, cancel := context.WithTimeout(ctx, e.cfg.ObserveTimeout)
		obs, err := e.observe(octx, opts)
		late := octx.Err() != nil
		cancel()
		if err == nil || ctx.Err() != nil || !late {
			return obs, err
		}
		// A page grown past a limit (a DOM too large to walk in time) is
		// over that limit, whatever the machine's load made of the walk.
		sctx, scancel := context.WithTimeout(ctx, regainTimeout)
		rl := e.overLimit(sctx)
		scancel()
		if rl != nil {
			return Observation{}, e.giveUpOver(rl)
		}
		why := fmt.Sprintf("reading the page took longer than %s", e.cfg.ObserveTimeout)
		if attempt > 0 {
			return Observation{}, e.lose(why + ", twice (the second time after its script was stopped)")
		}
		if rerr := e.regainOrLose(ctx, e.activeTab(), why); rerr != nil {
			return Observation{}, rerr
		}
	}
}
