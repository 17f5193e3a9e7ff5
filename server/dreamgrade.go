package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/trajectory"
)

// dreamGradable are the evaluators that run on an observation and an
// answer alone, so on a dream: the others need a real page (a locator,
// a program) or the site's database.
var dreamGradable = []string{"string_match", "url_match"}

// TaskDefiner is a Factory that can give a task's definition, with its
// placeholders filled in, and its grader: a dream grades dreamed episodes
// with them (the evaluators that run on an observation).
type TaskDefiner interface {
	TaskDef(task string) (*tasks.Task, *tasks.Grader, error)
}

// dreamGrader is the grader of a dream of task: the task's own, when
// its evaluators run on an observation, else nil and why. Each grading
// hands graded how it graded the answer (nil when it graded none), for
// the step's info.grader as a real episode's.
func (s *Server) dreamGrader(task string, judge *dream.Judge, graded func(*tasks.AnswerGrade)) (dream.Grader, string) {
	if task == "" {
		return nil, ""
	}
	defs, ok := s.factory.(TaskDefiner)
	if !ok {
		return nil, "this server's sites give no task definitions: the task's grader cannot run on a dream"
	}
	t, grader, err := defs.TaskDef(task)
	if err != nil {
		return nil, fmt.Sprintf("the task's grader cannot run on a dream: %v", err)
	}
	for _, typ := range t.Eval.Types {
		if !slices.Contains(dreamGradable, typ) {
			return nil, fmt.Sprintf("task %s's %s evaluator needs the real site (a page to run in, or its data); a dream has an observation only (%s run on one)", task, typ, strings.Join(dreamGradable, " and "))
		}
	}
	g := tasks.Grader{}
	if grader != nil {
		g = *grader
	}
	if judge != nil {
		g.Judge = tasks.NewOpenAIJudge(judge.Chat.BaseURL, judge.Chat.Model, judge.Chat.APIKey)
	}
	return func(ctx context.Context, obs trajectory.Observation, answer string) (float64, error) {
		res, err := g.Grade(ctx, t, dreamPage{obs.URL}, answer, nil)
		if err != nil {
			return 0, err
		}
		graded(res.Answer)
		return res.Reward, nil
	}, ""
}

// dreamPage is a dreamed observation as the grader reads a page: its URL
// only.
type dreamPage struct{ url string }

var errNoPage = errors.New("a dream has no page to run in")

func (p dreamPage) URL(context.Context) (string, error)     { return p.url, nil }
func (p dreamPage) Goto(context.Context, string) error      { return errNoPage }
func (p dreamPage) Eval(context.Context, string, any) error { return errNoPage }

// dreamReward is a dreamed step's reward as the protocol sends it: the
// number, or null when the dream is not graded (dream.RewardNotGraded:
// NaN, which JSON cannot carry), as a real step whose grading failed.
func dreamReward(r float64) *float64 {
	if math.IsNaN(r) {
		return nil
	}
	return rewardOf(r)
}
