package envcore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// A page whose button loads its content with a slow fetch: the step returns
// once the response has arrived and been rendered.
func Example() {
	page := `<!doctype html><title>Orders</title>
<button onclick="fetch('/api/orders').then(r => r.text()).then(t => { document.getElementById('out').textContent = t })">Load orders</button>
<p id="out">no orders yet</p>`
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, page) })
	mux.HandleFunc("/api/orders", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(700 * time.Millisecond)
		fmt.Fprint(w, "3 orders")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	b, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	env := b.NewEnv(envcore.Config{IdleWindow: 300 * time.Millisecond})
	defer env.Close()

	obs, _, err := env.Reset(ctx, srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(obs.Title, obs.Clickable)

	obs, info, err := env.StepText(ctx, `click("load-orders")`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.Settled, strings.Contains(obs.HTML, "3 orders"))
	// Output:
	// Orders [load-orders]
	// true true
}

func ExampleParseAction() {
	for _, s := range []string{`fill("search", "mug")`, `type [search] [mug] [1]`, `stop [N/A]`} {
		a, err := envcore.ParseAction(s)
		fmt.Printf("%-26s -> %s %q enter=%v answer=%q\n", s, a.Type, a.Text, a.Enter, a.Answer)
		_ = err
	}
	// Output:
	// fill("search", "mug")      -> type "mug" enter=false answer=""
	// type [search] [mug] [1]    -> type "mug" enter=true answer=""
	// stop [N/A]                 -> terminate "" enter=false answer="N/A"
}
