package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
)

// handle runs one request. x is the request's environment for the ops
// that name one (and then this runs on its worker).
func (s *Server) handle(ctx context.Context, req Request, x *session) (any, *Error) {
	a := args(req.Args)
	if a == nil {
		a = args{}
	}
	if e := x.startFailed(req.Op); e != nil {
		return nil, e
	}
	switch req.Op {
	case "sites":
		return map[string]any{"sites": s.factory.Sites()}, nil
	case "tasks":
		site, e := a.str("site")
		if e != nil {
			return nil, e
		}
		tasks, err := s.factory.Tasks(site)
		if err != nil {
			return nil, errorf(CodeBadArgs, false, "%v", err)
		}
		return map[string]any{"tasks": tasks}, nil
	case "stats":
		return s.stats(), nil
	case "make":
		return s.makeEnv(ctx, a)
	case "reset":
		return s.startEpisode(ctx, x, a, CauseReset)
	case "step":
		return s.step(ctx, x, a)
	case "observe":
		opts, e := observeOptions(a)
		if e != nil {
			return nil, e
		}
		obs, err := x.env.Observe(ctx, opts)
		if err != nil {
			return nil, envError(err)
		}
		return map[string]any{"obs": wireObs(obs, x)}, nil
	case "close":
		s.closeSession(x, "closed by the client")
		return map[string]any{"closed": true}, nil
	case "snapshot", "restore", "fork":
		sn, ok := x.inst.(Snapshotter)
		if !ok {
			return nil, errorf(CodeNotSupported, false, "%s is not supported by the %s site's backend; it needs a hosting backend with snapshots (local or incus)", req.Op, x.site)
		}
		switch req.Op {
		case "snapshot":
			return s.snapshot(ctx, x, sn, a)
		case "restore":
			return s.restore(ctx, x, sn, a)
		default:
			return s.fork(ctx, x, sn, a)
		}
	}
	return nil, errorf(CodeUnknownOp, false, "unknown op %q; ops are hello, sites, tasks, make, reset, step, observe, close, stats, snapshot, restore, fork", req.Op)
}

// makeEnv creates an environment and starts its first episode, so the
// reply carries the first observation.
func (s *Server) makeEnv(ctx context.Context, a args) (any, *Error) {
	spec := MakeSpec{Site: "open"}
	var e *Error
	if v, e2 := a.str("site"); e2 != nil {
		return nil, e2
	} else if v != "" {
		spec.Site = v
	}
	if names, e := a.strs("sites"); e != nil {
		return nil, e
	} else if len(names) > 0 {
		spec.Site = strings.Join(names, multiSep)
	}
	if spec.TaskSet, e = a.str("task_set"); e != nil {
		return nil, e
	}
	if spec.Task, e = a.str("task"); e != nil {
		return nil, e
	}
	if spec.StartURL, e = a.str("start_url"); e != nil {
		return nil, e
	}
	if spec.Goal, e = a.str("goal"); e != nil {
		return nil, e
	}
	if spec.Allow, e = a.strs("allow"); e != nil {
		return nil, e
	}
	if spec.Politeness, e = politeness(a); e != nil {
		return nil, e
	}
	cfg, e := s.envConfig(a)
	if e != nil {
		return nil, e
	}
	maxSteps, _, e := a.num("max_steps")
	if e != nil {
		return nil, e
	}
	timeLimit, e := a.ms("episode_timeout_ms")
	if e != nil {
		return nil, e
	}
	stepLimit, e := a.ms("step_timeout_ms")
	if e != nil {
		return nil, e
	}
	everyStep, e := a.boolean("evaluate_every_step")
	if e != nil {
		return nil, e
	}
	// record: true, or a map of recording settings.
	var record args
	switch v := a["record"].(type) {
	case nil:
	case bool:
		if v {
			record = args{}
		}
	case map[string]any:
		record = v
	default:
		return nil, errorf(CodeBadArgs, false, "record must be true or a map like {screenshots: true}, got %T", v)
	}
	if !s.browser.Alive() {
		return nil, errorf(CodeBackend, false, "%v", errNoBrowser)
	}

	release, e := s.awaitCreating(ctx)
	if e != nil {
		return nil, e
	}
	defer release()
	x, e := s.reserve(ctx)
	if e != nil {
		return nil, e
	}
	l := limits{maxSteps: int(maxSteps), timeLimit: timeLimit, stepLimit: stepLimit, everyStep: everyStep}
	if e := s.liveOptions(a, &l); e != nil {
		s.drop(x)
		return nil, e
	}
	if record != nil {
		if l.record, e = s.recordSpec(record); e != nil {
			s.drop(x)
			return nil, e
		}
	}
	if e := s.open(x, spec.Site, spec, cfg, l); e != nil {
		s.closeSession(x, "make failed: "+e.Message)
		return nil, e
	}
	// A member of a group that already has its start state gets a fork of
	// it in place of a site instance of its own: no instance is started.
	if o, _ := a.sub("options"); o != nil {
		if key, _ := o.str("group_key"); key != "" {
			x.joined, x.leads = s.joinGroup(groupKey(x, key, episodeOptions(o)))
		}
	}
	if x.joined == nil || x.leads || !x.joined.forkable() {
		inst, err := s.factory.Make(ctx, spec)
		if err != nil {
			s.closeSession(x, "make failed: "+err.Error())
			return nil, instanceError(err)
		}
		x.inst = inst
	}
	res, e := s.startEpisode(ctx, x, a, CauseMake)
	if e != nil {
		s.closeSession(x, "make failed: "+e.Message)
		return nil, e
	}
	go x.work()
	s.log.Info("environment made", zap.String("env", x.id), zap.String("site", spec.Site))
	return res, nil
}

