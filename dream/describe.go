package dream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/webserv-rl/webserv/trajectory"
)

// Describer describes recorded transitions in words, for training a world
// model in DynaWeb's layout (webserv export --describe-with): shown the
// goal, the observation o_t, the action a_t and the exact change that
// followed (the transition's delta), an OpenAI-compatible endpoint answers
// a reasoning that leads from o_t and a_t to the change, and the change
// in words. A model trained on (goal, o_t, a_t → reasoning, description)
// answers the text format's first call (DescribeMessages).
type Describer struct {
	Chat Chat
	// View is the text view of the rows (ViewHTML, or ViewAXTree for an
	// export with --axtree): the one the prompt shows.
	View string
}

// Describe asks the endpoint to describe one transition: row, with obs
// its observation in the row's view (trajectory.ExportView). An answer
// that is not the JSON asked for, or lacks a description, is asked again
// (Chat.Retries); the error is the last attempt's.
func (d *Describer) Describe(ctx context.Context, row trajectory.TransitionRow, obs trajectory.Observation) (trajectory.ChangeDescription, error) {
	var out trajectory.ChangeDescription
	msgs, err := DescriptionMessages(row, obs, d.View)
	if err != nil {
		return out, err
	}
	err = d.Chat.ask(ctx, msgs, func(text string) error {
		raw, err := jsonObject(text)
		if err != nil {
			return err
		}
		var a struct {
			Reasoning   string `json:"reasoning"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("not the JSON object asked for: %w", err)
		}
		if strings.TrimSpace(a.Description) == "" {
			return fmt.Errorf(`the answer has no "description": describe the change in words`)
		}
		out = trajectory.ChangeDescription{Reasoning: strings.TrimSpace(a.Reasoning), Description: strings.TrimSpace(a.Description)}
		return nil
	})
	if err != nil {
		return trajectory.ChangeDescription{}, fmt.Errorf("describer %s: %w", d.Chat.BaseURL, err)
	}
	return out, nil
}

// describeSystem is the system prompt of a transition's description.
const describeSystem = `You label the transitions of web pages that a world model learns from. ` +
	`A web agent pursues a goal on a website; you are shown the page it saw, the action it took and the exact change that followed.`

// DescriptionMessages are the chat messages that ask for a transition's
// description: the goal, the observation (as the world model's prompt
// shows it), the action and the exact change as a delta, asking for
// {"reasoning": "...", "description": "..."}.
func DescriptionMessages(row trajectory.TransitionRow, obs trajectory.Observation, view string) ([]Message, error) {
	if view == "" {
		view = ViewHTML
	}
	delta, err := promptJSON(row.Delta)
	if err != nil {
		return nil, fmt.Errorf("the delta of %s step %d: %w", row.EpisodeID, row.Step, err)
	}
	user := fmt.Sprintf("Goal: %s\n\n%s\nAction: %s\n\nThe exact change the action made, as a delta:\n%s\n\n%s\n\n"+
		`Answer with one JSON object and nothing else: {"reasoning": "...", "description": "..."}. `+
		`"reasoning": why the action leads to this change, reasoned from the page and the action alone, as a world model that predicts the next page would reason before seeing it (do not quote the delta). `+
		`"description": the change in words: what appears, disappears or changes on the page, and the new URL if it changes; `+
		`for a page that does not change, say so, with the action's error if it has one.`,
		row.Goal, observationText(obs, view), CanonicalAction(row.Action), delta, deltaFormatFor(view))
	return []Message{{Role: "system", Content: describeSystem}, {Role: "user", Content: user}}, nil
}

// promptJSON is v as a prompt shows it: compact JSON, with <, > and &
// as they are (not escaped as \u003c..., which a model reads worse).
func promptJSON(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
