package server

import (
	"encoding/json"

	"github.com/webserv-rl/webserv/trajectory"
)

// The trajectory lines of the observer events: what the recorder writes
// and what the live view shows.

// headLine is the episode line of ev, its episode-th of the environment.
func headLine(ev EpisodeEvent, episode int) trajectory.Line {
	ep := ev.Episode
	return trajectory.Line{Kind: trajectory.KindEpisode, Version: TrajectoryVersion, Env: ev.Env, Episode: episode,
		Site: ev.Site, Goal: ep.Goal, TaskID: ep.TaskID, StartURL: ep.StartURL, Cause: ev.Cause, Time: ev.Time, Seed: ep.Seed}
}

// resetLine is the first observation of ev's episode.
func resetLine(ev EpisodeEvent) trajectory.Line {
	obs := ev.Reply.Obs
	return trajectory.Line{Kind: trajectory.KindReset, Obs: &obs, ObsHash: obs.PageHash(), Info: ev.Reply.Info.line(), Time: ev.Time}
}

// stepLine is the step line of ev.
func stepLine(ev StepEvent) trajectory.Line {
	l := trajectory.Line{Kind: trajectory.KindStep, Step: ev.Step, Action: ev.Action, Review: ev.Review, Time: ev.Time, Began: ev.Began}
	if f := ev.Failure; f != nil {
		l.Error = &trajectory.Failure{Code: string(f.Code), Fault: string(f.Fault), Message: f.Message}
	}
	res := ev.Reply
	if res == nil {
		return l // a step that answered an error: no observation
	}
	obs := res.Obs
	l.Obs, l.Terminated, l.Truncated, l.Info, l.Reward = &obs, res.Terminated, res.Truncated, res.Info.line(), res.Reward
	l.ObsHash = obs.PageHash()
	return l
}

// line is info as a trajectory line holds it: the JSON object the reply's
// info is, as the line's file has it and readers of the file decode it.
func (i *StepInfo) line() map[string]any {
	raw, err := json.Marshal(i)
	if err != nil {
		return map[string]any{"record_error": "the step's info could not be written: " + err.Error()}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return map[string]any{"record_error": "the step's info could not be written: " + err.Error()}
	}
	return m
}
