package envcore_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// BrowserGym's action set, as the installed browsergym-core documents it:
// every action of HighLevelActionSet's subsets with its parameters and the
// examples of its docstring, read through BrowserGym's own parser. The test
// follows the installed version; without it, it fails and says how to
// install it.
const bgActionsScript = `
import inspect, json
from browsergym.core.action.highlevel import HighLevelActionSet
from browsergym.core.action.parsers import highlevel_action_parser, NamedArgument
from browsergym.core.action import functions
s = HighLevelActionSet(subsets=["chat", "infeas", "bid", "coord", "nav", "tab"], multiaction=True)
out = []
for name, a in s.action_set.items():
    params = list(inspect.signature(getattr(functions, name)).parameters)
    exs = []
    for text in a.examples:
        (fn, args), = highlevel_action_parser.parse_string(text, parse_all=True).as_list()
        exs.append({"text": text, "fn": fn,
                    "args": [x for x in args if not isinstance(x, NamedArgument)],
                    "kwargs": {x.name: x.value for x in args if isinstance(x, NamedArgument)}})
    out.append({"name": name, "params": params, "examples": exs})
print(json.dumps(out))
`

type bgExample struct {
	Text   string         `json:"text"`
	Fn     string         `json:"fn"`
	Args   []any          `json:"args"`
	Kwargs map[string]any `json:"kwargs"`
}

type bgAction struct {
	Name     string      `json:"name"`
	Params   []string    `json:"params"`
	Examples []bgExample `json:"examples"`
}

// bgPython is the Python that has browsergym-core: $WEBSERV_PYTHON, else
// the repository's .venv, else python3.
func bgPython() string {
	if p := os.Getenv("WEBSERV_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("../.venv/bin/python"); err == nil {
		return "../.venv/bin/python"
	}
	return "python3"
}

func browserGymActions(t *testing.T) []bgAction {
	t.Helper()
	py := bgPython()
	out, err := exec.Command(py, "-c", bgActionsScript).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("reading BrowserGym's action set with %s failed: %v\n%s\nThis test checks WebServ against the installed browsergym-core: "+
			"install the bench extra (python3 -m venv .venv && .venv/bin/pip install '.[bench]') or name a Python that has it in WEBSERV_PYTHON", py, err, stderr)
	}
	var acts []bgAction
	if err := json.Unmarshal(out, &acts); err != nil {
		t.Fatalf("BrowserGym's action set: %v\n%s", err, out)
	}
	if len(acts) < 30 {
		t.Fatalf("BrowserGym's action set has only %d actions: %s", len(acts), out)
	}
	return acts
}

