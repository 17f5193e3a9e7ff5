package dream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/webserv-rl/webserv/internal/chat"
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
type Message = chat.Message

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
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := chat.Complete(rctx, hc, chat.Request{BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.Model, Messages: msgs})
	if err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return "", fmt.Errorf("no answer within %s", timeout)
	}
	return out, err
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
