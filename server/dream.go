package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/trajectory"
)

// DreamSite is the site name of dream environments: make {site: "dream",
// world_model: ..., start: ...} makes an environment whose dynamics come
// from a world model (package dream) instead of a browser. Its session
// holds a *dream.Env in place of an *envcore.Env and a site instance, and
// reset, step and observe delegate to it (docs/dream.md).
const DreamSite = "dream"

// dreamSiteInfo is the dream site in the sites op.
var dreamSiteInfo = SiteInfo{Name: DreamSite, Backend: "none",
	Description: "a world model's dreams: make with world_model ({memory: [...]} or {endpoint: URL}) and start ({episode, step}, {env} or {task}); docs/dream.md"}

// dreamKeys are the make arguments a dream takes; the dream-only ones
// (world_model, start, max_dream_steps, judge) are refused elsewhere.
var dreamKeys = []string{"site", "task", "task_set", "goal", "world_model", "start", "max_dream_steps", "judge", "observe", "seed", "options"}

// dreamOnly are the make arguments only a dream takes.
var dreamOnly = []string{"world_model", "start", "max_dream_steps", "judge"}

// checkDreamKeys refuses make arguments that do not fit the site: a
// browser's or a site's settings on a dream, a dream's on any other site.
func checkDreamKeys(a *makeArgs) error {
	v := reflect.ValueOf(a).Elem()
	dreaming := a.Site == DreamSite
	for _, f := range fieldsOf(v.Type()) {
		if v.FieldByIndex(f.index).IsZero() {
			continue
		}
		switch {
		case dreaming && !slices.Contains(dreamKeys, f.name):
			return badArgs(fmt.Sprintf("make.%s does not apply to a dream environment, which has no browser or site (its arguments are %s)", f.name, strings.Join(dreamKeys, ", ")))
		case !dreaming && slices.Contains(dreamOnly, f.name):
			return badArgs(fmt.Sprintf("make.%s is a dream environment's argument: give site %q with it", f.name, DreamSite))
		}
	}
	if dreaming && a.Options.GroupKey != "" {
		return badArgs("make.options.group_key does not apply to a dream environment")
	}
	if dreaming {
		return dreamObserve(a.Observe, "make")
	}
	return nil
}

// dreamObserve refuses the observation parts a dream cannot give.
func dreamObserve(o *observeSpec, op string) error {
	if o == nil {
		return nil
	}
	if o.Screenshot || o.Marks || o.Geometry || o.Layout || o.MaxTokens > 0 || o.BrowserGym {
		return badArgs(op + ".observe: a dream environment has the recorded text views only (html, axtree): no screenshot, marks, geometry, layout, max_tokens or browsergym")
	}
	if _, err := o.options(nil); err != nil {
		return err
	}
	return nil
}

// makeDream makes a dream environment and starts its first episode.
func (s *Server) makeDream(ctx context.Context, c call, a *makeArgs) (*EpisodeReply, error) {
	if err := checkDreamKeys(a); err != nil {
		return nil, err
	}
	if a.WorldModel == nil {
		return nil, badArgs(`make with site "dream" needs world_model: {memory: [recorded episodes or transitions files]} or {endpoint: "http://host:port/v1", model: "name"} (docs/dream.md)`)
	}
	model, err := s.worldModel(a.WorldModel)
	if err != nil {
		return nil, err
	}
	var judge *dream.Judge
	if j := a.Judge; j != nil {
		if j.Endpoint == "" {
			return nil, badArgs("make.judge needs endpoint, an OpenAI-compatible base URL like http://127.0.0.1:8000/v1")
		}
		judge = &dream.Judge{Chat: chatOf(j.Endpoint, j.Model, j.TimeoutMs, j.Retries), View: model.View()}
	}
	de, err := dream.New(dream.Config{Model: model, MaxSteps: a.MaxDreamSteps, Judge: judge})
	if err != nil {
		return nil, badArgs("make." + err.Error())
	}
	x, err := s.reserve(c.conn)
	if err != nil {
		return nil, err
	}
	d := &dreamEngine{env: de, start: a.Start, judge: judge}
	x.site, x.engine = DreamSite, d
	x.spec = MakeSpec{Site: DreamSite, Task: a.Task, TaskSet: a.TaskSet, Goal: a.Goal}
	res, err := d.reset(ctx, s, x, &a.resetArgs, CauseMake)
	if err != nil {
		s.closeSession(x, "make failed: "+err.Error())
		return nil, err
	}
	go x.work()
	s.log.Info("dream environment made", zap.String("env", x.id), zap.String("model", model.Name()))
	return res, nil
}