// envConfig reads make's per-environment settings over the server defaults.
func (s *Server) envConfig(a args) (envcore.Config, *Error) {
	cfg := s.cfg.Env
	var e *Error
	set := func(key string, d *time.Duration) {
		if e != nil {
			return
		}
		v, err := a.ms(key)
		if err != nil {
			e = err
			return
		}
		if v > 0 {
			*d = v
		}
	}
	set("idle_ms", &cfg.IdleWindow)
	set("settle_timeout_ms", &cfg.SettleTimeout)
	set("long_request_ms", &cfg.LongRequest)
	set("action_timeout_ms", &cfg.ActionTimeout)
	if e != nil {
		return cfg, e
	}
	vp, e := a.sub("viewport")
	if e != nil {
		return cfg, e
	}
	w, _, e1 := vp.num("width")
	h, _, e2 := vp.num("height")
	if e1 != nil || e2 != nil {
		return cfg, errorf(CodeBadArgs, false, "viewport needs numeric width and height")
	}
	if w > 0 && h > 0 {
		cfg.Viewport = envcore.Viewport{Width: int(w), Height: int(h)}
	}
	if cfg.Observe, e = observeOptions(a); e != nil {
		return cfg, e
	}
	return cfg, nil
}

// politeness reads make's politeness option: {rate_per_host,
// concurrency_per_host, max_requests, user_agent, robots}.
func politeness(a args) (netroute.Policy, *Error) {
	var p netroute.Policy
	o, e := a.sub("politeness")
	if e != nil || o == nil {
		return p, e
	}
	for k := range o {
		switch k {
		case "rate_per_host", "concurrency_per_host", "max_requests", "user_agent", "robots":
		default:
			return p, errorf(CodeBadArgs, false, "politeness.%s: unknown; the settings are rate_per_host, concurrency_per_host, max_requests, user_agent and robots", k)
		}
	}
	rate, _, e1 := o.num("rate_per_host")
	conc, _, e2 := o.num("concurrency_per_host")
	max, _, e3 := o.num("max_requests")
	ua, e4 := o.str("user_agent")
	robots, e5 := o.boolean("robots")
	for _, e := range []*Error{e1, e2, e3, e4, e5} {
		if e != nil {
			return p, e
		}
	}
	if rate < 0 || conc < 0 || max < 0 {
		return p, errorf(CodeBadArgs, false, "politeness: rate_per_host, concurrency_per_host and max_requests must be 0 (no limit) or more")
	}
	return netroute.Policy{RatePerHost: rate, ConcurrencyPerHost: int(conc), MaxRequests: int(max), UserAgent: ua, Robots: robots}, nil
}

// observeNothing asks for no optional observation parts.
var observeNothing = envcore.ObserveOptions{}

