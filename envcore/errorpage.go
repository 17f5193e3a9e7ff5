package envcore

import (
	"context"
	"html"
	"net/url"

	"github.com/go-rod/rod/lib/proto"
)

// errorPageURL is the document Chromium shows when a page cannot be loaded.
const errorPageURL = "chrome-error://chromewebdata/"

// A page that could not be loaded is observed the same way on every
// Chromium build (the full browser draws an error page, the headless shell
// an empty document, and both report this internal URL): at the URL that
// failed, with a short document that says so. The reason, when an action
// caused the load, is in the step's action error.
func (t *tab) describeFailedLoad(ctx context.Context, opts ObserveOptions, obs *Observation) {
	failed := ""
	if h, err := (proto.PageGetNavigationHistory{}).Call(t.client(ctx)); err == nil && h.CurrentIndex >= 0 && h.CurrentIndex < len(h.Entries) {
		failed = h.Entries[h.CurrentIndex].URL
	}
	if failed == "" || failed == errorPageURL {
		failed = obs.URL
	}
	host := failed
	if u, err := url.Parse(failed); err == nil && u.Host != "" {
		host = u.Host
	}
	obs.URL, obs.Title = failed, host
	obs.HTML = "<main><h1>This page could not be loaded</h1><p>" + html.EscapeString(failed) + "</p></main>"
	obs.Clickable, obs.Hoverable, obs.Inputs, obs.Selects, obs.Focused = []string{}, []string{}, []InputField{}, []SelectField{}, ""
	obs.AXTree = ""
	if opts.AXTree || opts.MaxTokens > 0 {
		obs.AXTree = "RootWebArea " + quote(host) + "\n\theading " + quote("This page could not be loaded") + "\n\tStaticText " + quote(failed)
	}
}
