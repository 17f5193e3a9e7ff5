package envcore_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// center is the middle of an element's box, from the observation's
// geometry, as a coordinate agent would compute it.
func center(t *testing.T, obs envcore.Observation, id string) (float64, float64) {
	t.Helper()
	p, ok := obs.ExtraElementProperties[id]
	if !ok {
		t.Fatalf("no geometry for %s", id)
	}
	return p.BBox[0] + p.BBox[2]/2, p.BBox[1] + p.BBox[3]/2
}

func text(t *testing.T, env *envcore.Env, expr string) string {
	t.Helper()
	var s string
	if err := env.Evaluate(testCtx(t), expr, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Coordinate actions act where the geometry says an element is, as real
// input, and the step waits for what they cause.
func TestCoordinateActions(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{Observe: envcore.ObserveOptions{Geometry: true}})
	obs := mustReset(t, env, "/geometry.html")
	clicked := `document.getElementById('clicked').textContent`
	at := func(name, id string, extra string) string {
		x, y := center(t, obs, id)
		return name + "(" + ftoa(x) + ", " + ftoa(y) + extra + ")"
	}

	obs = mustAct(t, env, at("mouse_click", "bravo", ""))
	if got := text(t, env, clicked); got != "clicked Bravo" {
		t.Errorf("mouse_click on Bravo: %q", got)
	}
	obs = mustAct(t, env, at("mouse_click", "echo", `, button="middle"`))
	if got := text(t, env, clicked); got != "button 1 on Echo" {
		t.Errorf("middle click on Echo: %q", got)
	}
	obs = mustAct(t, env, at("mouse_dblclick", "charlie", ""))
	if got := text(t, env, clicked); got != "double-clicked Charlie" {
		t.Errorf("mouse_dblclick on Charlie: %q", got)
	}
	// The click starts a 600 ms timer (more than the idle window): the step
	// returns after it has run.
	_, info := mustStep(t, env, at("mouse_click", "delta", ""))
	if got := text(t, env, clicked); got != "late Delta" || info.SettleReason != "drained" {
		t.Errorf("mouse_click on Delta: %q, settle %q; want the timer's text, drained", got, info.SettleReason)
	}
	obs = mustAct(t, env, `mouse_move(640, 300)`)
	if got := text(t, env, `document.getElementById('moved').textContent`); got != "moved to 640,300" {
		t.Errorf("mouse_move: %q", got)
	}
	obs = mustAct(t, env, at("mouse_click", "name", ""))
	obs = mustAct(t, env, `keyboard_type("Ada Lovelace")`)
	if obs.Focused != "name" || inputValue(obs, "name") != "Ada Lovelace" {
		t.Errorf("keyboard_type after a click on the field: focused %q, value %q", obs.Focused, inputValue(obs, "name"))
	}
	// Drag the slider's thumb from its left end to past its right end.
	vol := obs.ExtraElementProperties["volume"].BBox
	obs = mustAct(t, env, "mouse_drag_and_drop("+ftoa(vol[0]+4)+", "+ftoa(vol[1]+vol[3]/2)+", "+ftoa(vol[0]+vol[2]+20)+", "+ftoa(vol[1]+vol[3]/2)+")")
	if v := inputValue(obs, "volume"); v != "100" {
		t.Errorf("slider after the drag: %q, want 100", v)
	}
	obs = mustAct(t, env, `scroll(0, 500)`)
	if obs.Viewport.ScrollY != 500 {
		t.Errorf("scroll(0, 500): scroll_y %v", obs.Viewport.ScrollY)
	}
	if p, a := obs.ExtraElementProperties["far-below"], obs.ExtraElementProperties["alpha"]; p.BBox[1] != 1000 || a.BBox[1] != -480 || a.InViewport != 0 {
		t.Errorf("after scrolling, far-below is at %v and alpha at %v (in viewport %v), want y 1000 and -480 (0)", p.BBox, a.BBox, a.InViewport)
	}
	_, info = mustStep(t, env, `mouse_click(100, 720)`)
	if info.ActionErrorCode != "out_of_viewport" || !strings.Contains(info.ActionError, "scroll") {
		t.Errorf("a click below the viewport: %s %q", info.ActionErrorCode, info.ActionError)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
