package dream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/webserv-rl/webserv/trajectory"
)

// Judge is a self-assessment of dreams, as DynaWeb's: an endpoint asked
// whether the dreamed episode achieved its goal. It grades the dreams the
// task's own grader cannot (no task, the agent did not stop, or an
// evaluator that needs a real page).
type Judge struct {
	Chat Chat
	// View is the text view shown (ViewAXTree by default).
	View string
}

// JudgeMessages are the judge's chat messages: the goal, the last
// dreamed observation and the agent's answer, asking for
// {"reasoning": "...", "success": true|false}.
func JudgeMessages(obs trajectory.Observation, answer, view string) []Message {
	if view == "" {
		view = ViewAXTree
	}
	user := fmt.Sprintf("Goal: %s\n\nThe page the agent ended on:\n%s\nThe agent's answer: %q\n\n"+
		`Did the agent achieve the goal? Answer with one JSON object and nothing else: {"reasoning": "...", "success": true or false}.`,
		obs.Goal, observationText(obs, view), answer)
	return []Message{{Role: "system", Content: "You are a careful, strict grader of web agents."}, {Role: "user", Content: user}}
}

// Assess is the judge's reward for a dream (1 success, 0 not) and its
// reasoning.
func (j *Judge) Assess(ctx context.Context, obs trajectory.Observation, answer string) (float64, string, error) {
	var verdict struct {
		Reasoning string `json:"reasoning"`
		Success   *bool  `json:"success"`
	}
	err := j.Chat.ask(ctx, JudgeMessages(obs, answer, j.View), func(out string) error {
		raw, err := jsonObject(out)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &verdict); err != nil {
			return fmt.Errorf("not the JSON object asked for: %w", err)
		}
		if verdict.Success == nil {
			return fmt.Errorf(`the answer has no "success"`)
		}
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("judge %s: %w", j.Chat.BaseURL, err)
	}
	if *verdict.Success {
		return 1, verdict.Reasoning, nil
	}
	return 0, verdict.Reasoning, nil
}
