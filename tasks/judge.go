package tasks

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/webserv-rl/webserv/internal/chat"
)

// OpenAIJudge decides fuzzy_match references with a chat model behind an
// OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama...).
// WebArena used gpt-4 with temperature 0; results with another model are
// comparable only roughly, so the model is part of what a run reports.
type OpenAIJudge struct {
	// BaseURL is the API root, like http://127.0.0.1:8000/v1.
	BaseURL string
	Model   string
	APIKey  string
	HTTP    *http.Client
}

// NewOpenAIJudge makes a judge; the HTTP client times out after a minute.
func NewOpenAIJudge(baseURL, model, apiKey string) *OpenAIJudge {
	return &OpenAIJudge{BaseURL: strings.TrimRight(baseURL, "/"), Model: model, APIKey: apiKey, HTTP: &http.Client{Timeout: time.Minute}}
}

// FuzzyMatch asks whether pred means the same as ref for the question.
func (j *OpenAIJudge) FuzzyMatch(ctx context.Context, intent, ref, pred string) (bool, error) {
	prompt := "You grade a student's answer to a question against the reference answer. " +
		"Different wording is fine; what matters is whether the student's answer means the same as the reference. " +
		"The string 'N/A' means the task cannot be done.\n\n" +
		"question: " + intent + "\nreference answer: " + ref + "\nstudent answer: " + pred +
		"\n\nEnd your reply with exactly one verdict: correct, incorrect, or partially correct."
	out, err := j.ask(ctx, prompt)
	if err != nil {
		return false, err
	}
	out = strings.ToLower(out)
	// "partially correct" and "incorrect" both contain "correct": check
	// them first, as WebArena does.
	if strings.Contains(out, "partially correct") || strings.Contains(out, "incorrect") {
		return false, nil
	}
	return strings.Contains(out, "correct"), nil
}

// Unachievable asks whether pred gives the same reason as the annotated
// one for a task that cannot be done.
func (j *OpenAIJudge) Unachievable(ctx context.Context, intent, reason, pred string) (bool, error) {
	prompt := "A task cannot be completed, for this reason: " + reason + "\n" +
		"task: " + intent + "\nThe agent's explanation: " + pred +
		"\n\nDoes the agent's explanation give the same reason? End your reply with exactly one verdict: same or different."
	out, err := j.ask(ctx, prompt)
	if err != nil {
		return false, err
	}
	out = strings.ToLower(out)
	return strings.Contains(out, "same") && !strings.Contains(out, "different"), nil
}

func (j *OpenAIJudge) ask(ctx context.Context, prompt string) (string, error) {
	out, err := chat.Complete(ctx, j.HTTP, chat.Request{
		BaseURL: j.BaseURL, APIKey: j.APIKey, Model: j.Model, MaxTokens: 256,
		Messages: []chat.Message{
			{Role: "system", Content: "You are a careful, strict grader."},
			{Role: "user", Content: prompt},
		},
	})
	if err != nil {
		return "", fmt.Errorf("judge (set it with --judge-url): %w", err)
	}
	return out, nil
}
