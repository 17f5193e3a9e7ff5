package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/tasks"
)

// The Model Context Protocol front end: every environment as an MCP
// session, for agent harnesses that reach their tools over MCP. It is
// built on the ops table as the OpenEnv front end is: each tool runs ops
// (make, reset, step, observe, snapshot, restore, fork) through
// Server.run, on the environment's worker, so trajectories, the live view,
// approval and the error codes are the WebSocket protocol's.
//
// One MCP session owns the environments it makes (the first by reset, or
// lazily by the first tool that needs one, from the session's defaults)
// and those it forks or attaches; when the session ends (the client
// closes it, its HTTP session times out, the stdio host exits) they are
// closed, as a lost WebSocket client's are.
//
// The tools: one per action of the call grammar (envcore.Actions, with
// typed arguments: element ids strings, coordinates numbers), and the
// control tools of mcpControl. Each result is the next observation as
// text (the accessibility tree, or the HTML with view "html"), the
// screenshot as image content when asked, and structured content for
// trainers (mcpState). An action the page refused (last_action_error) and
// a request the server refused are error results the model reads.

// mcpSessionVersions are the MCP revisions served: those with a session.
// From 2026-07-28 the protocol is sessionless, and an environment needs
// the session that owns it; the SDK's clients negotiate down.
var mcpSessionVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// mcpTool is one tool: its arguments (the schema and the decoding read
// them) and what it does.
type mcpTool struct {
	name, doc string
	// args are a control tool's arguments: a projection of its op's
	// (mcpargs.go).
	args *mcpArgs
	// action is an action tool's action: its arguments are the action's.
	action *envcore.ActionDoc
	// observes: the tool returns an observation, and takes the view
	// options (mcpView).
	observes bool
	run      func(m *mcpSession, c *mcpCall) (*mcp.CallToolResult, error)
}

// mcpCall is a tool call's arguments, decoded.
type mcpCall struct {
	// args are a control tool's, a *T of its args type; an action tool's
	// own arguments, as sent.
	args any
	// view is the observe map of the ops the tool runs, from the view
	// options (nil for a tool that does not observe).
	view *observeSpec
	// raw are the arguments as sent, checked.
	raw map[string]any
}

// controlTool is a tool whose arguments p projects from its op's args
// type T; run gets them decoded.
func controlTool[T any](name, doc string, observes bool, p *mcpArgs, run func(m *mcpSession, a *T, c *mcpCall) (*mcp.CallToolResult, error)) mcpTool {
	if p.typ != reflect.TypeFor[T]() {
		panic(fmt.Sprintf("server: MCP tool %s runs on %s but its arguments are %s", name, reflect.TypeFor[T](), p.typ))
	}
	return mcpTool{name: name, doc: doc, args: p, observes: observes,
		run: func(m *mcpSession, c *mcpCall) (*mcp.CallToolResult, error) { return run(m, c.args.(*T), c) }}
}

// attachArgs are the attach tool's, which runs no op with arguments: it
// takes over an environment, named as a request names its env.
type attachArgs struct {
	Env string `json:"env" jsonschema:"the environment's id (env-...)"`
}

// mcpControl are the tools besides the actions.
var mcpControl = []mcpTool{
	controlTool("reset", "Start a new episode: of a task (task, like \"shopping.0\"), on a site (site, at its start page or start_url), or on any page (start_url). Without arguments, the session's task or site again. Returns the first observation; the goal is in the result and in the task tool.",
		true, argsOf("make", makeArgs{}, []string{
			// The session's defaults fill these (MCPDefaults).
			"max_steps", "evaluate_every_step", "record", "approve", "observe",
			// The server's defaults: a model does not tune its environment.
			"sites", "task_set", "allow", "politeness", "viewport", "state_diff", "side_effects", "strict_answers",
			"idle_ms", "settle_timeout_ms", "long_request_ms", "action_timeout_ms",
			"episode_timeout_ms", "step_timeout_ms", "approve_timeout_ms", "preview_ms",
			// reset's options are make's task, start_url and goal here.
			"options",
			// A dream is a trainer's environment, not a page a model visits.
			"world_model", "start", "max_dream_steps", "judge",
		}, nil), (*mcpSession).reset),
	controlTool("observe", "The current observation, without acting.",
		true, argsOf("observe", observeArgs{}, []string{"observe"}, nil), (*mcpSession).observe), // the view options are its observe
	controlTool("task", "The episode's goal, task id and site.",
		false, argsOf("", noArgs{}, nil, nil), (*mcpSession).task),
	controlTool("snapshot", "Save the site's and the browser's state under a name, to restore or fork later.",
		false, argsOf("snapshot", snapshotArgs{}, nil, []string{"name"}), (*mcpSession).snapshot),
	controlTool("restore", "Return to a snapshot, as a new episode.",
		true, argsOf("restore", snapshotArgs{}, nil, []string{"name"}), (*mcpSession).restore),
	controlTool("fork", "Make n new environments, each on its own copy of a snapshot (taken now when name is not given). Returns their ids: another MCP session takes one over with attach; this session goes on in its own.",
		false, argsOf("fork", forkArgs{N: 1}, nil, nil), (*mcpSession).fork),
	controlTool("attach", "Go on in an environment of this server, like one fork made: this session then owns it and acts on it.",
		true, argsOf("", attachArgs{}, nil, []string{"env"}), (*mcpSession).attach),
}

