package envcore_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// clientRect reads an element's own getBoundingClientRect.
func clientRect(t *testing.T, env *envcore.Env, id string) [4]float64 {
	t.Helper()
	var r [4]float64
	expr := `(() => { const b = document.querySelector('[data-semantic-id="` + id + `"]').getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; })()`
	if err := env.Evaluate(testCtx(t), expr, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The geometry of every id is its element's own getBoundingClientRect, with
// visibility that accounts for the viewport and for what covers it.
func TestGeometryMatchesTheElements(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/geometry.html")
	obs, err := env.Observe(testCtx(t), envcore.ObserveOptions{Geometry: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := obs.Viewport; v.Width != 1280 || v.Height != 720 || v.DeviceScaleFactor != 1 || v.ScrollY != 0 {
		t.Errorf("viewport %+v, want 1280x720 at scale 1, not scrolled", v)
	}
	ids := append(append([]string{}, obs.Clickable...), obs.Hoverable...)
	if len(obs.ExtraElementProperties) < len(obs.Clickable) || len(obs.Clickable) < 14 {
		t.Fatalf("%d element properties for %d clickable ids", len(obs.ExtraElementProperties), len(obs.Clickable))
	}
	for _, id := range ids {
		p, ok := obs.ExtraElementProperties[id]
		if !ok {
			t.Errorf("no properties for %s", id)
			continue
		}
		want := clientRect(t, env, id)
		for i := range want {
			if math.Abs(p.BBox[i]-want[i]) > 0.01 {
				t.Errorf("%s: bbox %v, getBoundingClientRect %v", id, p.BBox, want)
				break
			}
		}
		if !p.Clickable {
			t.Errorf("%s is in clickable but its properties say not clickable", id)
		}
	}
	for _, c := range []struct {
		id                  string
		visibility, viewMin float64
		covered, marked     bool
	}{
		{"alpha", 1, 1, false, true},
		{"under", 0, 1, true, false},      // in the viewport, under an opaque box
		{"edge", 0.5, 0.5, false, true},   // 80 of its 160 px inside
		{"far-below", 0, 0, false, false}, // below the fold
	} {
		p := obs.ExtraElementProperties[c.id]
		if math.Abs(p.Visibility-c.visibility) > 0.02 || math.Abs(p.InViewport-c.viewMin) > 0.02 || p.Covered != c.covered || p.SetOfMarks != c.marked {
			t.Errorf("%s: %+v, want visibility %v, in_viewport %v, covered %v, set_of_marks %v", c.id, p, c.visibility, c.viewMin, c.covered, c.marked)
		}
	}
	// Without the option, no geometry is computed or sent.
	plain, err := env.Observe(testCtx(t), envcore.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.ExtraElementProperties != nil || plain.Screenshot != nil {
		t.Errorf("geometry or screenshot without being asked for")
	}
}

func decodePNG(t *testing.T, b []byte) *image.RGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode png: %v", err)
	}
	r := image.NewRGBA(img.Bounds())
	for y := r.Rect.Min.Y; y < r.Rect.Max.Y; y++ {
		for x := r.Rect.Min.X; x < r.Rect.Max.X; x++ {
			r.Set(x, y, img.At(x, y))
		}
	}
	return r
}

// checkMark reads a marked element's box back from the set-of-marks
// picture: its four edges are drawn in one colour the plain picture does
// not have there, and its label, a tag of that colour with white digits,
// sits in the box's top-left corner.
func checkMark(t *testing.T, plain, marked *image.RGBA, bbox [4]float64, scale float64, id string) {
	t.Helper()
	x0, y0 := int(math.Round(bbox[0]*scale)), int(math.Round(bbox[1]*scale))
	x1, y1 := int(math.Round((bbox[0]+bbox[2])*scale))-1, int(math.Round((bbox[1]+bbox[3])*scale))-1
	midX, midY := (x0+x1)/2, (y0+y1)/2
	c := marked.RGBAAt(x0, midY)
	for _, p := range []image.Point{{x1, midY}, {midX, y0}, {midX, y1}} {
		if got := marked.RGBAAt(p.X, p.Y); got != c {
			t.Errorf("%s: edge pixel %v is %v, left edge is %v", id, p, got, c)
		}
	}
	if plain.RGBAAt(x0, midY) == c {
		t.Errorf("%s: the left edge has the same colour %v with and without marks", id, c)
	}
	white := 0
	for y := y0; y < y0+14; y++ {
		for x := x0; x < x0+11; x++ {
			switch marked.RGBAAt(x, y) {
			case color.RGBA{255, 255, 255, 255}:
				white++
			case c:
			default:
				t.Fatalf("%s: label pixel (%d,%d) is %v, want the mark's colour or white", id, x, y, marked.RGBAAt(x, y))
			}
		}
	}
	if white < 5 {
		t.Errorf("%s: the label in the box's corner has no digits (%d white pixels)", id, white)
	}
}

// The set-of-marks picture boxes each visible element where it is and
// labels it with a number that maps to its id; marking changes nothing in
// the page.
func TestMarksLineUpWithElements(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/geometry.html")
	var domBefore, domAfter string
	dom := `document.documentElement.outerHTML`
	if err := env.Evaluate(testCtx(t), dom, &domBefore); err != nil {
		t.Fatal(err)
	}
	before, err := env.Observe(testCtx(t), envcore.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := env.Observe(testCtx(t), envcore.ObserveOptions{Marks: true})
	if err != nil {
		t.Fatal(err)
	}
	after, err := env.Observe(testCtx(t), envcore.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Evaluate(testCtx(t), dom, &domAfter); err != nil {
		t.Fatal(err)
	}
	if obs.HTML != before.HTML || after.HTML != before.HTML {
		t.Errorf("the HTML observation differs with marks:\nwithout:\n%s\nwith:\n%s", before.HTML, obs.HTML)
	}
	if domAfter != domBefore {
		t.Errorf("marking changed the page's DOM")
	}
	if obs.ScreenshotScale != 1 {
		t.Errorf("screenshot scale %v, want 1", obs.ScreenshotScale)
	}
	labels := map[string]string{}
	for l, id := range obs.SOMLabels {
		labels[id] = l
	}
	for id, p := range obs.ExtraElementProperties {
		if _, ok := labels[id]; ok != p.SetOfMarks {
			t.Errorf("%s: set_of_marks %v, labelled %v", id, p.SetOfMarks, ok)
		}
	}
	if labels["alpha"] != "1" || labels["under"] != "" || labels["far-below"] != "" {
		t.Errorf("labels: alpha %q (want 1, the first target), under %q and far-below %q (want none)", labels["alpha"], labels["under"], labels["far-below"])
	}
	plain, marked := decodePNG(t, obs.Screenshot), decodePNG(t, obs.ScreenshotSOM)
	if plain.Rect.Dx() != 1280 || plain.Rect.Dy() != 720 || marked.Rect != plain.Rect {
		t.Fatalf("pictures %v and %v, want 1280x720", plain.Rect, marked.Rect)
	}
	for _, id := range []string{"alpha", "golf", "tools.copy", "two"} {
		checkMark(t, plain, marked, obs.ExtraElementProperties[id].BBox, 1, id)
	}
	if !bytes.Equal(plain.Pix, decodePNG(t, mustShot(t, env, envcore.ObserveOptions{Screenshot: true})).Pix) {
		t.Errorf("the plain picture of a marked observation differs from a screenshot without marks")
	}
}

func mustShot(t *testing.T, env *envcore.Env, o envcore.ObserveOptions) []byte {
	t.Helper()
	obs, err := env.Observe(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return obs.Screenshot
}

// max_side shrinks the pictures and the marks follow; JPEG honours its
// quality.
func TestScreenshotSizeAndFormat(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/geometry.html")
	obs, err := env.Observe(testCtx(t), envcore.ObserveOptions{Marks: true, MaxSide: 640})
	if err != nil {
		t.Fatal(err)
	}
	plain, marked := decodePNG(t, obs.Screenshot), decodePNG(t, obs.ScreenshotSOM)
	if plain.Rect.Dx() != 640 || plain.Rect.Dy() != 360 || obs.ScreenshotScale != 0.5 {
		t.Fatalf("picture %v at scale %v, want 640x360 at 0.5", plain.Rect, obs.ScreenshotScale)
	}
	for _, id := range []string{"alpha", "hotel"} {
		checkMark(t, plain, marked, obs.ExtraElementProperties[id].BBox, 0.5, id)
	}

	sizes := map[int]int{}
	for _, q := range []int{30, 90} {
		shot := mustShot(t, env, envcore.ObserveOptions{Screenshot: true, Format: "jpeg", Quality: q})
		img, err := jpeg.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("quality %d: not a JPEG: %v", q, err)
		}
		if img.Bounds().Dx() != 1280 {
			t.Errorf("JPEG %v, want 1280 wide", img.Bounds())
		}
		sizes[q] = len(shot)
	}
	if sizes[30] >= sizes[90] {
		t.Errorf("JPEG quality 30 is %d bytes, quality 90 %d", sizes[30], sizes[90])
	}
	if _, err := env.Observe(testCtx(t), envcore.ObserveOptions{Screenshot: true, Format: "webp"}); err == nil {
		t.Errorf("format webp accepted")
	}
}

// Layout cues say how many children sit side by side where they do (a
// 4-column grid of 8, a flex row of 3) and nothing on a one-column list or
// a flex column; they are the only difference from the plain HTML.
func TestLayoutCues(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	plain := mustReset(t, env, "/geometry.html").HTML
	obs, err := env.Observe(testCtx(t), envcore.ObserveOptions{Layout: true})
	if err != nil {
		t.Fatal(err)
	}
	cues := regexp.MustCompile(` cols="\d+"`)
	if got := cues.FindAllString(obs.HTML, -1); len(got) != 2 {
		t.Errorf("cues %v, want two (the grid and the toolbar):\n%s", got, obs.HTML)
	}
	for _, want := range []string{"<ul cols=\"4\">\n<li><button data-semantic-id=\"alpha\"", `<nav aria-label="Tools" cols="3">`, "<ul>\n<li><a href=\"#one\""} {
		if !strings.Contains(obs.HTML, want) {
			t.Errorf("html lacks %q:\n%s", want, obs.HTML)
		}
	}
	if cues.ReplaceAllString(obs.HTML, "") != plain || cues.MatchString(plain) {
		t.Errorf("layout cues changed more than the cues, or appear unasked")
	}
}
