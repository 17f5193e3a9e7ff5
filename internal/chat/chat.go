// Package chat makes one request to an OpenAI-compatible chat endpoint
// (OpenAI, vLLM, SGLang, llama.cpp server, Ollama): the one HTTP path of
// the judge (tasks) and the world models (dream). Retries, time limits and
// reading the answer's content belong to the callers.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Message is one chat message of a prompt.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat completion request.
type Request struct {
	// BaseURL is the API root, like http://127.0.0.1:8000/v1.
	BaseURL, APIKey, Model string
	Messages               []Message
	// MaxTokens bounds the answer (0: the endpoint's default).
	MaxTokens int
}

// maxAnswer bounds what is read of an answer.
const maxAnswer = 32 << 20

// Complete asks for one completion at temperature 0 and returns its text.
// Its errors name the endpoint: not reachable, an HTTP status other than
// 200 (with the start of the body), or an answer that is no chat
// completion.
func Complete(ctx context.Context, hc *http.Client, r Request) (string, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	body := map[string]any{"model": r.Model, "temperature": 0, "messages": r.Messages}
	if r.MaxTokens > 0 {
		body["max_tokens"] = r.MaxTokens
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.BaseURL, "/")+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("endpoint %s is not reachable: %w", r.BaseURL, err)
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", fmt.Errorf("reading the answer of %s: %w", r.BaseURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("endpoint %s answered HTTP %d: %.300s", r.BaseURL, resp.StatusCode, ans)
	}
	var res struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(ans, &res); err != nil || len(res.Choices) == 0 {
		return "", fmt.Errorf("endpoint %s: the answer is not a chat completion: %.300s", r.BaseURL, ans)
	}
	return res.Choices[0].Message.Content, nil
}
