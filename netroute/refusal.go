package netroute

import (
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Refusal is one request an environment's policy refused.
type Refusal struct {
	URL    string `json:"url"`    // the URL, or host:port for a CONNECT tunnel
	Method string `json:"method"` // GET, POST, ..., CONNECT
	Reason string `json:"reason"`
	// Navigation is set for a document load: Sec-Fetch-Mode: navigate, or
	// Upgrade-Insecure-Requests: 1 with an Accept naming text/html. What
	// goes through an https tunnel is opaque, so a refused tunnel is never
	// a navigation.
	Navigation bool      `json:"navigation"`
	Time       time.Time `json:"time"`
}

// RefusalError is a refused URL and the reason, as Table.Check returns it.
type RefusalError struct {
	URL    string
	Reason string
}

func (e *RefusalError) Error() string { return e.URL + " is refused: " + e.Reason }

// maxRefusals bounds the refusals a table keeps between two reads; the
// oldest go first.
const maxRefusals = 100

// record keeps r for Refused.
func (t *Table) record(r Refusal) {
	t.refMu.Lock()
	defer t.refMu.Unlock()
	if len(t.refused) >= maxRefusals {
		t.refused = append(t.refused[:0], t.refused[len(t.refused)-maxRefusals+1:]...)
	}
	t.refused = append(t.refused, r)
}

// Refused returns and clears the refusals recorded since the last call, by
// every route bound to t, oldest first.
func (t *Table) Refused() []Refusal {
	t.refMu.Lock()
	defer t.refMu.Unlock()
	out := t.refused
	t.refused = nil
	return out
}

// refuse records the refusal of req (for rawURL) and answers it: a
// navigation with 204 No Content, so the browser stays on its page;
// anything else, a CONNECT included, with 403 and the reason as text. The
// reason alone is in the X-WebServ-Refused header either way.
func (t *Table) refuse(w http.ResponseWriter, req *http.Request, rawURL, reason string) {
	nav := req.Method != http.MethodConnect && isNavigation(req.Header)
	t.record(Refusal{URL: rawURL, Method: req.Method, Reason: reason, Navigation: nav, Time: time.Now()})
	if ce := t.log().Check(zap.DebugLevel, "request refused"); ce != nil {
		ce.Write(zap.String("url", rawURL), zap.String("method", req.Method), zap.String("reason", reason))
	}
	status := http.StatusForbidden
	if nav {
		status = http.StatusNoContent
	}
	writeRefused(w, status, reason)
}

// writeRefused answers a refused request with status and reason.
func writeRefused(w http.ResponseWriter, status int, reason string) {
	h := w.Header()
	h.Set("X-WebServ-Refused", reason)
	h.Set("Cache-Control", "no-store")
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, "refused by the environment's network policy: "+reason+"\n")
}

// isNavigation reports whether request headers h are a document load's.
func isNavigation(h http.Header) bool {
	if v := h["Sec-Fetch-Mode"]; len(v) > 0 && v[0] == "navigate" {
		return true
	}
	if v := h["Upgrade-Insecure-Requests"]; len(v) > 0 && v[0] == "1" {
		return strings.Contains(h.Get("Accept"), "text/html")
	}
	return false
}
