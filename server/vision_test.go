package server_test

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/server"
)

// pointerPolicy turns an oracle's element actions into what a computer-use
// policy does: it finds the element's box in the last observation's
// extra_element_properties and clicks and types at coordinates, scrolling
// first when the box is outside the viewport.
type pointerPolicy struct {
	cl  *client
	env string
	obs map[string]any
}

var seeGeometry = map[string]any{"geometry": true}

func (p *pointerPolicy) step(t *testing.T, action string) map[string]any {
	t.Helper()
	res := p.cl.call("step", p.env, map[string]any{"action": action, "observe": seeGeometry})
	info := res["info"].(map[string]any)
	if e, ok := info["action_error"]; ok {
		t.Fatalf("%s: %v", action, e)
	}
	p.obs = obsOf(res)
	return res
}

// point is the centre of id's box, scrolled into the viewport.
func (p *pointerPolicy) point(t *testing.T, id string) (float64, float64) {
	t.Helper()
	for tries := 0; ; tries++ {
		props, _ := p.obs["extra_element_properties"].(map[string]any)
		g, ok := props[id].(map[string]any)
		if !ok {
			t.Fatalf("no geometry for %s in %v", id, p.obs["url"])
		}
		box := g["bbox"].([]any)
		x, y := box[0].(float64)+box[2].(float64)/2, box[1].(float64)+box[3].(float64)/2
		h := p.obs["viewport"].(map[string]any)["height"]
		if y >= 0 && y < float64(toUint(h)) || tries == 2 {
			return x, y
		}
		p.step(t, fmt.Sprintf("scroll(0, %.0f)", y-200))
	}
}

// play runs one oracle action at coordinates.
func (p *pointerPolicy) play(t *testing.T, action string) map[string]any {
	t.Helper()
	a, err := envcore.ParseAction(action)
	if err != nil {
		t.Fatal(err)
	}
	click := func() {
		x, y := p.point(t, a.Target)
		p.step(t, fmt.Sprintf("mouse_click(%.2f, %.2f)", x, y))
	}
	switch {
	case a.Type == envcore.Click:
		click()
		return nil
	case a.Type == envcore.Type && a.Target != "":
		click()
		p.step(t, `keyboard_press("Control+a")`)
		res := p.step(t, envcore.Action{Type: envcore.KeyboardType, Text: a.Text}.String())
		if a.Enter {
			res = p.step(t, `keyboard_press("Enter")`)
		}
		return res
	case a.Type == envcore.Press && a.Target != "":
		click()
		return p.step(t, envcore.Action{Type: envcore.Press, Key: a.Key}.String())
	case a.Type == envcore.Terminate:
		return p.step(t, action)
	}
	t.Fatalf("the pointer policy has no way to play %s", action)
	return nil
}

// Coordinate actions alone, aimed with the geometry of the observation,
// solve bundled shop tasks end to end: searching, following results and
// menus, and answering, with the reward the task's evaluator gives.
func TestCoordinateClicksSolveShopTasks(t *testing.T) {
	t.Parallel()
	cl := shopServer(t, server.Config{}, nil)
	byID := map[string][]string{}
	for _, bt := range bundledTasks(t) {
		byID[fmt.Sprintf("%s.%d", bt.site, bt.task.ID)] = bt.task.Oracle
	}
	for _, id := range []string{"shopping.0", "shopping.25", "shopping.30"} {
		made := cl.call("make", "", map[string]any{"site": "shopping", "task": id, "observe": seeGeometry})
		p := &pointerPolicy{cl: cl, env: made["env"].(string), obs: obsOf(made)}
		var last map[string]any
		for _, action := range byID[id] {
			last = p.play(t, action)
		}
		if last["terminated"] != true || last["reward"] != 1.0 {
			t.Errorf("%s by coordinates (oracle %v): reward %v, terminated %v", id, byID[id], last["reward"], last["terminated"])
		}
		cl.call("close", p.env, nil)
	}
}

