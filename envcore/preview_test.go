package envcore_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// The preview outlines an action's target where a screenshot sees it, and
// leaves nothing in the page once removed.
func TestPreviewOutlinesTarget(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	obs := mustReset(t, env, "/a.html")
	if len(obs.Clickable) == 0 {
		t.Fatalf("no clickable element on a.html: %s", obs.HTML)
	}
	ctx := testCtx(t)
	act := envcore.Action{Type: envcore.Click, Target: obs.Clickable[0]}
	measured, err := env.TargetBox(ctx, act)
	if err != nil || measured == nil || measured.Width <= 0 {
		t.Fatalf("TargetBox = %+v, %v", measured, err)
	}
	box, err := env.Preview(ctx, act)
	if err != nil || box == nil || box.Width <= 0 {
		t.Fatalf("Preview = %+v, %v", box, err)
	}
	if *box != *measured {
		t.Errorf("the outlined box %+v is not where TargetBox measured %+v", *box, *measured)
	}
	shot, err := env.Observe(ctx, envcore.ObserveOptions{Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := orangePixels(t, shot.Screenshot); n < 50 {
		t.Errorf("the screenshot during the preview has %d outline pixels; want the target outlined", n)
	}
	if err := env.Unpreview(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := env.Observe(ctx, envcore.ObserveOptions{Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	var left int
	if err := env.Evaluate(ctx, `document.querySelectorAll('[data-webserv-preview]').length`, &left); err != nil || left != 0 {
		t.Errorf("preview elements left in the page: %d, %v", left, err)
	}
	if after.HTML != obs.HTML || strings.Contains(after.HTML, "preview") {
		t.Errorf("the observation changed after a preview:\n%s\n---\n%s", obs.HTML, after.HTML)
	}
	if n := orangePixels(t, after.Screenshot); n != 0 {
		t.Errorf("%d outline pixels remain after Unpreview", n)
	}
	// No target, no outline; a missing one is left to the action to report.
	if b, err := env.Preview(ctx, envcore.Action{Type: envcore.Click, Target: "no-such-id"}); b != nil || err != nil {
		t.Errorf("Preview(missing) = %+v, %v", b, err)
	}
	if b, err := env.Preview(ctx, envcore.Action{Type: envcore.Back}); b != nil || err != nil {
		t.Errorf("Preview(back) = %+v, %v", b, err)
	}
}

// A viewer of the live picture has been given a picture with the outline
// by the time Preview returns, however the browser's own frames went.
func TestPreviewReachesTheLivePicture(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	obs := mustReset(t, env, "/a.html")
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var mu sync.Mutex
	var last []byte
	first := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- env.Screencast(ctx, envcore.ScreencastOptions{}, func(jpeg []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if last == nil {
				close(first)
			}
			last = jpeg
			return nil
		})
	}()
	select {
	case <-first:
	case err := <-errc:
		t.Fatalf("the screencast ended before its first frame: %v", err)
	}
	if box, err := env.Preview(ctx, envcore.Action{Type: envcore.Click, Target: obs.Clickable[0]}); err != nil || box == nil {
		t.Fatalf("Preview = %+v, %v", box, err)
	}
	mu.Lock()
	shown := last
	mu.Unlock()
	img, err := jpeg.Decode(bytes.NewReader(shown))
	if err != nil {
		t.Fatal(err)
	}
	if n := countNear(img, 40); n < 40 {
		t.Errorf("the live picture's newest frame when Preview returned has %d outline pixels; want the target outlined", n)
	}
	if err := env.Unpreview(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("Screencast ended with %v", err)
	}
}

// orangePixels counts pixels of the preview's outline colour (#f59e0b).
func orangePixels(t *testing.T, b []byte) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return countNear(img, 1)
}

// countNear counts the pixels of img within tol of the outline colour in
// each channel (a JPEG needs a tolerance, a PNG none).
func countNear(img image.Image, tol int) int {
	near := func(v uint32, want int) bool { d := int(v>>8) - want; return d > -tol && d < tol }
	n := 0
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if near(cr, 0xf5) && near(cg, 0x9e) && near(cb, 0x0b) {
				n++
			}
		}
	}
	return n
}

// A screencast sends JPEG frames of the page while it runs, and a page
// change reaches it.
func TestScreencast(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	frames := 0
	errc := make(chan error, 1)
	got := make(chan struct{}, 16)
	go func() {
		errc <- env.Screencast(ctx, envcore.ScreencastOptions{Interval: 50 * time.Millisecond}, func(jpeg []byte) error {
			if len(jpeg) < 3 || jpeg[0] != 0xff || jpeg[1] != 0xd8 {
				t.Errorf("frame is not a JPEG: % x", jpeg[:min(4, len(jpeg))])
			}
			frames++
			select {
			case got <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("no screencast frame within 20s")
	}
	if _, _, err := env.StepText(ctx, `goto [`+site.URL+`/b.html]`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("no frame after the page changed")
	}
	cancel()
	if err := <-errc; err != context.Canceled && err != context.DeadlineExceeded {
		t.Errorf("Screencast ended with %v", err)
	}
}

// Two viewers share the page's one screencast: each gets a first picture
// at once, and when one leaves the other still sees the page change.
func TestScreencastTwoViewers(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	ctx := testCtx(t)
	watch := func(ctx context.Context) (chan struct{}, chan error) {
		got, done := make(chan struct{}, 64), make(chan error, 1)
		go func() {
			done <- env.Screencast(ctx, envcore.ScreencastOptions{Interval: 20 * time.Millisecond}, func([]byte) error {
				select {
				case got <- struct{}{}:
				default:
				}
				return nil
			})
		}()
		return got, done
	}
	ctxA, stopA := context.WithCancel(ctx)
	gotA, doneA := watch(ctxA)
	gotB, doneB := watch(ctx)
	for _, got := range []chan struct{}{gotA, gotB} {
		select {
		case <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("a viewer got no first picture")
		}
	}
	stopA()
	<-doneA
	for len(gotB) > 0 {
		<-gotB
	}
	if _, _, err := env.StepText(ctx, `goto [`+site.URL+`/b.html]`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gotB:
	case <-time.After(20 * time.Second):
		t.Fatal("the remaining viewer got no frame after the other left and the page changed")
	}
	_ = doneB
}

// A multi-action step's preview outlines every action's target at once,
// each labelled with its place in the step; Unpreview removes them all.
func TestPreviewStepOutlinesEveryActionsTarget(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	obs := mustReset(t, env, "/inputs.html")
	if len(obs.Clickable) < 2 {
		t.Fatalf("inputs.html has %d clickable elements; want 2: %s", len(obs.Clickable), obs.HTML)
	}
	ctx := testCtx(t)
	acts := []envcore.Action{
		{Type: envcore.Click, Target: obs.Clickable[0]},
		{Type: envcore.Back},
		{Type: envcore.Click, Target: obs.Clickable[1]},
	}
	boxes, err := env.PreviewStep(ctx, acts)
	if err != nil || len(boxes) != 3 || boxes[0] == nil || boxes[1] != nil || boxes[2] == nil {
		t.Fatalf("PreviewStep = %v, %v; want boxes for the two clicks, none for back", boxes, err)
	}
	var labels []string
	if err := env.Evaluate(ctx, `[...document.querySelectorAll('[data-webserv-preview]')].map(e => e.textContent)`, &labels); err != nil {
		t.Fatal(err)
	}
	want := []string{"1/3 " + acts[0].String(), "3/3 " + acts[2].String()}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Errorf("outlines labelled %q; want %q", labels, want)
	}
	if err := env.Unpreview(ctx); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := env.Evaluate(ctx, `document.querySelectorAll('[data-webserv-preview]').length`, &left); err != nil || left != 0 {
		t.Errorf("preview elements left in the page: %d, %v", left, err)
	}
}
