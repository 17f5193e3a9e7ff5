package miniwob

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

// TaskSetName names the task set in info (task_set and variant).
const TaskSetName = "miniwob"

// TimedOut is the reason MiniWoB's core gives when the episode's time
// limit ends it (core/core.js, startEpisodeReal).
const TimedOut = "timed out"

// Episode prepares an episode of task name at origin. seed is the reset's
// seed (nil: a random one), turned into the page's seed as BrowserGym
// does (PageSeed).
func Episode(origin, name string, seed *int64) (server.Episode, error) {
	var s int64
	if seed != nil {
		s = *seed
	} else {
		s = rand.Int64N(1 << 32)
	}
	pageSeed, err := PageSeed(s)
	if err != nil {
		return server.Episode{}, server.BadRequest(err)
	}
	start := URL(origin, name)
	ep := server.Episode{
		StartURL: start, TaskID: SiteName + "." + name, TaskSet: TaskSetName, Variant: TaskSetName,
		Start: StartScript(pageSeed, MaxTimeMs),
		// The pages need no real entropy, and but for a few tasks
		// (RealTime) no real time: their clock and randomness are the
		// seed's, so an episode (and its replay in a fork) repeats
		// whatever the host's timing.
		Clock: &envcore.Clock{Seed: pageSeed, Crypto: true, RealTime: RealTime(name)},
	}
	if InPlace(name) {
		ep.Restart = RestartScript(pageSeed, MaxTimeMs)
	}
	ep.Evaluate = func(ctx context.Context, env *envcore.Env, _ *http.Client, _ hosting.Execer, _ envcore.StepInfo, _ bool, _ *netroute.Recorder) (*tasks.Result, error) {
		var st State
		if err := env.Evaluate(ctx, StateScript(), &st); err != nil {
			return nil, fmt.Errorf("read MiniWoB's reward: %w", err)
		}
		return Grade(st, start, pageSeed), nil
	}
	return ep, nil
}

// Grade turns the page's state into a step's result, by BrowserGym's rule
// (AbstractMiniwobTask.validate): the reward is 1 when MiniWoB's raw
// reward is positive, else 0; the episode is over when the page says done,
// or at once, with reward 0, when the page is no longer the task's
// (start). WebServ departs in one place: an episode that MiniWoB's own
// time limit ended is truncated, not terminated. Result.MiniWoB has
// MiniWoB's own figures.
func Grade(st State, start string, pageSeed int64) *tasks.Result {
	res := &tasks.Result{MiniWoB: &tasks.MiniWoBReport{PageSeed: pageSeed}}
	if !st.Task || st.URL != start {
		res.MiniWoB.Error = fmt.Sprintf("the page is no longer the task's (%s is at %s): the episode ends with reward 0, as in BrowserGym", start, st.URL)
		res.Done = true
		return res
	}
	res.MiniWoB.MiniWoBFigures = &tasks.MiniWoBFigures{RawReward: st.RawReward, Reward: st.Reward, Reason: st.Reason, Done: st.Done}
	if st.RawReward > 0 {
		res.Reward = 1
	}
	if st.Done && st.Reason == TimedOut {
		res.TimeLimit = true
	} else {
		res.Done = st.Done
	}
	return res
}
