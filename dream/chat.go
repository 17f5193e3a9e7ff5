package dream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Chat is an OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang,
// llama.cpp server, Ollama...): the world model's and the judge's.
type Chat struct {
	// BaseURL is the API root, like http://127.0.0.1:8000/v1.
	BaseURL string
	Model   string
	APIKey  string
	// Timeout bounds each request (0: DefaultTimeout); a late answer is
	// dropped and asked again, up to Retries more times.
	Timeout time.Duration
	Retries int
	HTTP    *http.Client
}

// DefaultTimeout is a chat request's time limit when none is given.
const DefaultTimeout = 60 * time.Second

// Message is one chat message of a prompt.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// complete asks for one completion of messages and returns its text.
func (c *Chat) complete(ctx context.Context, msgs []Message) (string, error) {
	if c.BaseURL == "" {
		return "", errors.New("no endpoint: give its base URL, like http://127.0.0.1:8000/v1")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	body, err := json.Marshal(map[string]any{"model": c.Model, "temperature": 0, "messages": msgs})
	if err != nil {
		return "", err
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return "", fmt.Errorf("no answer within %s", timeout)
		}
		return "", fmt.Errorf("endpoint %s is not reachable: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return "", fmt.Errorf("no whole answer within %s", timeout)
		}
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("endpoint %s answered HTTP %d: %.300s", c.BaseURL, resp.StatusCode, b)
	}
	var res struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Choices) == 0 {
		return "", fmt.Errorf("endpoint %s: the answer is not a chat completion: %.300s", c.BaseURL, b)
	}
	return res.Choices[0].Message.Content, nil
}

// ask asks with up to Retries retries until read accepts an answer: a
// failed request, a late answer or one read refuses is asked again, the
// refusal told to the model. The error is the last attempt's.
func (c *Chat) ask(ctx context.Context, msgs []Message, read func(string) error) error {
	var last error
	for attempt := 0; attempt <= max(c.Retries, 0); attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		out, err := c.complete(ctx, msgs)
		if err != nil {
			last = err
			continue
		}
		if err := read(out); err != nil {
			last = fmt.Errorf("malformed answer: %w", err)
			msgs = append(msgs[:len(msgs):len(msgs)], Message{Role: "assistant", Content: out},
				Message{Role: "user", Content: "That answer cannot be used: " + err.Error() + ". Answer again, with only the JSON object asked for."})
			continue
		}
		return nil
	}
	return fmt.Errorf("%w (after %d attempts)", last, max(c.Retries, 0)+1)
}

// jsonObject is the JSON object in a model's answer: the text between
// its first { and its last }, so a Markdown fence or words around it are
// ignored.
func jsonObject(s string) ([]byte, error) {
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return nil, fmt.Errorf("no JSON object in %q", clip(s, 200))
	}
	return []byte(s[i : j+1]), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
