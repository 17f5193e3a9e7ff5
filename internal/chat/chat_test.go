package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/internal/chat"
)

// A server on 127.0.0.1 that stands in for the user's model: it answers
// the last message back, an HTTP error, or something that is no chat
// completion, by what that message asks.
func standIn(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model     string         `json:"model"`
			MaxTokens int            `json:"max_tokens"`
			Messages  []chat.Message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		last := req.Messages[len(req.Messages)-1].Content
		switch last {
		case "fail":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case "garbage":
			fmt.Fprint(w, `{"not": "a completion"}`)
		default:
			answer := fmt.Sprintf("%s|%s|%d|%s", last, req.Model, req.MaxTokens, r.Header.Get("Authorization"))
			_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": answer}}}})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCompleteSendsTheRequestAndNamesTheEndpointInItsErrors(t *testing.T) {
	srv := standIn(t)
	ask := func(base, msg string) (string, error) {
		return chat.Complete(context.Background(), nil, chat.Request{
			BaseURL: base, APIKey: "k", Model: "m", MaxTokens: 7,
			Messages: []chat.Message{{Role: "user", Content: msg}},
		})
	}
	if out, err := ask(srv.URL+"/v1/", "hello"); err != nil || out != "hello|m|7|Bearer k" {
		t.Errorf("answer %q, %v; want the message, model, token bound and key echoed", out, err)
	}
	for msg, want := range map[string]string{"fail": "answered HTTP 503: overloaded", "garbage": "the answer is not a chat completion"} {
		if _, err := ask(srv.URL+"/v1", msg); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("%s: error %v, want one naming %s and saying %q", msg, err, srv.URL, want)
		}
	}
	if _, err := ask("http://127.0.0.1:1/v1", "hello"); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("a dead endpoint: error %v, want not reachable", err)
	}
}