// mcpTools are the control tools and one tool per action.
var mcpTools = func() []mcpTool {
	tools := slices.Clone(mcpControl)
	for _, d := range envcore.Actions() {
		tools = append(tools, mcpTool{name: d.Name, doc: d.Description + " Call form: " + d.Example + ".",
			action: &d, observes: true, run: actionTool(d)})
	}
	return tools
}()

// ownNames are the names of t's own arguments (the view options aside).
func (t mcpTool) ownNames() []string {
	if t.args != nil {
		return t.args.names()
	}
	names := make([]string, len(t.action.Args))
	for i, a := range t.action.Args {
		names[i] = a.Name
	}
	return names
}

// schema is t's input schema: a control tool's from its args type, an
// action tool's from the action's, the view options from the observe
// map's; no other keys allowed.
func (t mcpTool) schema() (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	if t.args != nil {
		props, err := t.args.schema()
		if err != nil {
			return nil, err
		}
		maps.Copy(s.Properties, props)
		s.Required = slices.Clone(t.args.required)
	} else {
		for _, a := range t.action.Args {
			p := &jsonschema.Schema{Type: a.Type, Description: a.Doc}
			if a.Type == envcore.ArgArray {
				p.Items = &jsonschema.Schema{Type: "string"}
			}
			s.Properties[a.Name] = p
			if a.Required {
				s.Required = append(s.Required, a.Name)
			}
		}
	}
	if t.observes {
		props, err := mcpView.schema()
		if err != nil {
			return nil, err
		}
		if v := props["view"]; v != nil {
			for _, name := range envcore.TextViews {
				v.Enum = append(v.Enum, name)
			}
		}
		maps.Copy(s.Properties, props)
	}
	return s, nil
}

// decode checks and decodes a call's arguments: a control tool's as the
// op's are (decode.go), an action tool's against the action's, the view
// options as the observe map; an unknown, missing or mistyped argument is
// refused, naming it and what the tool takes.
func (t mcpTool) decode(s *Server, a map[string]any) (*mcpCall, error) {
	own, view, err := splitArgs(a, t.ownNames(), t.observes, t.unknown)
	if err != nil {
		return nil, err
	}
	c := &mcpCall{raw: a, args: own}
	if t.args != nil {
		if c.args, err = t.args.decode(t.name, own); err != nil {
			return nil, err
		}
	} else if err := checkActionArgs(t.name, t.action.Args, own); err != nil {
		return nil, err
	}
	if t.observes {
		v, err := mcpView.decode(t.name, view)
		if err != nil {
			return nil, err
		}
		spec := v.(*observeSpec)
		if _, err := spec.options(s.tokens); err != nil { // the ops' check of the observe map
			return nil, err
		}
		c.view = &observeSpec{AXTree: true, Screenshot: spec.Screenshot}
		if spec.View == "html" { // under a budget, the HTML view is the one pruned
			c.view = &observeSpec{View: spec.View, Screenshot: spec.Screenshot}
		}
	}
	return c, nil
}