// pyLiteral writes v (as JSON decoded it) as the Python literal a call
// takes.
func pyLiteral(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case []any:
		items := make([]string, len(x))
		for i, e := range x {
			items[i] = pyLiteral(e)
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	return "None"
}

// call writes fn(args..., k=v...) with the keywords in sorted order.
func call(fn string, args []any, kwargs map[string]any) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, pyLiteral(a))
	}
	var keys []string
	for k := range kwargs {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+pyLiteral(kwargs[k]))
	}
	return fn + "(" + strings.Join(parts, ", ") + ")"
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Every action of BrowserGym's HighLevelActionSet is one of WebServ's, and
// every example BrowserGym documents parses, positionally as written and
// with every argument named by BrowserGym's signature, to the same action.
func TestBrowserGymActionsParseWithTheirSignatures(t *testing.T) {
	docs := map[string]envcore.ActionDoc{}
	for _, d := range envcore.Actions() {
		docs[d.Name] = d
	}
	for _, a := range browserGymActions(t) {
		if _, ok := docs[a.Name]; !ok {
			t.Errorf("BrowserGym's %s%v is not in WebServ's action table", a.Name, a.Params)
		}
		for _, ex := range a.Examples {
			for _, fn := range uniq(ex.Fn, a.Name) { // keyboard_down's examples call keyboard_up
				written := call(fn, ex.Args, ex.Kwargs)
				want, err := envcore.ParseAction(written)
				if err != nil {
					t.Errorf("%s (BrowserGym's example %s): %v", written, ex.Text, err)
					continue
				}
				named := map[string]any{}
				for i, v := range ex.Args {
					named[a.Params[i]] = v
				}
				for k, v := range ex.Kwargs {
					named[k] = v
				}
				byName := call(fn, nil, named)
				got, err := envcore.ParseAction(byName)
				if err != nil {
					t.Errorf("%s (BrowserGym's example %s with its arguments named by the signature %v): %v", byName, ex.Text, a.Params, err)
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s parses as %+v, %s as %+v", written, want, byName, got)
				}
			}
		}
	}
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// The fixture's elements (bgactions.html) that stand in for the examples'
// element ids, by parameter.
var bgTargets = map[string]map[string]string{
	"click":         {"bid": "target"},
	"dblclick":      {"bid": "target"},
	"hover":         {"bid": "target"},
	"focus":         {"bid": "field"},
	"fill":          {"bid": "field"},
	"press":         {"bid": "field"},
	"clear":         {"bid": "field"},
	"select_option": {"bid": "colour"},
	"drag_and_drop": {"from_bid": "from", "to_bid": "to"},
	"upload_file":   {"bid": "files"},
}

// atRe reads the point of a log line.
var atRe = regexp.MustCompile(`^ at=(-?\d+),(-?\d+)`)

// bgPlay is one example as played on the fixture: the steps before it, the
// fixture's mode, and what the page must show after it.
type bgPlay struct {
	mode  string   // the fixture's query
	setup []string // actions before the example
}

var bgSetups = map[string]bgPlay{
	"keyboard_type":        {mode: "typing"},
	"keyboard_insert_text": {mode: "typing"},
	"mouse_upload_file":    {mode: "upload"},
	"go_back":              {setup: []string{`goto("/b.html")`}},
	"go_forward":           {setup: []string{`goto("/b.html")`, `go_back()`}},
	"tab_close":            {setup: []string{`new_tab()`}},
	"tab_focus":            {setup: []string{`new_tab()`, `new_tab()`, `tab_focus(0)`}},
}

// Every example of BrowserGym's action set, played on a page where it has
// an effect, has it: the element was clicked with the button and keys
// asked, focused, filled, the key went down, the files were chosen...
func TestBrowserGymExamplesPlay(t *testing.T) {
	uploads := t.TempDir()
	// Chromium (an unprivileged user when the tests run as root) reads the
	// chosen files.
	for _, f := range []string{"my_receipt.pdf", "home/bob/Documents/image.jpg", "home/bob/Documents/file.zip"} {
		p := filepath.Join(uploads, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for d := uploads; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	for _, a := range browserGymActions(t) {
		for _, ex := range a.Examples {
			for _, fn := range uniq(ex.Fn, a.Name) {
				args := append([]any(nil), ex.Args...)
				kwargs := map[string]any{}
				for k, v := range ex.Kwargs {
					kwargs[k] = v
				}
				for i, p := range a.Params {
					if id, ok := bgTargets[fn][p]; ok {
						if i < len(args) {
							args[i] = id
						} else {
							kwargs[p] = id
						}
					}
				}
				if fn == "goto" {
					args[0] = site.URL + "/b.html" // only 127.0.0.1
				}
				play := call(fn, args, kwargs)
				t.Run(play, func(t *testing.T) {
					env := newEnv(t, envcore.Config{Viewport: envcore.Viewport{Width: 1280, Height: 900}, UploadDir: uploads})
					s := bgSetups[fn]
					start := mustReset(t, env, "/bgactions.html?"+s.mode)
					for _, x := range s.setup {
						if strings.HasPrefix(x, `goto("/`) {
							x = `goto("` + site.URL + x[len(`goto("`):]
						}
						mustAct(t, env, x)
					}
					obs, info := mustStep(t, env, play)
					if info.ActionError != "" {
						t.Fatalf("%s failed: %s", play, info.ActionError)
					}
					checkBGEffect(t, fn, args, kwargs, start, obs, info)
				})
			}
		}
	}
}

// checkBGEffect asserts what the example fn(args, kwargs) did.
func checkBGEffect(t *testing.T, fn string, args []any, kwargs map[string]any, start, obs envcore.Observation, info envcore.StepInfo) {
	t.Helper()
	page := obs.HTML
	has := func(what string) {
		t.Helper()
		if !strings.Contains(page, what) {
			t.Errorf("the page does not show %q:\n%s", what, page)
		}
	}
	near := func(prefix string, x, y any) {
		t.Helper()
		wx, wy := x.(float64), y.(float64)
		for rest := page; ; {
			i := strings.Index(rest, prefix)
			if i < 0 {
				break
			}
			rest = rest[i+len(prefix):]
			if m := atRe.FindStringSubmatch(rest[max(strings.Index(rest, " at="), 0):]); m != nil {
				gx, _ := strconv.Atoi(m[1])
				gy, _ := strconv.Atoi(m[2])
				if math.Abs(float64(gx)-wx) <= 1 && math.Abs(float64(gy)-wy) <= 1 {
					return
				}
			}
		}
		t.Errorf("the page does not show %q at (%g, %g):\n%s", prefix, wx, wy, page)
	}
	arg := func(i int, name string, def any) any {
		if v, ok := kwargs[name]; ok {
			return v
		}
		if i < len(args) {
			return args[i]
		}
		return def
	}
	buttonNo := map[any]int{"left": 0, "middle": 1, "right": 2}
	shift := 0
	if mods, ok := arg(2, "modifiers", nil).([]any); ok && len(mods) > 0 && mods[0] == "Shift" {
		shift = 1
	}
	keyLine := func(kind, key, on string) string {
		parts := strings.Split(key, "+")
		last := strings.ToLower(parts[len(parts)-1])
		ctrl, meta, sh := 0, 0, 0
		for _, m := range parts[:len(parts)-1] {
			switch m {
			case "ControlOrMeta", "Control":
				ctrl = 1
			case "Meta":
				meta = 1
			case "Shift":
				sh = 1
			}
		}
		if kind == "keydown" { // a modifier is held in its own keydown
			switch last {
			case "shift":
				sh = 1
			case "control":
				ctrl = 1
			case "meta":
				meta = 1
			}
		}
		return fmt.Sprintf("%s key=%s on=%s shift=%d ctrl=%d meta=%d", kind, last, on, sh, ctrl, meta)
	}
	switch fn {
	case "noop":
		if obs.URL != start.URL {
			t.Errorf("noop changed the page: %s", obs.URL)
		}
	case "send_msg_to_user":
		if n := len(obs.Chat); n == 0 || obs.Chat[n-1].Text != args[0] {
			t.Errorf("chat = %+v, want the message %q", obs.Chat, args[0])
		}
	case "report_infeasible":
		if !info.Terminated || !info.Infeasible || info.Answer != args[0] {
			t.Errorf("info = %+v, want the episode ended as infeasible with the reason", info)
		}
	case "scroll", "scroll_at":
		dx, dy := args[len(args)-2].(float64), args[len(args)-1].(float64)
		line := fmt.Sprintf("wheel dx=%d dy=%d", int(math.Copysign(1, dx)*math.Min(1, math.Abs(dx))), int(math.Copysign(1, dy)*math.Min(1, math.Abs(dy))))
		if fn == "scroll_at" {
			near(line, args[0], args[1])
		} else {
			has(line)
		}
	case "fill":
		b, _ := json.Marshal(args[1])
		has("value=" + string(b))
	case "select_option":
		var opts []string
		switch o := args[1].(type) {
		case string:
			opts = []string{o}
		case []any:
			for _, x := range o {
				opts = append(opts, x.(string))
			}
		}
		has("selected=" + strings.Join(opts, ","))
	case "click", "dblclick":
		detail := map[string]int{"click": 1, "dblclick": 2}[fn]
		has(fmt.Sprintf("mousedown on=target button=%d detail=%d shift=%d", buttonNo[arg(1, "button", "left")], detail, shift))
		if fn == "dblclick" && arg(1, "button", "left") == "left" {
			has("dblclick on=target")
		}
	case "hover":
		has("over on=target")
	case "press":
		has(keyLine("keydown", args[1].(string), "field"))
	case "focus":
		has("focus on=field")
		if obs.Focused != "field" {
			t.Errorf("focused = %q, want field", obs.Focused)
		}
	case "clear":
		has(`value=""`)
	case "drag_and_drop":
		has("mousedown on=from button=0")
		has("mouseup on=to button=0")
	case "upload_file", "mouse_upload_file":
		var names []string
		switch f := arg(len(args)-1, "file", nil).(type) {
		case string:
			names = []string{filepath.Base(f)}
		case []any:
			for _, x := range f {
				names = append(names, filepath.Base(x.(string)))
			}
		}
		has("files=" + strings.Join(names, ","))
		if fn == "mouse_upload_file" {
			near("click on=cover", args[0], args[1])
		}
	case "mouse_move":
		near("move on=pad", args[0], args[1])
	case "mouse_up", "mouse_down":
		kind := map[string]string{"mouse_up": "mouseup", "mouse_down": "mousedown"}[fn]
		near(fmt.Sprintf("%s on=pad button=%d", kind, buttonNo[arg(2, "button", "left")]), args[0], args[1])
	case "mouse_click", "mouse_dblclick":
		detail := map[string]int{"mouse_click": 1, "mouse_dblclick": 2}[fn]
		near(fmt.Sprintf("mousedown on=pad button=%d detail=%d", buttonNo[arg(2, "button", "left")], detail), args[0], args[1])
	case "mouse_drag_and_drop":
		near("mousedown on=pad button=0", args[0], args[1])
		near("mouseup on=pad button=0", args[2], args[3])
		near("move on=pad buttons=1", args[2], args[3])
	case "keyboard_down":
		has(keyLine("keydown", args[0].(string), "body"))
	case "keyboard_up":
		has(keyLine("keyup", args[0].(string), "body"))
	case "keyboard_press":
		has(keyLine("keydown", args[0].(string), "body"))
	case "keyboard_type":
		has(`value="Hello world!"`)
		has("keydown key=! on=field")
	case "keyboard_insert_text":
		has(`value="Hello world!"`)
		if strings.Contains(page, "keydown") {
			t.Errorf("keyboard_insert_text sent key events:\n%s", page)
		}
	case "goto", "go_forward":
		if !strings.HasSuffix(obs.URL, "/b.html") {
			t.Errorf("url = %s, want b.html", obs.URL)
		}
	case "go_back":
		if !strings.Contains(obs.URL, "/bgactions.html") {
			t.Errorf("url = %s, want the fixture back", obs.URL)
		}
	case "new_tab":
		if len(obs.Tabs) != 2 || obs.ActiveTab != 1 {
			t.Errorf("tabs %+v, active %d; want a second tab, active", obs.Tabs, obs.ActiveTab)
		}
	case "tab_close":
		if len(obs.Tabs) != 1 {
			t.Errorf("tabs %+v; want one left", obs.Tabs)
		}
	case "tab_focus":
		if want := int(args[0].(float64)); obs.ActiveTab != want || len(obs.Tabs) != 3 {
			t.Errorf("active tab %d of %d, want %d of 3", obs.ActiveTab, len(obs.Tabs), want)
		}
	default:
		t.Errorf("no check for BrowserGym's %s: add one to checkBGEffect", fn)
	}
}
