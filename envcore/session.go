package envcore

import (
	"context"
	"errors"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// session is a CDP client bound to one target session and one context. It
// satisfies proto.Client, proto.Sessionable and proto.Contextable, so
// proto.X{...}.Call(s) sends X to that session. rod's own Page carries far
// more machinery than a step needs; the hot paths use this instead.
type session struct {
	b   *rod.Browser
	id  proto.TargetSessionID
	ctx context.Context
}

func (s session) Call(ctx context.Context, sessionID, method string, params any) ([]byte, error) {
	return s.b.Call(ctx, sessionID, method, params)
}

func (s session) GetSessionID() proto.TargetSessionID { return s.id }

func (s session) GetContext() context.Context { return s.ctx }

// done is an already-cancelled context; see send.
var done = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// send writes a command to the session without waiting for its answer.
// rod's CDP client writes the frame before it waits and returns at once when
// the context is done, so calling it with a done context sends the command
// in order with everything else on the connection and drops the answer.
func (s session) send(r proto.Request) error {
	_, err := s.b.Call(done, string(s.id), r.ProtoReq(), r)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