// unknown refuses key, which t does not take: a control tool as the op
// refuses it (unknownKey), an action tool in its own words.
func (t mcpTool) unknown(key string, valid []string) error {
	if t.args != nil {
		return unknownKey(t.name, key, valid)
	}
	return badArgs(fmt.Sprintf("%s: unknown argument %s; %s takes %s", t.name, quoteKey(key), t.name, strings.Join(valid, ", ")))
}

// checkActionArgs refuses a missing or mistyped argument of an action's
// (the action's Build checks the rest).
func checkActionArgs(tool string, spec []envcore.ActionArg, a map[string]any) error {
	for _, s := range spec {
		v, ok := a[s.Name]
		if !ok || v == nil {
			if s.Required {
				return badArgs(fmt.Sprintf("%s needs %s (%s: %s)", tool, s.Name, s.Type, s.Doc))
			}
			continue
		}
		good := false
		switch s.Type {
		case envcore.ArgString:
			_, good = v.(string)
		case envcore.ArgBoolean:
			_, good = v.(bool)
		case envcore.ArgNumber:
			_, good = v.(float64)
		case envcore.ArgInteger:
			n, isNum := v.(float64)
			good = isNum && n == math.Trunc(n)
		default:
			good = true // the action's Call checks its own
		}
		if !good {
			return badArgs(fmt.Sprintf("%s: %s must be %s, got %s", tool, s.Name, s.Type, typeName(v)))
		}
	}
	return nil
}

// mcpSession is one MCP session's state: the environment its tools act
// on, and the owner of every environment it made.
type mcpSession struct {
	s *Server
	// owner stands for the session where an environment records who owns
	// it (session.owner); releaseOwned(owner) frees them all.
	owner    *conn
	defaults MCPDefaults

	mu sync.Mutex // one tool call at a time
	x  *session   // the environment the tools act on
	st mcpState   // x's episode after the last op (written on x's worker)
}

// MCPDefaults are a session's settings from its host's configuration (the
// /v1/mcp URL's query, or webserv mcp's flags): what a reset without
// arguments (or the first tool, lazily) makes, and make's recording and
// approval.
type MCPDefaults struct {
	Site, Task, StartURL, Goal string
	Record, Approve            bool
	MaxSteps                   int
	// EvaluateEveryStep grades every step: each result's reward is the
	// change in the task's grade (docs/protocol.md, Rewards).
	EvaluateEveryStep bool
	// MaxTokens and Tokenizer are a token budget for every page text
	// (observe.max_tokens and observe.tokenizer; docs/envcore.md).
	MaxTokens int
	Tokenizer string
	// SideEffects is make's side_effects (report, fail or off): the
	// host's choice, which the reset tool does not offer the agent.
	SideEffects string
}

// mcpDefaultKeys are the URL query keys of MCPDefaults.
var mcpDefaultKeys = []string{"site", "task", "start_url", "goal", "record", "approve", "max_steps", "evaluate_every_step", "max_tokens", "tokenizer", "side_effects"}

// ParseMCPDefaults reads MCPDefaults from a URL query, refusing keys it
// does not know.
func ParseMCPDefaults(q url.Values) (MCPDefaults, error) {
	var d MCPDefaults
	for k := range q {
		if k != "token" && !slices.Contains(mcpDefaultKeys, k) {
			return d, fmt.Errorf("unknown query parameter %s; /v1/mcp takes %s and token", quoteKey(k), strings.Join(mcpDefaultKeys, ", "))
		}
	}
	d.Site, d.Task, d.StartURL, d.Goal = q.Get("site"), q.Get("task"), q.Get("start_url"), q.Get("goal")
	for _, b := range []struct {
		key string
		dst *bool
	}{{"record", &d.Record}, {"approve", &d.Approve}, {"evaluate_every_step", &d.EvaluateEveryStep}} {
		if v := q.Get(b.key); v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return d, fmt.Errorf("query parameter %s must be true or false, got %q", b.key, v)
			}
			*b.dst = on
		}
	}
	for _, n := range []struct {
		key string
		dst *int
	}{{"max_steps", &d.MaxSteps}, {"max_tokens", &d.MaxTokens}} {
		if v := q.Get(n.key); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return d, fmt.Errorf("query parameter %s must be a whole number, 0 for no limit, got %q", n.key, v)
			}
			*n.dst = i
		}
	}
	d.Tokenizer = q.Get("tokenizer")
	d.SideEffects = q.Get("side_effects")
	if err := tasks.CheckSideEffectMode(d.SideEffects); err != nil {
		return d, fmt.Errorf("query parameter side_effects: %w", err)
	}
	return d, nil
}

