package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/webserv-rl/webserv/trajectory"
)

// Offline re-scoring. ExportHAR writes each recorded episode's trace in
// WebArena-Verified's output layout, one directory per episode:
//
//	OUT/<env>-<episode>/network.har          the episode's HAR 1.2 trace
//	OUT/<env>-<episode>/agent_response.json  the agent's final answer
//	OUT/<env>-<episode>/episode.json         task, recorded reward, grading request
//
// and Regrade grades such directories again with the package's evaluators
// (the trace read by NetworkTrace.from_har), for comparison with the
// rewards given online.

// VerifiedGrading is what a Verified grading records (Result.Grading,
// info.grading on the wire): all Regrade needs besides the trace and the
// answer.
type VerifiedGrading struct {
	Evaluator    string              `json:"evaluator"` // "webarena-verified 1.2.3"
	TaskID       int                 `json:"task_id"`
	Task         json.RawMessage     `json:"task,omitempty"` // inline definitions only
	Environments map[string][]string `json:"environments"`
}

// ExportedEpisode is episode.json.
type ExportedEpisode struct {
	Env     string           `json:"env"`
	Episode string           `json:"episode"` // "0001"
	TaskID  string           `json:"task_id"`
	TaskSet string           `json:"task_set"`
	Answer  string           `json:"answer"`
	Reward  *float64         `json:"reward"` // the final step's, nil when ungraded
	Grading *VerifiedGrading `json:"grading,omitempty"`
}

// ExportHAR writes every recorded episode under dirs that has a trace
// (<n>.har.gz beside <n>.jsonl.gz) to out, and returns how many.
func ExportHAR(out string, dirs []string) (int, error) {
	n := 0
	for _, d := range dirs {
		var traces []string
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasSuffix(p, trajectory.TraceExt) {
				traces = append(traces, p)
			}
			return err
		})
		if err != nil {
			return n, fmt.Errorf("read recordings under %s: %w", d, err)
		}
		sort.Strings(traces)
		for _, tr := range traces {
			ep, err := readExportedEpisode(strings.TrimSuffix(tr, trajectory.TraceExt) + trajectory.Ext)
			if err != nil {
				return n, err
			}
			ep.Env, ep.Episode = filepath.Base(filepath.Dir(tr)), strings.TrimSuffix(filepath.Base(tr), trajectory.TraceExt)
			dir := filepath.Join(out, ep.Env+"-"+ep.Episode)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return n, fmt.Errorf("export the trace: %w", err)
			}
			h, err := trajectory.ReadTrace(tr)
			if err != nil {
				return n, err
			}
			if err := trajectory.WriteTrace(filepath.Join(dir, "network.har"), h); err != nil {
				return n, err
			}
			if err := writeJSON(filepath.Join(dir, "agent_response.json"), ep.Answer); err != nil {
				return n, err
			}
			if err := writeJSON(filepath.Join(dir, "episode.json"), ep); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// readExportedEpisode reads what episode.json keeps from a trajectory file:
// its task and the last step's grade (its reward when the step has no
// info.grade), answer and grading.
func readExportedEpisode(path string) (ExportedEpisode, error) {
	var ep ExportedEpisode
	t, err := trajectory.Read(path)
	if err != nil {
		return ep, fmt.Errorf("the trace's trajectory: %w", err)
	}
	ep.TaskID = t.Head.TaskID
	for _, l := range t.Steps {
		var info struct {
			Answer  string           `json:"answer"`
			TaskSet string           `json:"task_set"`
			Grading *VerifiedGrading `json:"grading"`
			Grade   *float64         `json:"grade"`
		}
		raw, _ := json.Marshal(l.Info)
		_ = json.Unmarshal(raw, &info)
		ep.Reward, ep.Answer, ep.TaskSet = l.Reward, info.Answer, info.TaskSet
		if info.Grade != nil && l.Reward != nil {
			ep.Reward = info.Grade // the grade itself: a step's reward is its change (dense grading)
		}
		if info.Grading != nil {
			ep.Grading = info.Grading
		}
	}
	return ep, nil
}

// RegradeResult is one episode graded again.
type RegradeResult struct {
	Dir      string
	TaskID   string
	Recorded *float64 // the reward given online
	Regraded float64
}

// Regrade grades again, with g, every exported episode directory under
// dirs whose episode was graded by WebArena-Verified.
func Regrade(ctx context.Context, g *VerifiedGrader, dirs []string) ([]RegradeResult, error) {
	var out []RegradeResult
	for _, d := range dirs {
		var eps []string
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && e.Name() == "episode.json" {
				eps = append(eps, filepath.Dir(p))
			}
			return err
		})
		if err != nil {
			return out, fmt.Errorf("read exported episodes under %s: %w", d, err)
		}
		sort.Strings(eps)
		for _, dir := range eps {
			var ep ExportedEpisode
			raw, err := os.ReadFile(filepath.Join(dir, "episode.json"))
			if err == nil {
				err = json.Unmarshal(raw, &ep)
			}
			if err != nil {
				return out, fmt.Errorf("%s: %w", dir, err)
			}
			if ep.Grading == nil {
				continue // not a Verified episode
			}
			har, err := filepath.Abs(filepath.Join(dir, "network.har"))
			if err != nil {
				return out, err
			}
			res, err := g.Grade(ctx, VerifiedRequest{TaskID: ep.Grading.TaskID, Task: ep.Grading.Task, Environments: ep.Grading.Environments,
				AgentResponse: ep.Answer, HARPath: har})
			if err != nil {
				return out, fmt.Errorf("%s: %w", dir, err)
			}
			out = append(out, RegradeResult{Dir: dir, TaskID: ep.TaskID, Recorded: ep.Reward, Regraded: res.Score})
		}
	}
	return out, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("export: %w; check the output directory", err)
	}
	return nil
}
