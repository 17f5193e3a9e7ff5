package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// The one way an op runs, for every caller: the WebSocket protocol, the
// OpenEnv and MCP front ends, the re-run player and a dream's live start.
// submit counts the request by op, finds its environment, admits it (a
// request that arrives after Close began is answered shutting_down; one
// admitted is waited for by Close), runs it on the environment's worker
// for env ops (after that environment's earlier requests) or on a
// goroutine of its own, bounds it by the request timeout, converts its
// error to the wire's once and counts that error by code.

// opRequest is one request to run.
type opRequest struct {
	op *op
	// env names the environment of an env op when c.x is not given.
	env string
	c   call
	// raw are the wire arguments, decoded strictly; typed, when set, are
	// an internal caller's arguments (a *T of the op's args type).
	raw   args
	typed any
	// ctx, when set, is the caller's: its end ends the request too.
	ctx context.Context
	// then runs on the worker right after the op, with its environment
	// (MCP reads the episode's state there, in the same job).
	then func(x *session)
}

// submit runs r and hands its result, or its wire error, to done (on the
// worker or the goroutine that ran it).
func (s *Server) submit(r opRequest, done func(res any, e *Error)) {
	s.metrics.requests.WithLabelValues(r.op.name).Inc()
	finish := func(res any, err error) {
		e := wireError(err)
		if e != nil {
			s.metrics.errors.WithLabelValues(string(e.Code)).Inc()
			res = nil
		}
		done(res, e)
	}
	if r.op.run == nil {
		finish(nil, unknownOp(r.op.name))
		return
	}
	x := r.c.x
	if r.op.env && x == nil {
		var err error
		if x, err = s.session(r.env); err != nil {
			finish(nil, err)
			return
		}
		r.c.x = x
	}
	if !s.admit() {
		finish(nil, errShuttingDown)
		return
	}
	job := func() {
		defer s.inflight.Done()
		res, err := s.runAdmitted(r)
		if r.then != nil {
			r.then(r.c.x)
		}
		finish(res, err)
	}
	if !r.op.env {
		go job()
		return
	}
	if r.c.conn != nil {
		x.owner.Store(r.c.conn) // the connection that uses an environment owns it
	}
	if !x.enqueue(job) {
		s.inflight.Done()
		finish(nil, errorf(CodeUnknownEnv, false, "environment %q was closed", x.id))
	}
}

// do is submit for a caller that waits for the result.
func (s *Server) do(r opRequest) (any, error) {
	type result struct {
		res any
		e   *Error
	}
	ch := make(chan result, 1)
	s.submit(r, func(res any, e *Error) { ch <- result{res, e} })
	got := <-ch
	if got.e != nil {
		return nil, counted{got.e}
	}
	return got.res, nil
}

// counted is an op's error as do returns it: converted and counted in
// /metrics already, so a front end does not count it again.
type counted struct{ e *Error }

func (c counted) Error() string { return c.e.Error() }
func (c counted) Unwrap() error { return c.e }

// opError reports whether err is an op's, counted already.
func opError(err error) bool {
	var c counted
	return errors.As(err, &c)
}

// runAdmitted runs an admitted request within the server's lifetime: its
// context derives from the server's (and the caller's) and is bounded by
// the request timeout; a request that Close cut short is answered
// shutting_down.
func (s *Server) runAdmitted(r opRequest) (any, error) {
	ctx, cancel := context.WithTimeout(s.base, s.cfg.StepTimeout)
	defer cancel()
	if r.ctx != nil {
		stop := context.AfterFunc(r.ctx, cancel)
		defer stop()
	}
	if err := r.c.x.startFailed(r.op.name); err != nil {
		return nil, err
	}
	a := r.typed
	if a == nil {
		var err error
		if a, err = r.op.decode(r.raw); err != nil {
			return nil, err
		}
	}
	res, err := r.op.run(s, ctx, r.c, a)
	switch {
	case s.base.Err() != nil:
		return nil, errShuttingDown
	case r.ctx != nil && r.ctx.Err() != nil:
		return nil, r.ctx.Err()
	case err == nil && ctx.Err() != nil:
		return nil, errorf(CodeTimeout, true, "request took longer than the server's request timeout (%s)", s.cfg.StepTimeout)
	}
	return res, err
}

// runOp runs op name with typed arguments for an internal caller (ctx is
// the caller's) and returns its typed result.
func runOp[R, T any](ctx context.Context, s *Server, name string, c call, a *T) (R, error) {
	r := typedOp(name, c, a)
	r.ctx = ctx
	return opResult[R](s, r)
}

// typedOp is the request of op name (a name of the table, whose args
// type is T) with typed arguments.
func typedOp[T any](name string, c call, a *T) opRequest {
	o, ok := lookupOp(name)
	if !ok || o.args != reflect.TypeFor[T]() {
		panic(fmt.Sprintf("server: op %s does not take %T", name, a))
	}
	return opRequest{op: o, c: c, typed: a}
}

// opResult runs r for a caller that waits, and returns its typed result.
func opResult[R any](s *Server, r opRequest) (R, error) {
	var zero R
	res, err := s.do(r)
	if err != nil {
		return zero, err
	}
	out, ok := res.(R)
	if !ok {
		return zero, errorf(CodeInternal, false, "op %s answered %T, not %s", r.op.name, res, reflect.TypeFor[R]())
	}
	return out, nil
}

// wireOp is the request of op name (a name of the table) with wire
// arguments, for the front ends that build them (OpenEnv, MCP).
func wireOp(name string, c call, raw args) opRequest {
	o, ok := lookupOp(name)
	if !ok {
		panic("server: no op " + name)
	}
	return opRequest{op: o, c: c, raw: raw}
}

// admit counts a request in flight, unless the server is closing.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.inflight.Add(1)
	return true
}

// onWorker runs fn on x's worker, after the requests queued before it:
// for reads of the worker's own fields, not ops (those go through submit).
func (s *Server) onWorker(x *session, fn func()) error {
	done := make(chan struct{})
	if !x.enqueue(func() {
		defer close(done)
		fn()
	}) {
		return errorf(CodeUnknownEnv, false, "environment %s was closed", x.id)
	}
	<-done
	return nil
}
