package inject

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// The injected files, in the order they run. core.js creates the namespace;
// settle.js and its wrappers (settle_*.js) run before listeners.js, so that
// they capture the original addEventListener for their own listeners, and
// before every page script, so that they see all the work the page
// schedules.
var (
	//go:embed core.js
	coreJS string
	//go:embed settle.js
	settleJS string
	//go:embed settle_callbacks.js
	settleCallbacksJS string
	//go:embed settle_messages.js
	settleMessagesJS string
	//go:embed settle_requests.js
	settleRequestsJS string
	//go:embed settle_navigation.js
	settleNavigationJS string
	//go:embed settle_channels.js
	settleChannelsJS string
	//go:embed listeners.js
	listenersJS string
	//go:embed elements.js
	elementsJS string
	//go:embed parser.js
	parserJS string
	//go:embed parser_ids.js
	parserIDsJS string
	//go:embed parser_geometry.js
	parserGeometryJS string
	//go:embed parser_views.js
	parserViewsJS string
	//go:embed parser_observe.js
	parserObserveJS string
	//go:embed actions.js
	actionsJS string
	//go:embed state.js
	stateJS string
	//go:embed standin.html
	standinHTML string
	//go:embed clock.js
	clockJS string
)

// Global is the name of the page-global object every injected file hangs off.
const Global = "__webserv"

// File is one injected JavaScript file.
type File struct {
	Name   string
	Source string
}

// Files returns the injected files in the order they run.
func Files() []File {
	return []File{
		{"core.js", coreJS},
		{"settle.js", settleJS},
		{"settle_callbacks.js", settleCallbacksJS},
		{"settle_messages.js", settleMessagesJS},
		{"settle_requests.js", settleRequestsJS},
		{"settle_navigation.js", settleNavigationJS},
		{"settle_channels.js", settleChannelsJS},
		{"listeners.js", listenersJS},
		{"elements.js", elementsJS},
		{"parser.js", parserJS},
		{"parser_ids.js", parserIDsJS},
		{"parser_geometry.js", parserGeometryJS},
		{"parser_views.js", parserViewsJS},
		{"parser_observe.js", parserObserveJS},
		{"actions.js", actionsJS},
		{"state.js", stateJS},
	}
}

var bundle = func() string {
	var b strings.Builder
	for _, f := range Files() {
		fmt.Fprintf(&b, "// ---- %s ----\n%s\n", f.Name, f.Source)
	}
	// A source URL names the bundle in DevTools and in stack traces.
	b.WriteString("//# sourceURL=webserv-inject.js\n")
	return b.String()
}()

// Bundle returns all injected files as one script, ready for
// Page.addScriptToEvaluateOnNewDocument. Install it once per page target
// before the page runs any script; it then runs in every new document of that
// page, iframes included.
func Bundle() string { return bundle }

// Clock returns the script that makes a seeded episode's pages
// deterministic (clock.js says what it covers): seeded Math.random, a
// virtual clock for Date, performance.now and event and frame times, and,
// with crypto, seeded crypto.getRandomValues and crypto.randomUUID (only
// for a site that needs no real entropy). Register it with
// Page.addScriptToEvaluateOnNewDocument after Bundle, so that the bundle
// keeps the real clock and every page script sees the virtual one.
// With realTime the page keeps the real clock (seeded randomness only).
func Clock(seed int64, crypto, realTime bool) string {
	cfg, _ := json.Marshal(struct {
		Seed     int64 `json:"seed"`
		Crypto   bool  `json:"crypto"`
		RealTime bool  `json:"realTime"`
	}{seed, crypto, realTime})
	return "(" + strings.TrimSpace(clockJS) + ")(" + string(cfg) + ");\n//# sourceURL=webserv-clock.js\n"
}

// StandIn returns the stand-in document that a restore commits for history
// entries it does not load (see standin.html). Serve it with
// Cache-Control: no-store, so that visiting the entry later loads the real
// page.
func StandIn() string { return standinHTML }

// MissingMessage is the error message of a Call expression evaluated in a
// document that has no injected script (about:blank before any navigation,
// some browser-internal pages).
const MissingMessage = "webserv: this document has no injected script"

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Call returns a JavaScript expression that calls the injected function
// path (for example "parser.observeJSON") with args encoded as JSON literals.
// In a document without the injected script the expression throws an Error
// whose message is MissingMessage. Call panics if an argument cannot be
// encoded as JSON, which is a programming error.
func Call(path string, args ...any) string {
	var b strings.Builder
	b.WriteString("(window.")
	b.WriteString(Global)
	b.WriteString("||(()=>{throw new Error(")
	b.WriteString(strconvQuote(MissingMessage))
	b.WriteString(")})()).")
	b.WriteString(path)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		raw, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Sprintf("inject.Call(%q): argument %d: %v", path, i, err))
		}
		b.Write(raw)
	}
	b.WriteByte(')')
	return b.String()
}