// mcpDefaultsHeader carries a session's defaults from the HTTP handler to
// the tools (which see the request's headers, not its URL).
const mcpDefaultsHeader = "Webserv-Mcp-Defaults"

// mcpFront is the MCP server of a Server: one mcp.Server whose handlers
// find their session's state by the SDK's session.
type mcpFront struct {
	s        *Server
	server   *mcp.Server
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*mcpSession
	// stdio is the defaults of the one session ServeMCP runs (the HTTP
	// sessions bring theirs in mcpDefaultsHeader).
	stdio *MCPDefaults
}

func (s *Server) newMCPFront(stdio *MCPDefaults) *mcpFront {
	f := &mcpFront{s: s, sessions: map[*mcp.ServerSession]*mcpSession{}, stdio: stdio}
	f.server = mcp.NewServer(&mcp.Implementation{Name: "webserv", Title: "WebServ web environments", Version: Version}, &mcp.ServerOptions{
		Instructions:              mcpInstructions,
		SupportedProtocolVersions: mcpSessionVersions,
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}, Prompts: &mcp.PromptCapabilities{}},
	})
	for _, t := range mcpTools {
		schema, err := t.schema()
		if err != nil {
			panic(fmt.Sprintf("server: MCP tool %s: %v", t.name, err)) // mcpargs_test.go fails first
		}
		f.server.AddTool(&mcp.Tool{Name: t.name, Description: t.doc, InputSchema: schema}, f.toolHandler(t))
	}
	f.server.AddResource(&mcp.Resource{URI: "webserv://task", Name: "task", MIMEType: "text/plain",
		Description: "the goal of this session's current episode"}, f.readTask)
	for _, site := range s.factory.Sites() {
		uri := "webserv://sites/" + site.Name
		text := site.Description
		f.server.AddResource(&mcp.Resource{URI: uri, Name: "site " + site.Name, MIMEType: "text/plain", Description: site.Description},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
			})
	}
	f.server.AddPrompt(&mcp.Prompt{Name: "webserv_actions", Title: "How to act on WebServ pages",
		Description: "the action tools, their arguments and the element ids of the observation"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "WebServ's actions",
				Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: actionGrammar()}}}}, nil
		})
	return f
}

const mcpInstructions = "WebServ: an isolated, resettable web environment with a graded task. Call reset (with a task id or a site) to start an episode, " +
	"read the observation's accessibility tree, act with the action tools (element ids are the strings in [brackets]), " +
	"and end the episode with stop (with the answer when the task asks a question): the last result carries the reward. " +
	"The prompt webserv_actions explains the actions."

// actionGrammar explains the actions, from their descriptions.
func actionGrammar() string {
	var b strings.Builder
	b.WriteString("You act on a web page through WebServ's action tools. Each observation shows the page as an accessibility tree; " +
		"every element you can act on carries its id in brackets, like [add-to-cart]: pass that string as bid. " +
		"Coordinates (mouse_click, scroll, ...) are CSS pixels of the viewport. Each tool returns the next observation once the page has settled; " +
		"an action the page refused comes back as an error result saying why, and the episode goes on. " +
		"End with stop(answer) when done (report_infeasible when the task cannot be done); the last result carries the reward.\n\nThe actions:\n")
	for _, d := range envcore.Actions() {
		var args []string
		for _, a := range d.Args {
			opt := ""
			if !a.Required {
				opt = "?"
			}
			args = append(args, a.Name+opt+": "+a.Type)
		}
		fmt.Fprintf(&b, "- %s(%s): %s Example: %s\n", d.Name, strings.Join(args, ", "), d.Description, d.Example)
	}
	return b.String()
}

// sessionOf is the state of the SDK session ss, made on its first use;
// when ss ends, its environments are freed.
func (f *mcpFront) sessionOf(ss *mcp.ServerSession, h http.Header) *mcpSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.sessions[ss]; ok {
		return m
	}
	m := &mcpSession{s: f.s, owner: &conn{s: f.s}}
	if f.stdio != nil {
		m.defaults = *f.stdio
	} else if raw := h.Get(mcpDefaultsHeader); raw != "" {
		_ = json.Unmarshal([]byte(raw), &m.defaults) // written by serveMCP
	}
	f.sessions[ss] = m
	go func() {
		_ = ss.Wait()
		f.mu.Lock()
		delete(f.sessions, ss)
		f.mu.Unlock()
		f.s.releaseOwned(m.owner)
	}()
	return m
}

