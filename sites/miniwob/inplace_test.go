package miniwob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/sites/miniwob"
)

// -all compares every task of the package (the sweep that makes
// inPlaceTasks): go test -run TestRestartInPlaceIsAFreshLoad ./sites/miniwob -args -all
var all = flag.Bool("all", false, "compare every MiniWoB task, not a sample, and print the tasks that restart in place")

// sample is the suite's share of the sweep: tasks of each kind, listed and
// not (forms, a drag, a spinner, checkboxes, jQuery UI tabs, a dialog that
// reloads).
var sample = []string{"click-button", "click-test", "enter-text", "click-checkboxes", "focus-text", "use-spinner", "drag-items", "click-tab", "click-dialog"}

// seeds are the resets compared: the environment restarting in place first
// plays an episode of seeds[0], then restarts at each next seed.
var seeds = []int64{1, 7, 42}

// servedPages loads the package's pages, serves them on a loopback
// listener and launches a browser: the pages, their URL and the browser,
// all closed when t ends.
func servedPages(t *testing.T) (*miniwob.Pages, string, *envcore.Browser) {
	t.Helper()
	pages, err := miniwob.Load(miniwobDir(t))
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.FileServer(http.Dir(pages.Dir)))
	t.Cleanup(site.Close)
	browser, err := envcore.Launch(context.Background(), zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = browser.Close() })
	return pages, site.URL, browser
}

// miniwobDir is the package's html directory: $WEBSERV_MINIWOB, else where
// the repository's .venv (pip install -e '.[miniwob]') has it.
func miniwobDir(t *testing.T) string {
	if d := os.Getenv("WEBSERV_MINIWOB"); d != "" {
		return d
	}
	py, _ := filepath.Abs("../../.venv/bin/python")
	d, err := miniwob.FindDir(context.Background(), py)
	if err != nil || d == "" {
		t.Fatalf("MiniWoB++'s pages are needed (%v): set WEBSERV_MINIWOB, or python3 -m venv .venv && .venv/bin/pip install '.[miniwob]' in the repository", err)
	}
	return d
}

// episodeView is what an agent and a trainer get from an episode's start
// and one scripted action: compared between a fresh load and an in-place
// restart.
type episodeView struct {
	Goal      string
	Obs       string // hash of the first observation, but for its screenshot
	Shot      image.Image
	Action    string // the scripted action's target
	AfterObs  string // hash of the observation after it, but for its screenshot
	AfterShot image.Image
	Done      bool
	Raw       float64
	Reason    any
}

func (v episodeView) diff(w episodeView) string {
	switch {
	case v.Goal != w.Goal:
		return fmt.Sprintf("goal %q != %q", v.Goal, w.Goal)
	case v.Obs != w.Obs:
		return "first observation differs"
	case !samePicture(v.Shot, w.Shot):
		return "first screenshot differs"
	case v.Action != w.Action:
		return fmt.Sprintf("scripted action %q != %q", v.Action, w.Action)
	case v.AfterObs != w.AfterObs:
		return "observation after the action differs"
	case !samePicture(v.AfterShot, w.AfterShot):
		return "screenshot after the action differs"
	case v.Done != w.Done || v.Raw != w.Raw || fmt.Sprint(v.Reason) != fmt.Sprint(w.Reason):
		return fmt.Sprintf("reward after the action: done %v raw %v (%v) != done %v raw %v (%v)", v.Done, v.Raw, v.Reason, w.Done, w.Raw, w.Reason)
	}
	return ""
}

var observe = envcore.ObserveOptions{AXTree: true, BrowserGym: true, Geometry: true, Screenshot: true}