// worldModel is make's world_model: a memory model (shared by every
// dream made from the same sources) or an endpoint.
func (s *Server) worldModel(w *worldModelArgs) (dream.Model, error) {
	switch {
	case len(w.Memory) > 0 && w.Endpoint != "":
		return nil, badArgs("make.world_model: give memory or endpoint, not both")
	case len(w.Memory) > 0:
		if w.Format != "" || w.Model != "" || w.TimeoutMs != 0 || w.Retries != nil || w.View != "" {
			return nil, badArgs("make.world_model: format, model, view, timeout_ms and retries are an endpoint's; the memory model takes memory and axtree")
		}
		paths := make([]string, len(w.Memory))
		for i, p := range w.Memory {
			var err error
			if paths[i], err = s.dreamPath("world_model.memory", p); err != nil {
				return nil, err
			}
		}
		return s.dreams.memory(paths, dream.MemoryOptions{AXTree: w.AXTree})
	case w.Endpoint != "":
		if w.AXTree {
			return nil, badArgs(`make.world_model.axtree is the memory model's; an endpoint takes view: "axtree" or "html"`)
		}
		m, err := dream.NewEndpoint(chatOf(w.Endpoint, w.Model, w.TimeoutMs, w.Retries), w.Format, w.View)
		if err != nil {
			return nil, badArgs("make.world_model: " + err.Error())
		}
		return m, nil
	}
	return nil, badArgs("make.world_model needs memory (recorded episodes or transitions files) or endpoint (an OpenAI-compatible base URL)")
}

func chatOf(endpoint, model string, timeout Millis, retries *int) dream.Chat {
	c := dream.Chat{BaseURL: endpoint, Model: model, Timeout: timeout.D(), Retries: 2, HTTP: dreamHTTP}
	if retries != nil {
		c.Retries = *retries
	}
	return c
}

// dreamHTTP reaches world model and judge endpoints (each request has its
// own time limit, dream.Chat.Timeout).
var dreamHTTP = &http.Client{}

// dreamPath resolves a file a dream reads (a memory model's source, a
// start episode) under the server's trajectory directory: a client names
// what the server recorded, or what was put there, and nothing else.
func (s *Server) dreamPath(what, p string) (string, error) {
	if s.cfg.TrajectoryDir == "" {
		return "", errorf(CodeNotSupported, false, "make.%s: dream files are read from the server's trajectory directory, and this server has none: start it with --trajectories DIR", what)
	}
	root, err := filepath.Abs(s.cfg.TrajectoryDir)
	if err != nil {
		return "", errorf(CodeInternal, false, "%v", err)
	}
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(root, p)
	}
	full = filepath.Clean(full)
	if rel, err := filepath.Rel(root, full); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", badArgs(fmt.Sprintf("make.%s %q is outside the server's trajectory directory: give a path relative to it (%s)", what, p, root))
	}
	if _, err := os.Stat(full); err != nil {
		return "", badArgs(fmt.Sprintf("make.%s %q: %v", what, p, err))
	}
	return full, nil
}

