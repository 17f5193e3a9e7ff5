package envcore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// The browser reports every request a tab's documents, workers and frames
// create, as they create it: a browser without the proxy's log still
// waits for a dynamic import()'s module, a worker's fetch and a fetch of
// a frame of another origin, none of which the page's tracker follows,
// at an idle window far shorter than their answers take.
func TestBrowserReportsTheRequestsAnActionCauses(t *testing.T) {
	t.Parallel()
	_, srv := routed(t) // the class site
	cases := []struct{ action, want, request string }{
		{`click("import-a-module")`, "IMPORT-DONE", "api/module.mjs?ms=250&text=IMPORT-DONE (script)"},
		{`click("ask-the-worker")`, "WORKER-DONE", "api/delay?ms=250&text=WORKER-DONE (fetch)"},
		{`click("ask-the-frame")`, "FRAME-DONE", "api/delay?ms=250&text=FRAME-DONE (fetch)"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, envcore.Config{IdleWindow: 10 * time.Millisecond}) // not routed
			if _, _, err := env.Reset(testCtx(t), srv.URL+"/x1/classes.html"); err != nil {
				t.Fatal(err)
			}
			obs, info := mustStep(t, env, c.action)
			reported := envcore.ReportedRequests(env)
			if !strings.Contains(obs.HTML, c.want) {
				t.Errorf("settled %s (%s) without %s; reported: %q", info.Settle, info.SettleReason, c.want, reported)
			}
			if !strings.Contains(strings.Join(reported, "\n"), c.request) {
				t.Errorf("the browser did not report %s: %q", c.request, reported)
			}
		})
	}
}
