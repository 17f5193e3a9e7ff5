package envcore_test

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
)

// tableNet is an environment's routing table as envcore sees it.
type tableNet struct{ t *netroute.Table }

func (n tableNet) Bind(p envcore.ContextProxy) { p.(*netroute.Route).Bind(n.t) }
func (n tableNet) Check(u string) error        { return n.t.Check(u) }

// A routed browser: every context, warm ones from the pool included, gets
// its own proxy and is bound to the environment that takes it, so the page
// is at the site's origin, never at the server's address, and what the
// network refuses is an action error the agent can read.
func TestRoutedContexts(t *testing.T) {
	router := netroute.New(nil, netroute.Options{})
	defer router.Close()
	b, err := envcore.Launch(testCtx(t), zap.NewNop(), envcore.BrowserOptions{WarmContexts: 1,
		Proxy: func() (envcore.ContextProxy, error) { return router.NewRoute() }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 3 { // the first takes the warm context, later ones new or refilled ones
		table := netroute.NewTable(netroute.Policy{})
		if err := table.Set("http://fixtures.webserv.test", netroute.TCPDialer(strings.TrimPrefix(site.URL, "http://"))); err != nil {
			t.Fatal(err)
		}
		env := b.NewEnv(envcore.Config{})
		if err := env.SetNetwork(tableNet{table}); err != nil {
			t.Fatal(err)
		}
		obs, _, err := env.Reset(testCtx(t), "http://fixtures.webserv.test/a.html")
		if err != nil {
			t.Fatal(err)
		}
		if obs.URL != "http://fixtures.webserv.test/a.html" || obs.LastActionError != "" || !strings.Contains(obs.HTML, "<") {
			t.Fatalf("env %d: %s %q %.100s", i, obs.URL, obs.LastActionError, obs.HTML)
		}
		obs, info, err := env.StepText(testCtx(t), `goto("`+site.URL+`/b.html")`)
		if err != nil {
			t.Fatal(err)
		}
		if info.ActionErrorCode != "refused" || !strings.Contains(obs.LastActionError, "refused") || obs.URL != "http://fixtures.webserv.test/a.html" {
			t.Errorf("env %d: goto the fixture server's own address: code %q, %q, now at %s", i, info.ActionErrorCode, obs.LastActionError, obs.URL)
		}
		_ = env.Close()
	}
	// An unrouted browser cannot take a network.
	if err := browser.NewEnv(envcore.Config{}).SetNetwork(tableNet{netroute.NewTable(netroute.Policy{})}); err == nil {
		t.Error("SetNetwork on a browser without per-context proxies did not fail")
	}
}
