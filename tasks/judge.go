package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
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
	body, _ := json.Marshal(map[string]any{
		"model": j.Model, "temperature": 0, "max_tokens": 256,
		"messages": []map[string]string{
			{"role": "system", "content": "You are a careful, strict grader."},
			{"role": "user", "content": prompt},
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("judge: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if j.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+j.APIKey)
	}
	resp, err := j.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("judge endpoint %s is not reachable (set it with --judge-url): %w", j.BaseURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("judge endpoint %s answered HTTP %d: %.300s", j.BaseURL, resp.StatusCode, b)
	}
	var res struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Choices) == 0 {
		return "", fmt.Errorf("judge endpoint %s: not a chat completion: %.300s", j.BaseURL, b)
	}
	return res.Choices[0].Message.Content, nil
}