// hashObs hashes what the agent sees, but for the raw CDP trees
// (AXTreeObject, DOMObject), whose node and frame ids differ between any
// two loads of a page (their text forms, AXTree and HTML, and the element
// properties are kept), and for the screenshot, compared by samePicture.
func hashObs(t *testing.T, obs envcore.Observation) string {
	obs.AXTreeObject, obs.DOMObject, obs.Screenshot = nil, nil, nil
	b, err := json.Marshal(obs)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// play finishes an episode view: the scripted action (a click on the
// first clickable element, the submit button where there is one) and the
// page's reward after it. MINIWOB_DUMP=DIR writes each first observation
// to DIR, to diff two that differ.
func play(ctx context.Context, t *testing.T, env *envcore.Env, v *episodeView, obs envcore.Observation) {
	v.Obs, v.Shot = hashObs(t, obs), shotOf(t, obs)
	if d := os.Getenv("MINIWOB_DUMP"); d != "" {
		b, _ := json.MarshalIndent(obs, "", " ")
		_ = os.WriteFile(fmt.Sprintf("%s/%p-%d.json", d, env, time.Now().UnixNano()), b, 0o644)
	}
	if len(obs.Clickable) > 0 {
		v.Action = obs.Clickable[0]
		for _, id := range obs.Clickable {
			if strings.Contains(id, "submit") {
				v.Action = id
				break
			}
		}
		after, _, err := env.Step(ctx, envcore.Action{Type: envcore.Click, Target: v.Action})
		if err != nil {
			t.Fatalf("click %s: %v", v.Action, err)
		}
		v.AfterObs, v.AfterShot = hashObs(t, after), shotOf(t, after)
	}
	var st miniwob.State
	if err := env.Evaluate(ctx, miniwob.StateScript(), &st); err != nil {
		t.Fatalf("read the state: %v", err)
	}
	v.Done, v.Raw, v.Reason = st.Done, st.RawReward, st.Reason
}

// shotOf decodes an observation's screenshot.
func shotOf(t *testing.T, obs envcore.Observation) image.Image {
	img, err := png.Decode(bytes.NewReader(obs.Screenshot))
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	return img
}

// samePicture reports whether two screenshots are the same picture: the
// same size, and no channel of any pixel more than one level apart.
// Chromium's rasterizer, drawing a page it has drawn before, may put a few
// anti-aliased pixels of an unchanged element one level off (an in-place
// restart of click-tab: 11 pixels, by 1); a fresh load of the same page
// does not, so the level of tolerance is that and no more.
func samePicture(a, b image.Image) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Bounds() != b.Bounds() {
		return false
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			for _, d := range [][2]uint32{{r1, r2}, {g1, g2}, {b1, b2}, {a1, a2}} {
				if max(d[0], d[1])-min(d[0], d[1]) > 0x101 { // one 8-bit level
					return false
				}
			}
		}
	}
	return true
}

func pageSeed(t *testing.T, seed int64) int64 {
	p, err := miniwob.PageSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A reset in place gives what a fresh load gives: for each task, an
// environment that loads the page afresh at each seed and one that plays
// the first seed's episode and then restarts in place at each next seed
// see the same goal, the same observation, and the same reward and
// observation after the same action. The tasks listed in place
// (miniwob.InPlace) must agree; the others are the ones that reload, and
// the sweep (-all) prints which tasks agree.
func TestRestartInPlaceIsAFreshLoad(t *testing.T) {
	ctx := context.Background()
	pages, siteURL, browser := servedPages(t)
	cfg := envcore.Config{Observe: observe}
	fresh, inplace := browser.NewEnv(cfg), browser.NewEnv(cfg)
	defer fresh.Close()
	defer inplace.Close()

	names := sample
	if *all {
		names = pages.Tasks
	}
	var cpu0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	began := time.Now()
	var agree, reload []string
	for _, name := range names {
		url := miniwob.URL(siteURL, name)
		why := ""
		var goal any
		obs, _, err := inplace.ResetWith(ctx, url, envcore.ResetOptions{Start: miniwob.StartScript(pageSeed(t, seeds[0]), miniwob.MaxTimeMs), StartResult: &goal})
		if err != nil {
			t.Fatalf("%s: a fresh load: %v", name, err)
		}
		var v episodeView
		play(ctx, t, inplace, &v, obs)
		for _, seed := range seeds[1:] {
			ps := pageSeed(t, seed)
			var want episodeView
			obs, _, err := fresh.ResetWith(ctx, url, envcore.ResetOptions{Start: miniwob.StartScript(ps, miniwob.MaxTimeMs), StartResult: &goal})
			if err != nil {
				t.Fatalf("%s seed %d: a fresh load: %v", name, seed, err)
			}
			want.Goal, _ = goal.(string)
			play(ctx, t, fresh, &want, obs)

			var got episodeView
			obs, _, ok, err := inplace.RestartInPlace(ctx, miniwob.RestartScript(ps, miniwob.MaxTimeMs), &goal)
			if err != nil {
				t.Fatalf("%s seed %d: restart in place: %v", name, seed, err)
			}
			if !ok {
				why = fmt.Sprintf("seed %d: the page refused to restart in place", seed)
				break
			}
			got.Goal, _ = goal.(string)
			play(ctx, t, inplace, &got, obs)
			if d := want.diff(got); d != "" {
				why = fmt.Sprintf("seed %d: %s", seed, d)
				break
			}
		}
		if why == "" {
			agree = append(agree, name)
		} else {
			reload = append(reload, name+": "+why)
		}
		if why != "" && miniwob.InPlace(name) {
			t.Errorf("%s restarts in place but is not a fresh load: %s", name, why)
		}
	}
	var cpu1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	cpu := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
	t.Logf("%d tasks x %d seeds in %s (server CPU %s; the browser's is not counted)", len(names), len(seeds), time.Since(began).Round(time.Millisecond), cpu.Round(time.Millisecond))
	t.Logf("these %d tasks reload:\n  %s", len(reload), strings.Join(reload, "\n  "))
	if *all {
		fmt.Printf("var inPlaceTasks = []string{\n")
		for _, n := range agree {
			fmt.Printf("\t%q,\n", n)
		}
		fmt.Printf("}\n")
	}
}