// dreamEngine is a dream environment's engine: its world-model episode
// in place of a browser and a site instance, where it starts, and its
// judge.
type dreamEngine struct {
	env   *dream.Env
	start *dreamStartArgs
	judge *dream.Judge
	// answer is how the task's grader graded the last step's answer.
	answer *tasks.AnswerGrade
}

// reset starts a dream episode: from make's start, or from the reset's
// options (task, goal).
func (d *dreamEngine) reset(ctx context.Context, s *Server, x *session, a *resetArgs, cause string) (*EpisodeReply, error) {
	if a.Options.GroupKey != "" {
		return nil, badArgs("reset.options.group_key does not apply to a dream environment")
	}
	if a.PreviewMs != nil {
		return nil, badArgs("reset.preview_ms does not apply to a dream environment, which has no page to outline targets on")
	}
	if a.Options.StartURL != "" {
		return nil, badArgs("reset.options.start_url does not apply to a dream environment: it starts from a real observation (make's start, or options.task)")
	}
	start := d.start
	task := x.spec.Task
	if a.Options.Task != "" {
		start, task = nil, a.Options.Task
	}
	obs, ep, err := s.dreamStartObs(ctx, d.env.Model(), start, task)
	if err != nil {
		return nil, err
	}
	if task != "" {
		ep.TaskID = task // make's task grades a dream started elsewhere too
	}
	if g := a.Options.Goal; g != "" {
		ep.Goal = g
	} else if x.spec.Goal != "" {
		ep.Goal = x.spec.Goal
	}
	obs.Goal = ep.Goal
	grade, gradeNote := s.dreamGrader(ep.TaskID, d.judge, func(a *tasks.AnswerGrade) { d.answer = a })
	d.env.SetGrader(grade, gradeNote)
	first := d.env.Reset(obs)
	x.episode, x.started, x.steps, x.over, x.failed, x.grade = ep, time.Now(), 0, "", nil, 0
	info := StepInfo{Cause: cause, Site: DreamSite, TaskID: ep.TaskID,
		Info: &dream.Info{Dreamed: true, Model: d.env.Model().Name(), MaxDreamSteps: d.env.MaxSteps(), RewardNote: gradeNote}}
	return &EpisodeReply{Env: x.id, Obs: first, Info: info}, nil
}

// dreamStartObs is the real observation a dream starts from, and the
// episode it belongs to (its goal and task): a recorded episode's step,
// a live environment's current observation, or a task's first
// observation (recorded, else observed once by a real environment).
func (s *Server) dreamStartObs(ctx context.Context, model dream.Model, st *dreamStartArgs, task string) (trajectory.Observation, Episode, error) {
	switch {
	case st != nil && st.Episode != "":
		if st.Env != "" || st.Task != "" {
			return trajectory.Observation{}, Episode{}, badArgs("make.start: give one of episode (with step), env or task")
		}
		path, err := s.dreamPath("start.episode", st.Episode)
		if err != nil {
			return trajectory.Observation{}, Episode{}, err
		}
		ep, err := trajectory.Read(path)
		if err != nil {
			return trajectory.Observation{}, Episode{}, badArgs(fmt.Sprintf("make.start.episode: %v", err))
		}
		if ep.Reset == nil || ep.Reset.Obs == nil {
			return trajectory.Observation{}, Episode{}, badArgs(fmt.Sprintf("make.start.episode %s has no first observation", st.Episode))
		}
		obs := ep.Reset.Obs
		if st.Step < 0 || st.Step > len(ep.Steps) {
			return trajectory.Observation{}, Episode{}, badArgs(fmt.Sprintf("make.start.step %d: episode %s has steps 1..%d (0: its first observation)", st.Step, st.Episode, len(ep.Steps)))
		}
		if st.Step > 0 {
			if obs = ep.Steps[st.Step-1].Obs; obs == nil {
				return trajectory.Observation{}, Episode{}, badArgs(fmt.Sprintf("make.start.step %d of %s has no observation recorded", st.Step, st.Episode))
			}
		}
		return *obs, Episode{Goal: ep.Head.Goal, TaskID: ep.Head.TaskID}, nil
	case st != nil && st.Env != "":
		if st.Task != "" || st.Step != 0 {
			return trajectory.Observation{}, Episode{}, badArgs("make.start: give one of episode (with step), env or task")
		}
		return s.liveStart(ctx, st.Env)
	case st != nil && st.Task != "":
		if st.Step != 0 {
			return trajectory.Observation{}, Episode{}, badArgs("make.start.step goes with start.episode")
		}
		task = st.Task
	case st != nil && st.Step != 0:
		return trajectory.Observation{}, Episode{}, badArgs("make.start.step goes with start.episode")
	}
	if task == "" {
		return trajectory.Observation{}, Episode{}, badArgs(`a dream starts from a real observation: give make.start {episode: path, step: n}, {env: id} or {task: id}, or make.task`)
	}
	if m, ok := model.(*dream.Memory); ok {
		if obs, ok := m.Start(task); ok {
			return obs, Episode{Goal: obs.Goal, TaskID: task}, nil
		}
	}
	return s.dreams.observed(ctx, s, task)
}