func (f *mcpFront) toolHandler(t mcpTool) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var h http.Header
		if req.Extra != nil {
			h = req.Extra.Header
		}
		m := f.sessionOf(req.Session, h)
		var a map[string]any
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &a); err != nil {
				return f.s.mcpError(badArgs(fmt.Sprintf("%s: arguments must be a JSON object: %v", t.name, err))), nil
			}
		}
		if a == nil {
			a = map[string]any{}
		}
		c, err := t.decode(f.s, a)
		if err != nil {
			return f.s.mcpError(err), nil
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		res, err := t.run(m, c)
		if err != nil {
			return f.s.mcpError(err), nil
		}
		return res, nil
	}
}

func (f *mcpFront) readTask(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	var h http.Header
	if req.Extra != nil {
		h = req.Extra.Header
	}
	m := f.sessionOf(req.Session, h)
	m.mu.Lock()
	defer m.mu.Unlock()
	text := "no episode yet: call the reset tool"
	if m.x != nil {
		if st, err := m.state(); err == nil {
			text = st.goalText()
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}

// mcpError is a failure as a tool result the model reads: the wire
// error's code, fault and message, and the same as structured content.
// It is counted in the error metric as the WebSocket's errors are.
func (s *Server) mcpError(err error) *mcp.CallToolResult {
	e := wireError(err)
	if !opError(err) { // an op's error is counted where it ran (exec.go)
		s.metrics.errors.WithLabelValues(string(e.Code)).Inc()
	}
	return &mcp.CallToolResult{IsError: true,
		Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s (%s fault): %s", e.Code, e.Fault, e.Message)}},
		StructuredContent: map[string]any{"error": e}}
}

// mcpOp runs op name of the table on the session's environment, the way
// every op runs (exec.go), and reads the episode's state in the same job
// on its worker (no second trip).
func mcpOp[R, T any](m *mcpSession, name string, a *T) (R, error) {
	r := typedOp(name, call{conn: m.owner, x: m.x}, a)
	r.then = func(x *session) { m.st = x.mcpState() }
	return opResult[R](m.s, r)
}

// env makes the session's environment from the defaults when it has none
// yet, and refuses when the one it had was closed.
func (m *mcpSession) env() (*EpisodeReply, error) {
	if m.x != nil {
		if m.x.closed.Load() {
			// Not made again unasked: the model would be in another episode
			// without knowing it.
			return nil, errorf(CodeUnknownEnv, false, "environment %s was closed (idle longer than the server's TTL, %s, or closed by another client): call reset for a new one", m.x.id, m.s.cfg.TTL)
		}
		return nil, nil
	}
	d := m.defaults
	if d.Site == "" && d.Task == "" && d.StartURL == "" {
		return nil, badArgs("no environment yet: call reset with a task, a site or a start_url first")
	}
	return m.make(&makeArgs{Site: d.Site, Task: d.Task, StartURL: d.StartURL, Goal: d.Goal})
}

// make makes the session's environment (closing the one it had) with a's
// site, task, start_url, goal and seed; the session's defaults fill the
// arguments the reset tool hides.
func (m *mcpSession) make(a *makeArgs) (*EpisodeReply, error) {
	if a.Site == "" && a.Task != "" {
		a.Site = m.siteOf(a.Task)
	}
	d := m.defaults
	// make's default approve timeout fits the request's deadline.
	a.Observe = &observeSpec{AXTree: true, MaxTokens: d.MaxTokens, Tokenizer: d.Tokenizer}
	a.Record, a.Approve, a.MaxSteps, a.EvaluateEveryStep = recordArg{on: d.Record}, d.Approve, d.MaxSteps, d.EvaluateEveryStep
	a.SideEffects = d.SideEffects
	r, err := opResult[*EpisodeReply](m.s, typedOp("make", call{conn: m.owner}, a))
	if err != nil {
		return nil, err
	}
	x, err := m.s.session(r.Env)
	if err != nil {
		return nil, err
	}
	if old := m.x; old != nil && old != x {
		m.s.closeSession(old, "its MCP session made another environment")
	}
	m.x = x
	if m.st, err = m.state(); err != nil {
		return nil, err
	}
	return r, nil
}

// siteOf is the site a task id names ("shopping.0", "verified.shopping.20"),
// or "" when none of its parts is a site of this server.
func (m *mcpSession) siteOf(task string) string {
	for _, part := range strings.Split(task, ".") {
		for _, s := range m.s.factory.Sites() {
			if s.Name == part {
				return part
			}
		}
	}
	return ""
}

func (m *mcpSession) reset(a *makeArgs, c *mcpCall) (*mcp.CallToolResult, error) {
	if a.Site == "" && a.Task == "" && a.StartURL == "" { // nothing chosen: the session's defaults
		d := m.defaults
		a.Site, a.Task, a.StartURL = d.Site, d.Task, d.StartURL
		if a.Goal == "" {
			a.Goal = d.Goal
		}
	}
	if a.Site == "" && a.Task != "" {
		a.Site = m.siteOf(a.Task)
	}
	var r *EpisodeReply
	var err error
	if m.x == nil || m.x.closed.Load() || (a.Site != "" && a.Site != m.x.site) {
		if a.Site == "" && a.Task == "" && a.StartURL == "" {
			return nil, badArgs("reset needs a task, a site or a start_url: this session has no default (the /v1/mcp URL's query or webserv mcp's flags set one)")
		}
		r, err = m.make(a)
	} else {
		r, err = mcpOp[*EpisodeReply](m, "reset", &resetArgs{Seed: a.Seed, Options: episodeOpts{Task: a.Task, StartURL: a.StartURL, Goal: a.Goal, Attack: a.Attack}})
	}
	if err != nil {
		return nil, err
	}
	return m.episodeResult(c, r)
}

// episodeResult is the result of a tool that began an episode; its
// observation is reobserved when the view options ask for more than the
// episode's start gave.
func (m *mcpSession) episodeResult(c *mcpCall, r *EpisodeReply) (*mcp.CallToolResult, error) {
	obs := r.Obs
	if c.view.Screenshot || c.view.View == "html" {
		res, err := mcpOp[*ObserveReply](m, "observe", &observeArgs{Observe: c.view})
		if err != nil {
			return nil, err
		}
		obs = res.Obs
	}
	return m.result(c.raw, obs, m.st, nil), nil
}

func (m *mcpSession) observe(_ *observeArgs, c *mcpCall) (*mcp.CallToolResult, error) {
	if _, err := m.env(); err != nil {
		return nil, err
	}
	res, err := mcpOp[*ObserveReply](m, "observe", &observeArgs{Observe: c.view})
	if err != nil {
		return nil, err
	}
	return m.result(c.raw, res.Obs, m.st, nil), nil
}

// actionTool is the tool of action d: its arguments make the action
// (ActionDoc.Build), which step runs.
func actionTool(d envcore.ActionDoc) func(m *mcpSession, c *mcpCall) (*mcp.CallToolResult, error) {
	return func(m *mcpSession, c *mcpCall) (*mcp.CallToolResult, error) {
		act, err := d.Build(c.args.(map[string]any)) // no call form printed and parsed back
		if err != nil {
			return nil, badArgs(err.Error())
		}
		if _, err := m.env(); err != nil {
			return nil, err
		}
		r, err := mcpOp[*StepReply](m, "step", &stepArgs{Action: builtAction(act), Observe: c.view})
		if err != nil {
			return nil, err
		}
		return m.result(c.raw, r.Obs, m.st, r), nil
	}
}

func (m *mcpSession) task(*noArgs, *mcpCall) (*mcp.CallToolResult, error) {
	if _, err := m.env(); err != nil {
		return nil, err
	}
	st, err := m.state()
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: st.goalText()}}, StructuredContent: st}, nil
}