// The observe options go through the protocol: marks, format, size, layout
// cues; an unknown option is refused with the list of known ones.
func TestObserveOptionsOnTheWire(t *testing.T) {
	t.Parallel()
	cl := shopServer(t, server.Config{}, nil)
	env := cl.call("make", "", map[string]any{"site": "shopping"})["env"].(string)
	obs := obsOf(cl.call("observe", env, map[string]any{"observe": map[string]any{"marks": true, "format": "jpeg", "quality": 60, "max_side": 800, "layout": true}}))
	for _, k := range []string{"screenshot", "screenshot_som"} {
		img, err := jpeg.Decode(bytes.NewReader(obs[k].([]byte)))
		if err != nil || img.Bounds().Dx() != 800 {
			t.Errorf("%s: %v %v, want an 800 pixel wide JPEG", k, err, img)
		}
	}
	labels := obs["som_labels"].(map[string]any)
	props := obs["extra_element_properties"].(map[string]any)
	if len(labels) < 10 {
		t.Errorf("%d labels", len(labels))
	}
	for l, id := range labels {
		if g, ok := props[id.(string)].(map[string]any); !ok || g["set_of_marks"] != true {
			t.Errorf("label %s names %v, which has properties %v", l, id, g)
		}
	}
	if !strings.Contains(obs["html"].(string), `<ul cols="`) || obs["screenshot_scale"] != 0.625 {
		t.Errorf("layout cues or scale missing: scale %v", obs["screenshot_scale"])
	}
	e := cl.fail("observe", env, map[string]any{"observe": map[string]any{"marks": true, "colour": "red"}}, "bad_args")
	if !strings.Contains(fmt.Sprint(e["message"]), "max_side") {
		t.Errorf("unknown observe option: %v", e)
	}
	cl.fail("observe", env, map[string]any{"observe": map[string]any{"format": "gif"}}, "bad_args")
}

// Layout cues mark the shop's product grid with how many products sit on a
// row, and leave a single-column list alone; with them off the HTML is the
// same but for the cues.
func TestLayoutCuesOnTheShop(t *testing.T) {
	t.Parallel()
	cl := shopServer(t, server.Config{}, nil)
	made := cl.call("make", "", map[string]any{"site": "shopping", "task": "shopping.15"})
	env := made["env"].(string)
	withCues := map[string]any{"observe": map[string]any{"layout": true}}
	cues := regexp.MustCompile(` cols="(\d+)"`)
	home := obsOf(cl.call("observe", env, withCues))["html"].(string)
	plain := obsOf(made)["html"].(string)
	if cues.MatchString(plain) {
		t.Errorf("layout cues without being asked for")
	}
	if cues.ReplaceAllString(home, "") != plain {
		t.Errorf("layout cues changed more than the cues:\n%s\n----\n%s", home, plain)
	}
	grid := regexp.MustCompile(`<ul cols="(\d+)">\s*<li>`).FindStringSubmatch(home)
	if grid == nil {
		t.Fatalf("the product grid has no cols cue:\n%s", home)
	}
	if n, _ := strconv.Atoi(grid[1]); grid == nil || n < 2 {
		t.Fatalf("the product grid has no cols cue:\n%s", home)
	}
	t.Logf("cues %v", regexp.MustCompile(`<[a-z]+[^>]* cols="\d+"`).FindAllString(home, -1))
	t.Logf("product grid: cols=%s; home page %d chars plain, %d with cues", grid[1], len(plain), len(home))
	base := strings.TrimSuffix(obsOf(made)["url"].(string), "/")
	if dir := os.Getenv("WEBSERV_LAYOUT_DUMP"); dir != "" {
		// The pages bench/README.md counts the cues' tokens on.
		for _, page := range []string{"/", "/category/clothing", "/search?q=kestrel", "/account/orders"} {
			cl.call("step", env, map[string]any{"action": `goto("` + base + page + `")`})
			for name, o := range map[string]any{"plain": nil, "layout": withCues} {
				args := map[string]any{}
				if o != nil {
					args = o.(map[string]any)
				}
				html := obsOf(cl.call("observe", env, args))["html"].(string)
				f := filepath.Join(dir, strings.Trim(regexp.MustCompile(`\W+`).ReplaceAllString(page, "-"), "-")+"."+name+".html")
				if err := os.WriteFile(f, []byte(html), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	res := cl.call("step", env, map[string]any{"action": `goto("` + base + `/account/addresses")`, "observe": withCues["observe"]})
	html := obsOf(res)["html"].(string)
	if !strings.Contains(html, "<ul>\n<li>") || cues.MatchString(regexp.MustCompile(`(?s)<ul>\n<li>.*</ul>`).FindString(html)) {
		t.Errorf("the address list (one column) has a cue or is missing:\n%s", html)
	}
}
