package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
)

// OpenEnv compatibility: /openenv/ws speaks the WebSocket protocol of
// OpenEnv's environment servers (read from openenv-core 0.3.0), so an
// OpenEnv client pointed at http://HOST:PORT/openenv runs unchanged. JSON
// text frames, one request and one reply at a time:
//
//	{"type": "reset", "data": {site, start_url, goal, task, seed, group_key}}
//	{"type": "step",  "data": {"action": "click(\"buy\")"} or a structured action}
//	{"type": "state"}
//	{"type": "close"}
//
// Replies are {"type": "observation", "data": {"observation": {...},
// "reward": r, "done": d}}, {"type": "state", "data": {...}} or
// {"type": "error", "data": {"message", "code"}}. Like an OpenEnv session,
// the environment belongs to the connection: it is made by the first reset
// and closed when the connection ends. Query parameters of the URL (site,
// start_url, goal, token) are defaults for reset.

type openEnvMessage struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data,omitempty"`
}

func (s *Server) serveOpenEnv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !s.authorized(q.Get("token")) {
		http.Error(w, "this server needs a token: add ?token=... to the URL", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	c.SetReadLimit(s.cfg.MaxFrame)
	defaults := map[string]any{}
	for _, k := range []string{"site", "start_url", "goal"} {
		if v := q.Get(k); v != "" {
			defaults[k] = v
		}
	}
	var x *session
	defer func() {
		if x != nil {
			s.closeSession(x, "openenv connection ended")
		}
		_ = c.CloseNow()
	}()
	ctx := r.Context()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var msg openEnvMessage
		if typ != websocket.MessageText || json.Unmarshal(data, &msg) != nil {
			s.openEnvReply(ctx, c, "error", map[string]any{"message": "send JSON text frames: {\"type\": \"reset\"|\"step\"|\"state\"|\"close\", \"data\": {...}}", "code": CodeBadFrame})
			continue
		}
		if msg.Type == "close" {
			return
		}
		typ2, out := s.openEnvHandle(x, &x, defaults, msg)
		s.openEnvReply(ctx, c, typ2, out)
	}
}

// openEnvHandle runs one message; xp receives the environment a first
// reset makes.
func (s *Server) openEnvHandle(x *session, xp **session, defaults map[string]any, msg openEnvMessage) (string, map[string]any) {
	fail := func(e *Error) (string, map[string]any) {
		s.metrics.errors.WithLabelValues(e.Code).Inc()
		return "error", map[string]any{"message": e.Message, "code": e.Code, "retryable": e.Retryable}
	}
	data := args(msg.Data)
	if data == nil {
		data = args{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StepTimeout)
	defer cancel()
	switch msg.Type {
	case "reset":
		opts := map[string]any{}
		for _, k := range []string{"start_url", "goal", "task", "group_key"} {
			if v, ok := data[k]; ok {
				opts[k] = v
			}
		}
		a := args{"options": opts}
		if v, ok := data["seed"]; ok {
			a["seed"] = v
		}
		var res any
		var e *Error
		if x == nil {
			for k, v := range defaults {
				if _, ok := data[k]; !ok {
					data[k] = v
				}
			}
			for _, k := range []string{"site", "start_url", "goal", "task", "idle_ms", "max_steps", "episode_timeout_ms", "observe"} {
				if v, ok := data[k]; ok {
					a[k] = v
				}
			}
			res, e = s.makeEnv(ctx, a)
			if e == nil {
				*xp, e = s.session(res.(*EpisodeReply).Env)
			}
		} else {
			res, e = s.onWorker(ctx, x, func(ctx context.Context) (any, *Error) { return s.startEpisode(ctx, x, a, CauseReset) })
		}
		if e != nil {
			return fail(e)
		}
		r := res.(*EpisodeReply)
		return "observation", map[string]any{"observation": openEnvObs(r.Obs, r.Info), "reward": 0.0, "done": false}
	case "step":
		if x == nil {
			return fail(errorf(CodeBadArgs, false, "reset first: the environment is made by the first reset"))
		}
		step := args{}
		if v, ok := data["action"]; ok {
			step["action"] = v
		} else {
			step["action"] = map[string]any(data)
		}
		res, e := s.onWorker(ctx, x, func(ctx context.Context) (any, *Error) {
			if e := x.startFailed("step"); e != nil {
				return nil, e
			}
			return s.step(ctx, x, step)
		})
		if e != nil {
			return fail(e)
		}
		r := res.(*StepReply)
		return "observation", map[string]any{"observation": openEnvObs(r.Obs, r.Info), "reward": r.Reward,
			"done": r.Terminated || r.Truncated}
	case "state":
		if x == nil {
			return "state", map[string]any{"episode_id": nil, "step_count": 0}
		}
		res, e := s.onWorker(ctx, x, func(ctx context.Context) (any, *Error) {
			obs, err := x.env.Observe(ctx, observeNothing)
			if err != nil {
				return nil, envError(err)
			}
			return map[string]any{"episode_id": x.id, "step_count": x.steps, "site": x.site, "url": obs.URL,
				"title": obs.Title, "over": x.over, "goal": x.episode.Goal}, nil
		})
		if e != nil {
			return fail(e)
		}
		return "state", res.(map[string]any)
	}
	return fail(errorf(CodeUnknownOp, false, "unknown message type %q; use reset, step, state or close", msg.Type))
}

// openEnvObs is the observation with the step's info folded in (OpenEnv's
// observation carries what gymnasium's info would).
func openEnvObs(o Observation, info map[string]any) map[string]any {
	b, _ := json.Marshal(o)
	var obs map[string]any
	_ = json.Unmarshal(b, &obs)
	if obs == nil {
		obs = map[string]any{}
	}
	obs["info"] = info
	return obs
}

// onWorker runs fn on x's worker, after the requests queued before it.
func (s *Server) onWorker(ctx context.Context, x *session, fn func(context.Context) (any, *Error)) (any, *Error) {
	type result struct {
		v any
		e *Error
	}
	done := make(chan result, 1)
	if !x.enqueue(func() {
		v, e := fn(ctx)
		done <- result{v, e}
	}) {
		return nil, errorf(CodeUnknownEnv, false, "environment %s was closed", x.id)
	}
	select {
	case r := <-done:
		return r.v, r.e
	case <-ctx.Done():
		return nil, errorf(CodeTimeout, true, "request took longer than %s", s.cfg.StepTimeout)
	}
}

func (s *Server) openEnvReply(ctx context.Context, c *websocket.Conn, typ string, data map[string]any) {
	b, err := json.Marshal(openEnvMessage{Type: typ, Data: data})
	if err != nil {
		s.log.Error("encode openenv reply", zap.Error(err))
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = c.Write(wctx, websocket.MessageText, b)
}
