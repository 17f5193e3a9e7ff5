package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/webserv-rl/webserv/tasks"
)

// The state_diff op: the rows of the site's SQLite state that changed
// since the episode began (make's state_diff: true keeps a copy of the
// state at every episode's start), and candidate state checks' values at
// that start and now. It is for trainers, which derive state checks from
// what a demonstration did (docs/explore.md): the WebSocket client is
// trusted; the MCP front and the trainer adapters' tools never offer it.

// StateDBInstance is an Instance whose site keeps its state in a SQLite
// file (a site definition's state_db; the bundled shop's shop.db).
type StateDBInstance interface {
	ExecInstance
	// StateDB is the file, relative to the instance's data directory; ""
	// when the site declares none.
	StateDB() string
}

// The reply's bounds, and their defaults.
const (
	stateDiffRows     = 200
	stateDiffMaxRows  = 5000
	stateDiffBytes    = 256 << 10
	stateDiffMaxBytes = 8 << 20
	stateDiffValue    = 1024
	stateDiffQueries  = 64
)

type stateDiffArgs struct {
	// MaxRows and MaxBytes bound the changes in the reply (defaults 200
	// and 256 KiB); truncated says when more changed.
	MaxRows  int `json:"max_rows"`
	MaxBytes int `json:"max_bytes"`
	// Queries run on the start state and now (candidate state checks).
	Queries stateQueries `json:"queries"`
}

// stateQueries is state_diff's queries: [{sql, args}].
type stateQueries []tasks.StateQuery

func (q *stateQueries) decodeWire(v any, path string) error {
	list, ok := v.([]any)
	if !ok {
		return badArgs(fmt.Sprintf("%s must be a list of {sql, args}, got %s", path, typeName(v)))
	}
	if len(list) > stateDiffQueries {
		return badArgs(fmt.Sprintf("%s: at most %d queries, got %d", path, stateDiffQueries, len(list)))
	}
	for i, x := range list {
		m, ok := x.(map[string]any)
		at := fmt.Sprintf("%s[%d]", path, i)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be a map {sql, args}, got %s", at, typeName(x)))
		}
		var sq tasks.StateQuery
		for k, val := range m {
			switch k {
			case "sql":
				sq.SQL, _ = val.(string)
			case "args":
				if sq.Args, ok = val.([]any); !ok && val != nil {
					return badArgs(fmt.Sprintf("%s.args must be a list, got %s", at, typeName(val)))
				}
			default:
				return unknownKey(at, k, []string{"args", "sql"})
			}
		}
		if sq.SQL == "" {
			return badArgs(fmt.Sprintf("%s.sql must be a query (a string)", at))
		}
		*q = append(*q, sq)
	}
	return nil
}

// stateDB is x's site's state database and the instance to read it in,
// or why there is none.
func stateDB(x *session) (string, StateDBInstance, error) {
	inst, err := x.engine.site(x, "state_diff", "")
	if err != nil {
		return "", nil, err
	}
	in, ok := inst.(StateDBInstance)
	if !ok || in.StateDB() == "" || in.Execer() == nil {
		return "", nil, errorf(CodeNotSupported, false, "state_diff is not supported on site %s: it needs a hosted site that declares its state (state_db: a SQLite file, or state: its files or PostgreSQL database, in its definition, docs/sites.md)", x.site)
	}
	return in.StateDB(), in, nil
}

// keepStartState copies the site's state database at an episode's start,
// for the environments made with state_diff and for the episodes whose
// side effects are looked for (sideeffects.go).
func (x *session) keepStartState(ctx context.Context, ep *Episode) error {
	effects := x.sideEffectMode(ep) != tasks.SideEffectsOff
	if !x.limits.stateDiff && !effects && !x.attackNeedsState() {
		return nil
	}
	file, in, err := stateDB(x)
	if err != nil && x.attackNeedsState() {
		return errorf(CodeNotSupported, false, "attack.goal kind state needs a site that declares its state (state_db or state in its definition, docs/sites.md); site %s declares none: give a url, form or answer goal", x.site)
	}
	if err != nil {
		if !x.limits.stateDiff && x.sideEffectMode(ep) == tasks.SideEffectsReport {
			return nil // nothing to look in: no side effects are reported
		}
		if !x.limits.stateDiff {
			return errorf(CodeNotSupported, false, "side_effects: fail needs a site that declares its state (state_db or state in its definition, docs/sites.md); site %s declares none", x.site)
		}
		return err
	}
	var dir string
	if p := x.stateDir.Load(); p != nil {
		dir = *p
	} else {
		if dir, err = os.MkdirTemp("", "webserv-statediff-"); err != nil {
			return err
		}
		x.stateDir.Store(&dir)
	}
	base := filepath.Join(dir, "start.db")
	_ = os.Remove(base)
	if err := tasks.CopyDB(ctx, in.Execer(), file, base); err != nil {
		return errorf(CodeBackend, true, "keep the episode's start state: %v", err)
	}
	return nil
}

func (s *Server) stateDiff(ctx context.Context, c call, a *stateDiffArgs) (map[string]any, error) {
	x := c.x
	file, in, err := stateDB(x)
	if err != nil {
		return nil, err
	}
	dir := x.stateDir.Load()
	if !x.limits.stateDiff || dir == nil {
		return nil, badArgs("state_diff compares with the episode's start state, which the server keeps only for environments made with state_diff: true")
	}
	lim := tasks.DiffLimits{MaxRows: stateDiffRows, MaxBytes: stateDiffBytes, MaxValue: stateDiffValue}
	if a.MaxRows < 0 || a.MaxRows > stateDiffMaxRows || a.MaxBytes < 0 || a.MaxBytes > stateDiffMaxBytes {
		return nil, badArgs("state_diff.max_rows must be 0 (the default, 200) to 5000 and max_bytes 0 (256 KiB) to 8 MiB")
	}
	if a.MaxRows > 0 {
		lim.MaxRows = a.MaxRows
	}
	if a.MaxBytes > 0 {
		lim.MaxBytes = a.MaxBytes
	}
	d, vals, err := tasks.DiffDB(ctx, in.Execer(), file, filepath.Join(*dir, "start.db"), a.Queries, lim)
	if err != nil {
		return nil, errorf(CodeBackend, true, "state_diff: %v", err)
	}
	return map[string]any{"diff": d, "queries": vals}, nil
}

// dropStartState removes the copies keepStartState made.
func (x *session) dropStartState() {
	if p := x.stateDir.Swap(nil); p != nil {
		_ = os.RemoveAll(*p)
	}
}