func (m *mcpSession) snapshot(a *snapshotArgs, _ *mcpCall) (*mcp.CallToolResult, error) {
	if _, err := m.env(); err != nil {
		return nil, err
	}
	r, err := mcpOp[*SnapshotReply](m, "snapshot", a)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("snapshot %s taken at %s", r.Name, r.URL)}},
		StructuredContent: r}, nil
}

func (m *mcpSession) restore(a *snapshotArgs, c *mcpCall) (*mcp.CallToolResult, error) {
	if _, err := m.env(); err != nil {
		return nil, err
	}
	r, err := mcpOp[*EpisodeReply](m, "restore", a)
	if err != nil {
		return nil, err
	}
	return m.episodeResult(c, r)
}

func (m *mcpSession) fork(a *forkArgs, _ *mcpCall) (*mcp.CallToolResult, error) {
	if _, err := m.env(); err != nil {
		return nil, err
	}
	r, err := mcpOp[*ForkReply](m, "fork", a)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range r.Envs {
		ids = append(ids, e.Env)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("forked snapshot %s into %s; another MCP session takes one over with attach(env)", r.Snapshot, strings.Join(ids, ", "))}},
		StructuredContent: map[string]any{"snapshot": r.Snapshot, "envs": ids}}, nil
}

func (m *mcpSession) attach(a *attachArgs, c *mcpCall) (*mcp.CallToolResult, error) {
	x, err := m.s.session(a.Env)
	if err != nil {
		return nil, err
	}
	x.owner.Store(m.owner)
	m.x = x
	res, err := mcpOp[*ObserveReply](m, "observe", &observeArgs{Observe: c.view})
	if err != nil {
		return nil, err
	}
	return m.result(c.raw, res.Obs, m.st, nil), nil
}

