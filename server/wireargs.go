package server

import (
	"fmt"

	"github.com/webserv-rl/webserv/envcore"
)

// The typed arguments of every op (see ops.go). Each field's wire name is
// its json tag; decodeArgs refuses any other key.

type noArgs struct{}

type helloArgs struct {
	Version  *int   `json:"version"`
	Token    string `json:"token"`
	KeepEnvs bool   `json:"keep_envs"`
}

type tasksArgs struct {
	Site string `json:"site"`
}

// observeSpec is the observe map of make, step and observe.
type observeSpec struct {
	Screenshot bool   `json:"screenshot" jsonschema:"also a screenshot of the viewport, as an image"`
	AXTree     bool   `json:"axtree"`
	Geometry   bool   `json:"geometry"`
	Marks      bool   `json:"marks"`
	Layout     bool   `json:"layout"`
	Format     string `json:"format"`
	Quality    int    `json:"quality"`
	MaxSide    int    `json:"max_side"`
	MaxTokens  int    `json:"max_tokens"`
	Tokenizer  string `json:"tokenizer"`
	View       string `json:"view" jsonschema:"how the page's text is shown: \"axtree\" (the accessibility tree, the default) or \"html\""`
	BrowserGym bool   `json:"browsergym"`
}

// options returns the envcore options, checked; tk loads the budget's
// tokenizer.
func (o *observeSpec) options(tk *tokenizers) (envcore.ObserveOptions, error) {
	if o == nil {
		return envcore.ObserveOptions{}, nil
	}
	opts := envcore.ObserveOptions{Screenshot: o.Screenshot, AXTree: o.AXTree, Geometry: o.Geometry, Marks: o.Marks,
		Layout: o.Layout, Format: o.Format, Quality: o.Quality, MaxSide: o.MaxSide, MaxTokens: o.MaxTokens, Tokenizer: o.Tokenizer, View: o.View,
		BrowserGym: o.BrowserGym}
	if o.Tokenizer != "" && o.MaxTokens == 0 {
		return opts, badArgs("observe.tokenizer counts tokens for a budget: set observe.max_tokens too")
	}
	if o.MaxTokens > 0 {
		tok, err := tk.get(o.Tokenizer)
		if err != nil {
			return opts, err
		}
		opts.Counter = tok
	}
	if err := opts.Validate(); err != nil {
		return opts, badArgs(fmt.Sprintf("observe: %v", err))
	}
	return opts, nil
}

type observeArgs struct {
	Observe *observeSpec `json:"observe"`
}

// episodeOpts are reset's options (and make's): where the episode starts.
type episodeOpts struct {
	Task     string `json:"task"`
	StartURL string `json:"start_url"`
	Goal     string `json:"goal"`
	GroupKey string `json:"group_key"`
	// Attack is this episode's attack, in place of make's.
	Attack *attackArgs `json:"attack"`
}

// EpisodeOptions are the options as the site sees them.
func (o episodeOpts) episode(seed *int64) EpisodeOptions {
	return EpisodeOptions{Task: o.Task, StartURL: o.StartURL, Goal: o.Goal, Seed: seed}
}

type resetArgs struct {
	Seed      *int64      `json:"seed" jsonschema:"seeds the site's task sampler"`
	Options   episodeOpts `json:"options"`
	PreviewMs *Millis     `json:"preview_ms"`
}

type viewportArgs struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

type politenessArgs struct {
	RatePerHost        float64  `json:"rate_per_host"`
	ConcurrencyPerHost int      `json:"concurrency_per_host"`
	MaxRequests        int      `json:"max_requests"`
	UserAgent          string   `json:"user_agent"`
	Robots             bool     `json:"robots"`
	DenySubmit         bool     `json:"deny_submit"`
	SubmitAllow        []string `json:"submit_allow"`
}

// recordArg is make's record: true, or a map of recording settings.
type recordArg struct {
	on          bool
	Dir         string `json:"dir"`
	Screenshots bool   `json:"screenshots"`
}

func (r *recordArg) decodeWire(v any, path string) error {
	switch v := v.(type) {
	case bool:
		r.on = v
		return nil
	case map[string]any:
		r.on = true
		return decodeStruct(derefValue(r), v, path)
	}
	return badArgs(fmt.Sprintf("%s must be true or a map like {screenshots: true, dir: \"run-7\"}, got %s", path, typeName(v)))
}

