package server

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/webserv-rl/webserv/envcore"
)

// Code names a failure on the wire; every code belongs to one Fault.
type Code string

// Fault says whose a failure is, so a trainer never scores an
// environment's failure as the policy's.
type Fault string

// Whose a failure is.
const (
	// FaultClient: the request is wrong (bad arguments, unknown op or
	// environment, no token, a site this server is not configured for);
	// fix the caller.
	FaultClient Fault = "client"
	// FaultAgent: the episode's own state refuses the request (it is
	// over, or the pages the policy opened went past a resource limit);
	// the policy's doing, a reset goes on.
	FaultAgent Fault = "agent"
	// FaultInfrastructure: the browser, a site, the server or the host
	// failed or is full; not the policy's doing: retry or report, never
	// score it. Every failure not marked otherwise is this.
	FaultInfrastructure Fault = "infrastructure"
)

// The error codes. codeTable says each one's fault and meaning.
const (
	CodeBadFrame       Code = "bad_frame"
	CodeFrameTooLarge  Code = "frame_too_large"
	CodeUnauthorized   Code = "unauthorized"
	CodeUnknownOp      Code = "unknown_op"
	CodeBadArgs        Code = "bad_args"
	CodeUnknownEnv     Code = "unknown_env"
	CodeNotSupported   Code = "not_supported"
	CodeNotConfigured  Code = "not_configured"
	CodeEpisodeOver    Code = "episode_over"
	CodeResourceLimit  Code = "resource_limit"
	CodeCapacity       Code = "capacity"
	CodeTimeout        Code = "timeout"
	CodeBackend        Code = "backend"
	CodeSiteDown       Code = "site_down"
	CodeBrowserCrashed Code = "browser_crashed"
	CodeShuttingDown   Code = "shutting_down"
	CodeInternal       Code = "internal_error"
)

// codeInfo is one row of the code table.
type codeInfo struct {
	code  Code
	fault Fault
	doc   string
}

// codeTable is every error code, its fault and what it means: errorf,
// docs/protocol.md's table (a test keeps them equal) and the Python
// client's exception classes follow it.
var codeTable = []codeInfo{
	{CodeBadFrame, FaultClient, "not a MessagePack map of the request shape"},
	{CodeFrameTooLarge, FaultClient, "over the server's frame limit (`--max-frame`)"},
	{CodeUnauthorized, FaultClient, "token missing or wrong"},
	{CodeUnknownOp, FaultClient, "no such op"},
	{CodeBadArgs, FaultClient, "an argument is unknown, of the wrong type or out of range; the message names it"},
	{CodeUnknownEnv, FaultClient, "the environment never existed, was closed, or was reclaimed after its TTL"},
	{CodeNotSupported, FaultClient, "the environment's backend cannot do this"},
	{CodeNotConfigured, FaultClient, "a site, image, task set or grader this server is not set up for; not retryable"},
	{CodeEpisodeOver, FaultAgent, "the episode terminated or was truncated: reset first"},
	{CodeResourceLimit, FaultAgent, "the pages the policy opened went past an environment limit (memory, tabs, page size); the episode is over and the environment is recycled: reset"},
	{CodeCapacity, FaultInfrastructure, "too many environments or creations; wait `retry_after` seconds"},
	{CodeTimeout, FaultInfrastructure, "the request ran past its deadline"},
	{CodeBackend, FaultInfrastructure, "the browser or a site failed (to start, reset or sign in), or a failure nobody classified"},
	{CodeBrowserCrashed, FaultInfrastructure, "the browser process the environment's pages were in died (killed, out of memory, crashed), taking the episode's pages with it; the server starts a replacement: reset the environment"},
	{CodeSiteDown, FaultInfrastructure, "the environment's site instance died or stopped answering its readiness probe, or the route to it failed, mid-episode; the episode is not graded: reset for a fresh instance"},
	{CodeShuttingDown, FaultInfrastructure, "the server is stopping"},
	{CodeInternal, FaultInfrastructure, "a bug: please report it"},
}