// mcpState is what a harness-training gateway reads from every result's
// structured content to assemble trajectories.
type mcpState struct {
	Env      string `json:"env"`
	Site     string `json:"site"`
	TaskID   string `json:"task_id,omitempty"`
	Goal     string `json:"goal"`
	Step     int    `json:"step"`
	Over     string `json:"over,omitempty"` // terminated, truncated
	StartURL string `json:"start_url,omitempty"`
}

func (st mcpState) goalText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "goal: %s\n", st.Goal)
	if st.TaskID != "" {
		fmt.Fprintf(&b, "task: %s\n", st.TaskID)
	}
	fmt.Fprintf(&b, "site: %s\nenvironment: %s", st.Site, st.Env)
	return b.String()
}

// mcpState is x's episode; only x's worker reads it.
func (x *session) mcpState() mcpState {
	return mcpState{Env: x.id, Site: x.site, TaskID: x.episode.TaskID, Goal: x.episode.Goal, Step: x.steps, Over: x.over,
		StartURL: x.episode.StartURL}
}

// mcpListedChanges bounds the side effects an MCP text lists one by one
// (its structured content has them all).
const mcpListedChanges = 10

// payText is what an ending step's reward paid for, as lines of the MCP
// text (the structured content's info.grader and info.side_effects): the
// answer's grading semantics, whether listing candidates could be paid,
// and the side effects or why they were not looked for.
func payText(wi StepInfo) []string {
	var out []string
	if g := wi.Grader; g != nil {
		line := "Grader: " + g.Semantics
		if g.HackableByListing {
			line += " (hackable by listing: an answer listing candidates can be paid)"
		}
		if g.Note != "" {
			line += "; " + g.Note
		}
		out = append(out, line+".")
	}
	if wi.SideEffectsNote != "" {
		out = append(out, "Side effects: "+wi.SideEffectsNote+".")
	}
	for i, c := range wi.SideEffects {
		if i == mcpListedChanges {
			out = append(out, fmt.Sprintf("  and %d more (structured content, info.side_effects)", len(wi.SideEffects)-i))
			break
		}
		line := fmt.Sprintf("  %s %s: %v", c.Op, c.Table, c.Row)
		if len(c.Old) > 0 {
			line += fmt.Sprintf(" (was %v)", c.Old)
		}
		out = append(out, line)
	}
	return out
}

// state reads the environment's episode on its worker.
func (m *mcpSession) state() (mcpState, error) {
	x := m.x
	var st mcpState
	err := m.s.onWorker(x, func() { st = x.mcpState() })
	return st, err
}