// liveStart is a live environment's current observation and episode:
// its observe op (through submit, admitted and counted, on its worker),
// and its episode read in the same job.
func (s *Server) liveStart(ctx context.Context, id string) (trajectory.Observation, Episode, error) {
	y, err := s.session(id)
	if err != nil {
		return trajectory.Observation{}, Episode{}, err
	}
	var ep Episode
	req := typedOp("observe", call{x: y}, &observeArgs{Observe: &observeSpec{AXTree: true}})
	req.ctx = ctx
	req.then = func(x *session) { ep = x.episode }
	r, err := opResult[*ObserveReply](s, req)
	if err != nil {
		return trajectory.Observation{}, Episode{}, fmt.Errorf("make.start.env: observing environment %s: %w", id, err)
	}
	return r.Obs, Episode{Goal: ep.Goal, TaskID: ep.TaskID}, nil
}

// step takes one dreamed step.
func (d *dreamEngine) step(ctx context.Context, _ *Server, x *session, a *stepArgs) (*StepReply, error) {
	if x.over != "" {
		return nil, errorf(CodeEpisodeOver, false, "the episode is over (%s): call reset to start a new one", x.over)
	}
	if err := dreamObserve(a.Observe, "step"); err != nil {
		return nil, err
	}
	if err := a.Action.check(); err != nil {
		return nil, err
	}
	act := dream.Action{Text: a.Action.p.Text, Refused: a.Action.p.Err}
	switch acts := a.Action.p.Actions(); {
	case !a.Action.p.OK():
	case len(acts) > 1:
		act.Refused = dream.SeveralActions(len(acts))
	default:
		act.Decoded = &acts[0]
	}
	d.answer = nil
	st, err := d.env.Step(ctx, act)
	if err != nil {
		if dream.IsModelError(err) {
			return nil, errorf(CodeBackend, true, "%v; the step was not taken and the dream goes on: retry it, or fix the world model", err)
		}
		return nil, errorf(CodeInternal, false, "%v", err)
	}
	x.steps++
	x.over = d.env.Over()
	info := StepInfo{Step: st.Count, ElapsedS: time.Since(x.started).Seconds(), Site: DreamSite, TaskID: x.episode.TaskID,
		ActionError: st.ActionError, ActionErrorCode: st.ActionErrorCode, EvalError: st.Info.NotGraded(),
		EndReason: st.Info.DreamEnd, // the same names as a real episode's (endreason.go)
		Info:      &st.Info}
	if st.Stop != nil {
		info.Stopped = &Stopped{Answer: st.Stop.Answer, Infeasible: st.Stop.Infeasible}
	}
	if st.Info.RewardSource == dream.RewardTask {
		info.Graded = &Graded{Grade: st.Reward}
		info.Grader = graderInfo(d.answer)
	}
	if st.Terminated && x.episode.TaskID != "" {
		// As a real task's ending step says it: none listed is not clean.
		info.SideEffectsNote = "side effects not looked for: a dream has no site state (its world model predicts observations only)"
	}
	return &StepReply{Obs: st.Obs, Reward: dreamReward(st.Reward), Terminated: st.Terminated, Truncated: st.Truncated, Info: info}, nil
}

