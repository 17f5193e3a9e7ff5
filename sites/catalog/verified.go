package catalog

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

// verifiedEpisode makes ep a WebArena-Verified episode of t: traced, and
// graded by the package's evaluators when the agent stops, from the
// agent's answer and the episode's trace.
func (st *TaskSet) verifiedEpisode(ep *server.Episode, t *tasks.Task, origins map[string]string) {
	ep.Trace = true
	envs := tasks.VerifiedEnvironments(t, origins)
	g := st.Verified
	byID := st.VerifiedByID
	ep.Evaluate = func(ctx context.Context, _ *envcore.Env, _ *http.Client, _ hosting.Execer, info envcore.StepInfo, _ bool, trace *netroute.Recorder) (*tasks.Result, error) {
		if !info.Terminated {
			return nil, nil // Verified grades finished episodes only
		}
		if g == nil {
			return nil, server.Unconfigured(fmt.Errorf("task %s is a WebArena-Verified task and this server has no Verified grader; start it with --verified-python pointing at a Python with webarena-verified installed", ep.TaskID))
		}
		req := tasks.VerifiedRequest{TaskID: t.ID, Environments: envs, AgentResponse: info.Answer}
		if !byID {
			req.Task = t.Eval.Verified
		}
		if trace != nil {
			req.HAR = trace.HAR()
		}
		res, err := g.Grade(ctx, req)
		if err != nil {
			return nil, err
		}
		return &tasks.Result{Reward: res.Score, Scores: res.Scores(), Grading: &tasks.VerifiedGrading{Evaluator: "webarena-verified " + g.Hello().Version,
			TaskID: req.TaskID, Task: req.Task, Environments: envs}}, nil
	}
}

// verifiedOrigins are the base URLs WebArena-Verified's placeholders stand
// for, given the roles' origins: as in WebArena's own setup,
// __SHOPPING_ADMIN__ is the admin panel, <origin>/admin.
func verifiedOrigins(origins map[string]string) map[string]string {
	out := make(map[string]string, len(origins))
	for role, o := range origins {
		if role == "shopping_admin" && !strings.HasSuffix(o, "/admin") {
			o += "/admin"
		}
		out[role] = o
	}
	return out
}
