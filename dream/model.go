package dream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/trajectory"
)

// Query is what a world model is asked: the agent's goal, the observation
// the action is taken in and the action, in its canonical string form
// (CanonicalAction).
type Query struct {
	Goal   string
	Obs    trajectory.Observation
	Action string
	// Step is the dream step being predicted, from 1.
	Step int
}

// Prediction is a world model's answer: the change the action causes
// (Delta, applied to the query's observation with trajectory.Apply), or
// the next observation whole (Next, when the model has it: the memory
// model built from recorded episodes), and whether the dream ends here.
type Prediction struct {
	Delta trajectory.Delta
	Next  *trajectory.Observation
	// Terminal ends the dream after this step: the model's own signal, or
	// the memory model's answer to a pair it never saw (Unseen).
	Terminal bool
	Unseen   bool
	// Reasoning is the model's reasoning trace or change description,
	// when it gives one (reported in info.model_reasoning).
	Reasoning string
}

// Model is a world model: it predicts the next state of a web page.
type Model interface {
	// Name identifies the model in info and in wm-eval's table.
	Name() string
	// View is the text view the model reads and predicts: "html" or
	// "axtree", or "" for the whole observation. A dream keeps only that
	// view in its observations, so that the model's deltas apply to what
	// it saw.
	View() string
	Predict(ctx context.Context, q Query) (Prediction, error)
}

// ModelError is a world model that failed to answer: unreachable, late,
// or an answer that is no valid prediction after the retries. It is the
// model's fault, not the agent's: the step is not counted and the server
// reports it as a backend error.
type ModelError struct {
	Model string
	Err   error
}

func (e *ModelError) Error() string {
	return fmt.Sprintf("world model %s: %v", e.Model, e.Err)
}

func (e *ModelError) Unwrap() error { return e.Err }

// IsModelError reports whether err is a world model's failure.
func IsModelError(err error) bool {
	var me *ModelError
	return errors.As(err, &me)
}

// CanonicalAction is an action's canonical string form: the parsed
// action's (so click [12] and click("12") are one action; a multi-action
// string's, each action's on its line), or the text trimmed when it does
// not parse.
func CanonicalAction(s string) string {
	acts, err := envcore.ParseActions(s)
	if err != nil {
		return strings.TrimSpace(s)
	}
	lines := make([]string, len(acts))
	for i, a := range acts {
		lines[i] = a.String()
	}
	return strings.Join(lines, "\n")
}

// inView is o as a model with view v sees it: with only that text view
// (trajectory.ExportView), or whole for "".
func inView(o trajectory.Observation, v string) trajectory.Observation {
	switch v {
	case ViewHTML:
		return trajectory.ExportView(o, false)
	case ViewAXTree:
		return trajectory.ExportView(o, true)
	}
	return o
}

// The views a model can have.
const (
	ViewWhole  = ""
	ViewHTML   = "html"
	ViewAXTree = "axtree"
)
