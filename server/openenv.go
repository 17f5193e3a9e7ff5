package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
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
	if !s.authorized(openEnvToken(r)) {
		http.Error(w, "this server needs a token: send it as Authorization: Bearer TOKEN, or add ?token=... to the URL", http.StatusUnauthorized)
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

// openEnvToken is the token an OpenEnv client sent: in an Authorization
// header (Bearer), or in the URL's query. openenv-core's client appends
// "/ws" to the URL it is given, query and all, so a token given as
// http://HOST/openenv?token=T arrives as "T/ws" on the path /openenv.
func openEnvToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
	}
	t := r.URL.Query().Get("token")
	if r.URL.Path == "/openenv" {
		t = strings.TrimSuffix(t, "/ws")
	}
	return t
}

// openEnvHandle runs one message through the ops table; xp receives the
// environment a first reset makes. A reset's data are make's arguments
// (the first) or reset's, with the episode options (start_url, goal,
// task, group_key) at the top level as OpenEnv sends them; anything else
// is refused as the table's ops refuse it.
func (s *Server) openEnvHandle(x *session, xp **session, defaults map[string]any, msg openEnvMessage) (string, map[string]any) {
	fail := func(err error) (string, map[string]any) {
		e := wireError(err) // counted where the op ran (exec.go), or here
		if !opError(err) {
			s.metrics.errors.WithLabelValues(string(e.Code)).Inc()
		}
		return "error", map[string]any{"message": e.Message, "code": e.Code, "retryable": e.Retryable, "fault": e.Fault}
	}
	data := args(msg.Data)
	if data == nil {
		data = args{}
	}
	switch msg.Type {
	case "reset":
		a, opts := args{}, map[string]any{}
		for k, v := range data {
			if slices.Contains(wireNames(reflect.TypeFor[episodeOpts]()), k) {
				opts[k] = v
			} else {
				a[k] = v
			}
		}
		if len(opts) > 0 {
			a["options"] = opts
		}
		var r *EpisodeReply
		var err error
		if x == nil {
			for k, v := range defaults {
				if _, ok := data[k]; !ok {
					a[k] = v
				}
			}
			// make takes the episode options at its top level too.
			for k, v := range opts {
				if k != "group_key" {
					a[k] = v
				}
			}
			r, err = opResult[*EpisodeReply](s, wireOp("make", call{}, a))
			if err == nil {
				*xp, err = s.session(r.Env)
			}
		} else {
			r, err = opResult[*EpisodeReply](s, wireOp("reset", call{x: x}, a))
		}
		if err != nil {
			return fail(err)
		}
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
		r, err := opResult[*StepReply](s, wireOp("step", call{x: x}, step))
		if err != nil {
			return fail(err)
		}
		obs := openEnvObs(r.Obs, r.Info)
		// OpenEnv has one flag, done; the observation says which end it was.
		obs["terminated"], obs["truncated"] = r.Terminated, r.Truncated
		return "observation", map[string]any{"observation": obs, "reward": r.Reward,
			"done": r.Terminated || r.Truncated}
	case "state":
		if x == nil {
			return "state", map[string]any{"episode_id": nil, "step_count": 0}
		}
		// The observe op (admitted, counted, on the worker), and the
		// episode's fields read in the same job.
		var st map[string]any
		req := wireOp("observe", call{x: x}, args{})
		req.then = func(x *session) {
			st = map[string]any{"episode_id": x.id, "step_count": x.steps, "site": x.site, "over": x.over, "goal": x.episode.Goal}
		}
		r, err := opResult[*ObserveReply](s, req)
		if err != nil {
			return fail(err)
		}
		st["url"], st["title"] = r.Obs.URL, r.Obs.Title
		return "state", st
	}
	return fail(errorf(CodeUnknownOp, false, "unknown message type %s; use reset, step, state or close", quoteKey(msg.Type)))
}

// openEnvObs is the observation with the step's info folded in (OpenEnv's
// observation carries what gymnasium's info would).
func openEnvObs(o Observation, info StepInfo) map[string]any {
	b, _ := json.Marshal(o)
	var obs map[string]any
	_ = json.Unmarshal(b, &obs)
	if obs == nil {
		obs = map[string]any{}
	}
	if _, ok := obs["extra_element_properties"]; !ok && o.ExtraElementProperties != nil {
		obs["extra_element_properties"] = map[string]any{} // asked for, empty: BrowserGym always gives the key
	}
	obs["info"] = info
	obs["text"] = ModelText(o) // what a model reads: the goal first (prompt.go)
	return obs
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