// result is a tool's result: the observation as text (and image), and
// the structured content. step is the step's reply, for an action.
func (m *mcpSession) result(a map[string]any, obs Observation, st mcpState, step *StepReply) *mcp.CallToolResult {
	sc := map[string]any{"env": st.Env, "site": st.Site, "task_id": st.TaskID, "goal": st.Goal, "step": st.Step,
		"url": obs.URL, "title": obs.Title}
	var head []string
	if step != nil {
		sc["reward"], sc["terminated"], sc["truncated"], sc["info"] = step.Reward, step.Terminated, step.Truncated, step.Info
		sc["action"] = obs.LastAction
		if g := step.Info.Graded; g != nil && g.Grading != nil {
			sc["grading"] = g.Grading
		}
		if step.Terminated || step.Truncated {
			over := "terminated"
			if step.Truncated {
				over = "truncated"
			}
			reward := fmt.Sprintf("none (grading failed: %s)", step.Info.EvalError)
			if step.Reward != nil {
				reward = fmt.Sprint(*step.Reward)
			}
			head = append(head, fmt.Sprintf("The episode is over (%s). Reward: %s.", over, reward))
			head = append(head, payText(step.Info)...)
		}
	}
	if obs.LastActionError != "" {
		sc["last_action_error"] = obs.LastActionError
		head = append(head, "The action failed: "+obs.LastActionError)
	}
	var b strings.Builder
	b.WriteString(GoalHeader(st.Goal)) // the goal first, as every model-facing text has it (prompt.go)
	for _, h := range head {
		b.WriteString(h + "\n")
	}
	fmt.Fprintf(&b, "url: %s\ntitle: %s\n", obs.URL, obs.Title)
	if len(obs.Tabs) > 1 {
		for _, t := range obs.Tabs {
			mark := ""
			if t.Active {
				mark = " (active)"
			}
			fmt.Fprintf(&b, "tab %d%s: %s %s\n", t.Index, mark, t.Title, t.URL)
		}
	}
	for _, d := range obs.Dialogs {
		fmt.Fprintf(&b, "dialog: %+v\n", d)
	}
	b.WriteString("\n")
	if a["view"] == "html" {
		b.WriteString(obs.HTML)
	} else {
		b.WriteString(obs.AXTree)
	}
	content := []mcp.Content{&mcp.TextContent{Text: b.String()}}
	if len(obs.Screenshot) > 0 {
		content = append(content, &mcp.ImageContent{Data: obs.Screenshot, MIMEType: imageMIME(obs.Screenshot)})
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: sc, IsError: obs.LastActionError != ""}
}

// imageMIME is a screenshot's type, from its first bytes.
func imageMIME(b []byte) string {
	if len(b) > 3 && b[0] == 0xff && b[1] == 0xd8 {
		return "image/jpeg"
	}
	return "image/png"
}

// serveMCP serves /v1/mcp: MCP over Streamable HTTP, behind the token of
// /v1/ws (Authorization: Bearer, or ?token=). The URL's other query
// parameters are the session's defaults (MCPDefaults).
func (s *Server) serveMCP() http.Handler {
	f := s.newMCPFront(nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server },
		&mcp.StreamableHTTPOptions{SessionTimeout: s.cfg.TTL, JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(openEnvToken(r)) {
			http.Error(w, "this server needs a token: send it as Authorization: Bearer TOKEN, or add ?token=... to the URL", http.StatusUnauthorized)
			return
		}
		d, err := ParseMCPDefaults(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		raw, _ := json.Marshal(d)
		r.Header.Set(mcpDefaultsHeader, string(raw))
		h.ServeHTTP(w, r)
	})
}

// ServeMCP runs one MCP session over t (the stdio of webserv mcp) until
// the client ends it or ctx ends; its environments are closed then.
func (s *Server) ServeMCP(ctx context.Context, t mcp.Transport, d MCPDefaults) error {
	f := s.newMCPFront(&d)
	ss, err := f.server.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = ss.Close()
		err = <-done
	}
	f.mu.Lock()
	var owners []*conn
	for _, m := range f.sessions {
		owners = append(owners, m.owner)
	}
	f.mu.Unlock()
	for _, o := range owners {
		s.releaseOwned(o)
	}
	s.log.Info("mcp session ended", zap.Error(err))
	return nil
}

// MCPToolNames lists the MCP tools, control tools first, then the actions.
func MCPToolNames() []string {
	names := make([]string, len(mcpTools))
	for i, t := range mcpTools {
		names[i] = t.name
	}
	return names
}

func init() {
	seen := map[string]bool{}
	for _, t := range mcpTools {
		if seen[t.name] {
			panic("server: two MCP tools are named " + t.name)
		}
		seen[t.name] = true
	}
}
