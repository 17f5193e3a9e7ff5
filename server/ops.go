package server

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/webserv-rl/webserv/envcore"
)

// op is one operation of the wire protocol. The table ops is the only
// place an op is named: dispatch, the metric labels, hello's op list and
// its idempotent ops, the unknown-op error, the OpenEnv and MCP front ends
// and docs/protocol.md's table (kept equal by a test) all read it. Every
// caller runs an op the one way of exec.go.
type op struct {
	name string
	// doc is one line for the docs' table.
	doc string
	// env: the request names an environment and runs on its worker, after
	// that environment's earlier requests.
	env bool
	// idempotent: the op changes nothing on the server, so a client may
	// send it again after a lost connection (hello lists these ops; the
	// Python client's retry policy reads them).
	idempotent bool
	// args is the type of the op's arguments, decoded strictly.
	args reflect.Type
	// decode reads the op's wire arguments into a *args.
	decode func(raw args) (any, error)
	// run runs the op on its decoded arguments (a *args). nil for hello,
	// which the connection answers.
	run func(s *Server, ctx context.Context, c call, a any) (any, error)
}

// call is who asks: the connection (nil off the WebSocket protocol and
// MCP), which owns the environments the request makes, and for env ops
// the environment, whose worker runs the request.
type call struct {
	conn *conn
	x    *session
}

// opFor builds a table row whose handler gets its arguments as a *T and
// answers an R.
func opFor[T, R any](name, doc string, env bool, run func(s *Server, ctx context.Context, c call, a *T) (R, error)) op {
	o := op{name: name, doc: doc, env: env, args: reflect.TypeFor[T](),
		decode: func(raw args) (any, error) { return decodeArgs[T](name, raw) }}
	if run != nil {
		o.run = func(s *Server, ctx context.Context, c call, a any) (any, error) {
			res, err := run(s, ctx, c, a.(*T))
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}
	return o
}

// idem marks o idempotent.
func idem(o op) op {
	o.idempotent = true
	return o
}

// ops is the protocol's vocabulary, in the order the docs list it. It is
// set in init: ops run ops (a dream's start makes a real environment).
var ops []op

func init() { ops = opTable() }

func opTable() []op {
	return []op{
		idem(opFor[helloArgs, any]("hello", "protocol version, token and limits; first when the server has a token", false, nil)),
		idem(opFor("sites", "the sites this server hosts", false, func(s *Server, _ context.Context, _ call, _ *noArgs) (map[string]any, error) {
			return map[string]any{"sites": append(s.factory.Sites(), dreamSiteInfo)}, nil
		})),
		idem(opFor("tasks", "the tasks of a site (every site's without one)", false, func(s *Server, _ context.Context, _ call, a *tasksArgs) (map[string]any, error) {
			tasks, err := s.factory.Tasks(a.Site)
			if err != nil {
				return nil, BadRequest(err)
			}
			return map[string]any{"tasks": tasks}, nil
		})),
		idem(opFor("actions", "the action grammar: each action's call, typed arguments, description and example, and the whole as prompt text", false, func(*Server, context.Context, call, *noArgs) (map[string]any, error) {
			return map[string]any{"actions": envcore.Actions(), "describe": envcore.Describe()}, nil
		})),
		idem(opFor("stats", "environments open, steps served, uptime", false, func(s *Server, _ context.Context, _ call, _ *noArgs) (Stats, error) {
			return s.stats(), nil
		})),
		opFor("make", "creates an environment and starts its first episode", false, (*Server).makeEnv),
		opFor("reset", "starts a new episode", true, func(s *Server, ctx context.Context, c call, a *resetArgs) (*EpisodeReply, error) {
			return c.x.engine.reset(ctx, s, c.x, a, CauseReset)
		}),
		opFor("step", "runs one action and returns once what it caused has settled", true, func(s *Server, ctx context.Context, c call, a *stepArgs) (*StepReply, error) {
			return c.x.engine.step(ctx, s, c.x, a)
		}),
		idem(opFor("observe", "the current observation, without acting", true, func(s *Server, ctx context.Context, c call, a *observeArgs) (*ObserveReply, error) {
			return c.x.engine.observe(ctx, s, c.x, a)
		})),
		opFor("close", "closes the environment and its site instance", true, func(s *Server, _ context.Context, c call, _ *noArgs) (map[string]any, error) {
			s.closeSession(c.x, "closed by the client")
			return map[string]any{"closed": true}, nil
		}),
		opFor("snapshot", "saves the site's and the browser's state under a name", true, func(s *Server, ctx context.Context, c call, a *snapshotArgs) (*SnapshotReply, error) {
			x := c.x
			sn, err := snapshotter(x, "snapshot")
			if err != nil {
				return nil, err
			}
			return s.snapshot(ctx, x, sn, a.Name)
		}),
		opFor("restore", "returns to a snapshot, as a new episode", true, func(s *Server, ctx context.Context, c call, a *snapshotArgs) (*EpisodeReply, error) {
			x := c.x
			sn, err := snapshotter(x, "restore")
			if err != nil {
				return nil, err
			}
			return s.restore(ctx, x, sn, a.Name)
		}),
		opFor("fork", "n new environments, each on its own copy of a snapshot", true, func(s *Server, ctx context.Context, c call, a *forkArgs) (*ForkReply, error) {
			x := c.x
			sn, err := snapshotter(x, "fork")
			if err != nil {
				return nil, err
			}
			return s.fork(ctx, c.conn, x, sn, a)
		}),
		idem(opFor("state_diff", "the rows of the site's state database changed since the episode began, and queries' values then and now (environments made with state_diff; for trainers)", true, (*Server).stateDiff)),
	}
}

// lookupOp finds an op by name.
func lookupOp(name string) (*op, bool) {
	for i := range ops {
		if ops[i].name == name {
			return &ops[i], true
		}
	}
	return nil, false
}

// opNames lists the ops, in table order.
func opNames() []string {
	names := make([]string, len(ops))
	for i, o := range ops {
		names[i] = o.name
	}
	return names
}

// unknownOp is the error for an op the table does not have.
func unknownOp(name string) error {
	msg := fmt.Sprintf("unknown op %s; ops are %s", quoteKey(name), strings.Join(opNames(), ", "))
	if near := nearest(name, opNames()); near != "" {
		msg = fmt.Sprintf("unknown op %s; did you mean %s? Ops are %s", quoteKey(name), near, strings.Join(opNames(), ", "))
	}
	return errorf(CodeUnknownOp, false, "%s", msg)
}

// idempotentOps lists the ops a client may send again after a lost
// connection, in table order.
func idempotentOps() []string {
	var names []string
	for _, o := range ops {
		if o.idempotent {
			names = append(names, o.name)
		}
	}
	return names
}

// snapshotter is x's instance's snapshot support, or why it has none.
func snapshotter(x *session, op string) (Snapshotter, error) {
	inst, err := x.engine.site(x, op, "start a dream at any recorded step with make's start {episode, step} instead")
	if err != nil {
		return nil, err
	}
	sn, ok := inst.(Snapshotter)
	if !ok {
		return nil, errorf(CodeNotSupported, false, "%s is not supported by the %s site's backend; it needs a hosting backend with snapshots (local or incus)", op, x.site)
	}
	return sn, nil
}