// observe is the dream's current observation.
func (d *dreamEngine) observe(_ context.Context, s *Server, _ *session, a *observeArgs) (*ObserveReply, error) {
	if _, err := a.Observe.options(s.tokens); err != nil {
		return nil, err
	}
	if err := dreamObserve(a.Observe, "observe"); err != nil {
		return nil, err
	}
	return &ObserveReply{Obs: d.env.Obs()}, nil
}

// site refuses op: a dream has no site.
func (d *dreamEngine) site(_ *session, op, hint string) (Instance, error) {
	if hint != "" {
		hint = ": " + hint
	}
	return nil, errorf(CodeNotSupported, false, "%s is not supported by a dream environment, which has no site%s", op, hint)
}

// dreamModels caches the memory models dreams are made with, by their
// sources, so that a batch of dreams loads its table once. A source
// that changed since (size or time) is loaded again.
type dreamModels struct {
	mu       sync.Mutex
	memories map[string]*dream.Memory
	starts   map[string]dreamObserved // task id -> first observation, observed by a real environment
}

type dreamObserved struct {
	obs trajectory.Observation
	ep  Episode
}

func (d *dreamModels) memory(paths []string, opts dream.MemoryOptions) (*dream.Memory, error) {
	key := fmt.Sprint(opts.AXTree)
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, badArgs(fmt.Sprintf("make.world_model.memory: %v", err))
		}
		key += fmt.Sprintf("\x00%s\x00%d\x00%d", p, st.Size(), st.ModTime().UnixNano())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.memories[key]; ok {
		return m, nil
	}
	m, err := dream.LoadMemory(paths, opts)
	if err != nil {
		return nil, badArgs(fmt.Sprintf("make.world_model.memory: %v", err))
	}
	if d.memories == nil {
		d.memories = map[string]*dream.Memory{}
	}
	d.memories[key] = m
	return m, nil
}

// observed is a task's first observation as a real environment sees it:
// observed once per server (a real environment is made on the task's
// site, observed and closed), then remembered.
func (d *dreamModels) observed(ctx context.Context, s *Server, task string) (trajectory.Observation, Episode, error) {
	d.mu.Lock()
	got, ok := d.starts[task]
	d.mu.Unlock()
	if ok {
		return got.obs, got.ep, nil
	}
	site := TaskSite(task)
	if site == "" {
		return trajectory.Observation{}, Episode{}, badArgs(fmt.Sprintf("task %q: a task id is SITE.N (like shopping.17)", task))
	}
	r, err := runOp[*EpisodeReply](ctx, s, "make", call{}, &makeArgs{Site: site, Task: task, Observe: &observeSpec{AXTree: true}})
	if err != nil {
		return trajectory.Observation{}, Episode{}, fmt.Errorf("observing task %s's first page in a real environment: %w", task, err)
	}
	if y, err := s.session(r.Env); err == nil {
		s.closeSession(y, "a dream's start was observed")
	}
	ep := Episode{Goal: r.Obs.Goal, TaskID: r.Info.TaskID}
	d.mu.Lock()
	if d.starts == nil {
		d.starts = map[string]dreamObserved{}
	}
	d.starts[task] = dreamObserved{obs: r.Obs, ep: ep}
	d.mu.Unlock()
	return r.Obs, ep, nil
}

// TaskSite is the site of a task id: SITE.N, or PREFIX.SITE.N.
func TaskSite(id string) string {
	parts := strings.Split(id, ".")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2]
}