func observeOptions(a args) (envcore.ObserveOptions, *Error) {
	o, e := a.sub("observe")
	if e != nil {
		return envcore.ObserveOptions{}, e
	}
	var opts envcore.ObserveOptions
	for key, field := range map[string]*bool{
		"screenshot": &opts.Screenshot, "axtree": &opts.AXTree, "geometry": &opts.Geometry,
		"marks": &opts.Marks, "layout": &opts.Layout,
	} {
		if *field, e = o.boolean(key); e != nil {
			return opts, e
		}
	}
	if opts.Format, e = o.str("format"); e != nil {
		return opts, e
	}
	for key, field := range map[string]*int{"quality": &opts.Quality, "max_side": &opts.MaxSide} {
		n, _, e := o.num(key)
		if e != nil {
			return opts, e
		}
		*field = int(n)
	}
	for key := range o {
		switch key {
		case "screenshot", "axtree", "geometry", "marks", "layout", "format", "quality", "max_side":
		default:
			return opts, errorf(CodeBadArgs, false, "observe has no option %q; options are screenshot, axtree, geometry, marks, layout, format, quality, max_side", key)
		}
	}
	if err := opts.Validate(); err != nil {
		return opts, errorf(CodeBadArgs, false, "observe: %v", err)
	}
	return opts, nil
}

// startEpisode reads a reset's options and starts the episode, alone or as
// a member of a group (options.group_key).
func (s *Server) startEpisode(ctx context.Context, x *session, a args, cause string) (*EpisodeReply, *Error) {
	var opts EpisodeOptions
	if e := s.previewOption(a, &x.limits); e != nil {
		return nil, e
	}
	o, e := a.sub("options")
	if e != nil {
		return nil, e
	}
	if opts.Task, e = o.str("task"); e != nil {
		return nil, e
	}
	if opts.StartURL, e = o.str("start_url"); e != nil {
		return nil, e
	}
	if opts.Goal, e = o.str("goal"); e != nil {
		return nil, e
	}
	if seed, ok, e := a.num("seed"); e != nil {
		return nil, e
	} else if ok {
		v := int64(seed)
		opts.Seed = &v
	}
	key, e := o.str("group_key")
	if e != nil {
		return nil, e
	}
	if key != "" {
		return s.groupEpisode(ctx, x, key, opts, cause)
	}
	return s.episode(ctx, x, opts, cause)
}

// episode asks the site for a new episode and resets the browser to its
// start.
func (s *Server) episode(ctx context.Context, x *session, opts EpisodeOptions, cause string) (*EpisodeReply, *Error) {
	if g := x.lending.Swap(nil); g != nil {
		g.lent() // the group's members may still fork this instance's snapshot
	}
	if x.inst == nil {
		// A group member made without an instance of its own, whose
		// group had none to share or whose fork failed.
		inst, err := s.factory.Make(ctx, x.spec)
		if err != nil {
			return nil, instanceError(err)
		}
		x.inst = inst
	}
	ep, err := x.inst.Episode(ctx, opts)
	if err != nil {
		return nil, instanceError(err)
	}
	return s.start(ctx, x, cause, x.inst, ep, x.resetTo(ep))
}