// Fault is whose failure an error with this code is; unknown codes are
// the infrastructure's.
func (c Code) Fault() Fault {
	if i := slices.IndexFunc(codeTable, func(r codeInfo) bool { return r.code == c }); i >= 0 {
		return codeTable[i].fault
	}
	return FaultInfrastructure
}

// badArgs is the client's error: a request argument is wrong.
func badArgs(msg string) *Error { return errorf(CodeBadArgs, false, "%s", msg) }

// maxErrorText bounds an error message: text a client sent may be quoted
// in it, and it goes back into an agent's prompt.
const maxErrorText = 2000

// bounded cuts s to maxErrorText bytes (on a rune boundary), saying how
// long it was.
func bounded(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (message cut: %d bytes in all)", len(s))
}

// requestError marks an error as the request's (bad_args): an unknown
// site or task, a start URL the site cannot take. Factories mark their
// argument errors with BadRequest; anything unmarked is the
// infrastructure's.
type requestError struct{ error }

func (e requestError) Unwrap() error { return e.error }

// BadRequest marks err as the request's fault: it reaches the client as
// bad_args. A Factory marks with it what the make or reset request got
// wrong (an unknown site, task or task set, a start URL off the site).
func BadRequest(err error) error { return requestError{err} }

// configError marks an error as the server's configuration's
// (not_configured): a site whose image or backend is not set up here, a
// grader that is not installed. Not retryable: the same request fails
// the same way until the server is set up differently.
type configError struct{ error }

func (e configError) Unwrap() error { return e.error }

// Unconfigured marks err as the server's configuration's fault: it
// reaches the client as not_configured (a site whose backend or image is
// not set up here, a task that needs a grader this server lacks).
func Unconfigured(err error) error { return configError{err} }

// wireError is the one place an error becomes a wire error. Errors that
// are already wire errors keep their code; errors marked as the
// request's or the configuration's, and the environment's known states,
// get theirs; everything else is the infrastructure's (backend,
// retryable), so a failure nobody foresaw is never scored against the
// policy.
func wireError(err error) *Error {
	if err == nil {
		return nil
	}
	var we *Error
	var re requestError
	var ce configError
	switch {
	case errors.As(err, &we):
		return we
	case errors.As(err, &re):
		return errorf(CodeBadArgs, false, "%v", err)
	case errors.As(err, &ce):
		return errorf(CodeNotConfigured, false, "%v", err)
	case errors.Is(err, envcore.ErrTerminated):
		return errorf(CodeEpisodeOver, false, "%v", err)
	case errors.Is(err, envcore.ErrClosed):
		return errorf(CodeUnknownEnv, false, "%v", err)
	case errors.Is(err, envcore.ErrBrowserCrashed):
		// Retryable after a reset, when a pool restarts the browser.
		var ce *envcore.BrowserCrashedError
		return errorf(CodeBrowserCrashed, !errors.As(err, &ce) || ce.Supervised, "%v", err)
	case errors.Is(err, envcore.ErrResourceLimit):
		// The pages the policy opened: its episode ends, a reset goes on.
		return errorf(CodeResourceLimit, false, "%v", err)
	case errors.Is(err, envcore.ErrUnresponsive):
		// The renderer could not be regained: not the policy's, and the
		// same step cannot succeed; a reset starts a fresh context.
		return errorf(CodeBackend, false, "%v", err)
	case errors.Is(err, errShuttingDown):
		return errorf(CodeShuttingDown, true, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(CodeTimeout, true, "the request ran past its deadline: %v", err)
	}
	return errorf(CodeBackend, true, "%v", err)
}

// errShuttingDown is the cause of a request cut short by the server's
// Close.
var errShuttingDown = errors.New("the server is shutting down; send the request to another server or after it restarts")