type makeArgs struct {
	resetArgs
	Site              string          `json:"site" jsonschema:"a site this server hosts (the sites op lists them; over MCP the resources webserv://sites/NAME describe them)"`
	Sites             []string        `json:"sites"`
	TaskSet           string          `json:"task_set"`
	Task              string          `json:"task" jsonschema:"a task id, like \"shopping.0\" (the tasks op lists them)"`
	StartURL          string          `json:"start_url" jsonschema:"the page to start at"`
	Goal              string          `json:"goal" jsonschema:"the goal, for an episode without a task"`
	Allow             []string        `json:"allow"`
	Politeness        *politenessArgs `json:"politeness"`
	IdleMs            Millis          `json:"idle_ms"`
	SettleTimeoutMs   Millis          `json:"settle_timeout_ms"`
	LongRequestMs     Millis          `json:"long_request_ms"`
	ActionTimeoutMs   Millis          `json:"action_timeout_ms"`
	Viewport          *viewportArgs   `json:"viewport"`
	Observe           *observeSpec    `json:"observe"`
	MaxSteps          int             `json:"max_steps"`
	EpisodeTimeoutMs  Millis          `json:"episode_timeout_ms"`
	StepTimeoutMs     Millis          `json:"step_timeout_ms"`
	EvaluateEveryStep bool            `json:"evaluate_every_step"`
	StrictAnswers     bool            `json:"strict_answers"`
	Record            recordArg       `json:"record"`
	StateDiff         bool            `json:"state_diff"`
	SideEffects       string          `json:"side_effects"`
	Approve           bool            `json:"approve"`
	ApproveTimeoutMs  Millis          `json:"approve_timeout_ms"`
	Attack            *attackArgs     `json:"attack" jsonschema:"a prompt injection in every page the environment is served, and its graded goal (docs/attacks.md)"`
	// A dream environment's (site "dream", dream.go).
	WorldModel    *worldModelArgs `json:"world_model"`
	Start         *dreamStartArgs `json:"start"`
	MaxDreamSteps int             `json:"max_dream_steps"`
	Judge         *judgeArgs      `json:"judge"`
}

// worldModelArgs is make's world_model: a memory model's sources, or an
// endpoint (docs/dream.md).
type worldModelArgs struct {
	Memory    []string `json:"memory"`
	AXTree    bool     `json:"axtree"`
	Endpoint  string   `json:"endpoint"`
	Model     string   `json:"model"`
	Format    string   `json:"format"`
	View      string   `json:"view"`
	TimeoutMs Millis   `json:"timeout_ms"`
	Retries   *int     `json:"retries"`
}

// dreamStartArgs is make's start: where a dream starts.
type dreamStartArgs struct {
	Episode string `json:"episode"`
	Step    int    `json:"step"`
	Env     string `json:"env"`
	Task    string `json:"task"`
}

// judgeArgs is make's judge: the endpoint that assesses dreams.
type judgeArgs struct {
	Endpoint  string `json:"endpoint"`
	Model     string `json:"model"`
	TimeoutMs Millis `json:"timeout_ms"`
	Retries   *int   `json:"retries"`
}

type stepArgs struct {
	Action  stepAction   `json:"action"`
	Observe *observeSpec `json:"observe"`
}

// stepAction is step's action, read once where the request is decoded: a
// string is parsed (a string that does not parse is kept with its error,
// which the step reports as the agent's, in the observation), a map is
// decoded strictly into envcore.Action. Approval, the preview, the
// recording, the observers, the health check and envcore read this value.
type stepAction struct {
	given bool
	p     envcore.Parsed
	// err refuses the request: the action is neither a string nor a
	// map, or a map that does not match the action schema.
	err error
	// echo is the action as recorded: the string as sent, the map's
	// action in call form, or what was sent, cut.
	echo string
}

func (a *stepAction) decodeWire(v any, _ string) error {
	a.given = true
	switch v := v.(type) {
	case string:
		a.p, a.echo = envcore.ParseText(v), v
	case map[string]any:
		act, err := actionOf(v)
		a.p, a.err = envcore.Structured(act), err
		a.echo = bounded(fmt.Sprint(v))
		if err == nil {
			a.echo = act.String()
		}
	default:
		a.err = errorf(CodeBadArgs, false, "action must be a string or a map, got %s", typeName(v))
		a.echo = bounded(fmt.Sprint(v))
	}
	return nil // a request error is answered by step, in its turn (stepAction.check)
}

// textAction is a step's action given as a string (the re-run player's).
func textAction(s string) stepAction {
	var a stepAction
	_ = a.decodeWire(s, "step.action")
	return a
}

// builtAction is a step's action made from typed arguments (an MCP tool's).
func builtAction(p envcore.Parsed) stepAction {
	return stepAction{given: true, p: p, echo: p.Echo()}
}

// check is the request's error, if the action refuses it.
func (a *stepAction) check() error {
	if !a.given {
		return errorf(CodeBadArgs, false, `step needs action: a string like click("id") or a map like {type: "click", target: "id"}`)
	}
	return a.err
}

// terminates reports whether the action ends the episode (stop, report
// infeasible), read without running it.
func (a *stepAction) terminates() bool {
	return a.given && a.err == nil && a.p.Terminates()
}

// actions are the step's actions in structured form, in the order they
// run (several for a multi-action string), if they parsed.
func (a *stepAction) actions() ([]envcore.Action, bool) {
	return a.p.Actions(), a.given && a.err == nil && a.p.OK()
}

type snapshotArgs struct {
	Name string `json:"name" jsonschema:"the snapshot's name (letters, digits, - and _)"`
}

type forkArgs struct {
	N    int    `json:"n" jsonschema:"how many new environments (MCP's fork tool makes 1 when n is not given)"`
	Name string `json:"name" jsonschema:"the snapshot to fork (a new one is taken when name is not given)"`
}