func (s *Server) step(ctx context.Context, x *session, a args) (any, *Error) {
	if x.over != "" {
		return nil, errorf(CodeEpisodeOver, false, "the episode is over (%s): call reset to start a new one", x.over)
	}
	opts, e := observeOptions(a)
	if e != nil {
		return nil, e
	}
	if a["observe"] == nil {
		opts = x.env.Config().Observe
	}
	if r := x.limits.record; r != nil {
		opts.AXTree = true
		opts.Screenshot = opts.Screenshot || r.screenshots
	}
	action := a["action"]
	review, target, e := s.vet(ctx, x, action) // preview_ms, approve (live.go)
	if e != nil {
		return nil, e
	}
	began := time.Now()
	if rejected(review) {
		action = noAction
	}
	var obs envcore.Observation
	var info envcore.StepInfo
	var err error
	switch act := action.(type) {
	case string:
		obs, info, err = x.env.StepTextObserve(ctx, act, opts)
	case map[string]any:
		var action envcore.Action
		raw, _ := json.Marshal(act)
		if jerr := json.Unmarshal(raw, &action); jerr != nil {
			return nil, errorf(CodeBadArgs, false, "action map does not match the action schema (type, target, text, key, url, options, enter, tab, answer, wait_ms, x, y, to_x, to_y, delta_x, delta_y, button): %v", jerr)
		}
		obs, info, err = x.env.StepObserve(ctx, action, opts)
	case nil:
		return nil, errorf(CodeBadArgs, false, `step needs action: a string like click("id") or a map like {type: "click", target: "id"}`)
	default:
		return nil, errorf(CodeBadArgs, false, "action must be a string or a map, got %T", act)
	}
	if err != nil {
		return nil, envError(err)
	}
	if rejected(review) {
		refuse(&obs, &info, actionText(a["action"]), review)
	}
	x.steps++
	s.stepsTotal.Add(1)
	s.metrics.steps.Inc()
	s.metrics.stepTime.Observe((info.Action + info.Settle + info.Extract).Seconds())
	if !info.Settled {
		s.metrics.notSettled.Inc()
	}
	var reward any = 0.0
	terminated := info.Terminated
	var evalErr string
	var scores map[string]float64
	var grading any
	if ev := x.episode.Evaluate; ev != nil {
		res, err := ev(ctx, x.env, x.net.Client(), info, x.limits.everyStep, x.trace)
		switch {
		case err != nil:
			// Not a silent 0: the reward is missing and the reply says why.
			reward, evalErr = nil, err.Error()
			s.log.Warn("grading failed", zap.String("env", x.id), zap.String("task", x.episode.TaskID), zap.Error(err))
		case res != nil:
			reward, scores, grading = res.Reward, res.Scores, res.Grading
		}
	}
	truncated := false
	if !terminated {
		l := x.limits
		if l.maxSteps > 0 && x.steps >= l.maxSteps {
			truncated = true
		}
		if l.timeLimit > 0 && time.Since(x.started) >= l.timeLimit {
			truncated = true
		}
		if l.stepLimit > 0 && info.Action+info.Settle+info.Extract > l.stepLimit {
			truncated = true // a step past its deadline ends the episode
		}
	}
	switch {
	case terminated:
		x.over = "terminated"
	case truncated:
		x.over = "truncated"
	}
	wi := wireInfo(info, x)
	wi["obs_stats"] = obs.Stats
	reportRefusals(x, &obs, wi)
	if evalErr != "" {
		wi["eval_error"] = evalErr
	}
	if scores != nil {
		wi["scores"] = scores
	}
	if grading != nil {
		wi["grading"] = grading
	}
	if review != nil {
		wi["review"] = review
	}
	if target != nil {
		wi["target_box"] = target
	}
	res := &StepReply{Obs: wireObs(obs, x), Reward: reward, Terminated: terminated, Truncated: truncated, Info: wi}
	s.notify(func(o Observer) {
		o.Stepped(StepEvent{Env: x.id, Step: x.steps, Action: actionText(a["action"]), Reply: res, Time: time.Now(), Began: began, Review: review})
	})
	return res, nil
}

// actionText is an action as recorded: its string form.
func actionText(v any) string {
	switch a := v.(type) {
	case string:
		return a
	case map[string]any:
		var act envcore.Action
		raw, _ := json.Marshal(a)
		if json.Unmarshal(raw, &act) == nil {
			return act.String()
		}
	}
	return fmt.Sprint(v)
}

func wireObs(obs envcore.Observation, x *session) Observation {
	return Observation{Observation: obs, Goal: x.episode.Goal}
}

func wireInfo(info envcore.StepInfo, x *session) map[string]any {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	m := map[string]any{
		"action_ms": ms(info.Action), "settle_ms": ms(info.Settle), "extract_ms": ms(info.Extract),
		"settled": info.Settled, "attempts": info.Attempts, "step": x.steps,
		"elapsed_s": time.Since(x.started).Seconds(), "site": x.site,
	}
	if info.SettleReason != "" {
		m["settle_reason"] = info.SettleReason
	}
	if info.SettleError != "" {
		m["settle_error"] = info.SettleError
	}
	if len(info.Pending) > 0 {
		m["pending"] = info.Pending
	}
	if info.ActionError != "" {
		m["action_error"], m["action_error_code"] = info.ActionError, info.ActionErrorCode
	}
	if info.Terminated {
		m["answer"], m["infeasible"] = info.Answer, info.Infeasible
	}
	if x.episode.TaskID != "" {
		m["task_id"] = x.episode.TaskID
		m["task_set"], m["variant"] = x.episode.TaskSet, x.episode.Variant
	}
	return m
}

// envError maps an envcore error to a reply error.
func envError(err error) *Error {
	switch {
	case errors.Is(err, envcore.ErrTerminated):
		return errorf(CodeEpisodeOver, false, "%v", err)
	case errors.Is(err, envcore.ErrClosed):
		return errorf(CodeUnknownEnv, false, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(CodeTimeout, true, "the request ran past its deadline: %v", err)
	}
	return errorf(CodeBackend, true, "%s", fmt.Sprint(err))
}
