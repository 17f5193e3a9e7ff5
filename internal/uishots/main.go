// Command uishots takes the screenshots of docs/ui.md: it runs a server
// with the bundled shop in this process, plays a few episodes through the
// server, and photographs the server's own /ui pages with rod.
//
//	go run ./internal/uishots -bin bin/webserv -out docs
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/envcore/chromium"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/trajectory"
)

func main() {
	bin := flag.String("bin", "bin/webserv", "the webserv program (runs the bundled shop)")
	out := flag.String("out", "docs", "where the PNGs go")
	flag.Parse()
	if err := run(*bin, *out); err != nil {
		fmt.Fprintln(os.Stderr, "uishots:", err)
		os.Exit(1)
	}
}

func run(bin, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work, err := os.MkdirTemp("", "uishots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	exe, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	sites, sets, err := catalog.Bundled(ctx, bundled.Options{DataDir: filepath.Join(work, "shop-data"), Command: []string{exe, "shop"}}, nil)
	if err != nil {
		return err
	}
	local, err := hosting.NewLocal(nil, filepath.Join(work, "instances"))
	if err != nil {
		return err
	}
	defer local.Close(context.Background())
	f := catalog.New(sites, []hosting.Backend{local}, nil)
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	router := netroute.New(zap.NewNop(), netroute.Options{})
	defer router.Close()
	b, err := envcore.Launch(ctx, zap.NewNop(), server.Routed(envcore.BrowserOptions{}, router))
	if err != nil {
		return err
	}
	defer b.Close()
	dir := filepath.Join(work, "trajectories")
	srv := server.New(nil, b, f, server.Config{TrajectoryDir: dir, Env: envcore.Config{IdleWindow: 300 * time.Millisecond}})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	cl, err := dial(ctx, hs.URL)
	if err != nil {
		return err
	}
	defer cl.close()

	// Two recorded oracle episodes and one that fails.
	for _, id := range []string{"shopping.0", "shopping.20", "cms.5"} {
		if err := playOracle(ctx, cl, id); err != nil {
			return err
		}
	}
	if err := playWrong(ctx, cl, "shopping.7"); err != nil {
		return err
	}
	// Live: one environment mid-episode, one waiting for a verdict.
	busy, err := cl.call(ctx, "make", "", map[string]any{"site": "shopping", "task": "shopping.40"})
	if err != nil {
		return err
	}
	t40, err := task("shopping.40")
	if err != nil {
		return err
	}
	for _, a := range t40.Oracle[:2] {
		if _, err := cl.call(ctx, "step", busy["env"].(string), map[string]any{"action": a}); err != nil {
			return err
		}
	}
	t35, err := task("cms.35")
	if err != nil {
		return err
	}
	asked, err := cl.call(ctx, "make", "", map[string]any{"site": "cms", "task": "cms.35", "approve": true, "approve_timeout_ms": 60000})
	if err != nil {
		return err
	}
	askEnv := asked["env"].(string)
	cl2, err := dial(ctx, hs.URL)
	if err != nil {
		return err
	}
	defer cl2.close()
	go func() {
		_, _ = cl2.call(ctx, "step", askEnv, map[string]any{"action": t35.Oracle[0]})
	}()

	viewer, err := launchViewer()
	if err != nil {
		return err
	}
	defer viewer.Close()
	p, err := viewer.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		return err
	}
	_ = p.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: 1400, Height: 1000, DeviceScaleFactor: 1})
	if err := p.Navigate(hs.URL + "/ui/?env=" + askEnv); err != nil {
		return err
	}
	_ = p.WaitLoad()
	if err := p.Timeout(30 * time.Second).Wait(rod.Eval(`() => !document.getElementById('pending').hidden && (document.getElementById('screen').src || '').startsWith('data:')`)); err != nil {
		return fmt.Errorf("live view: %w", err)
	}
	time.Sleep(time.Second) // the outlined frame
	if err := shot(p, filepath.Join(out, "ui-live.png")); err != nil {
		return err
	}
	_ = p.MustElement("#comment").Input("start from the order list, not the dashboard")
	p.MustElement("#reject").MustClick()

	if err := p.Navigate(hs.URL + "/ui/replay.html"); err != nil {
		return err
	}
	_ = p.WaitLoad()
	if err := p.Timeout(30 * time.Second).Wait(rod.Eval(`() => document.querySelectorAll('#episodes tbody tr').length >= 4`)); err != nil {
		return fmt.Errorf("replayer list: %w", err)
	}
	if err := shot(p, filepath.Join(out, "ui-replay-list.png")); err != nil {
		return err
	}
	files, err := trajectory.Find(dir)
	if err != nil {
		return err
	}
	var pick string
	for _, fpath := range files {
		ep, err := trajectory.Read(fpath)
		if err == nil && ep.Head.TaskID == "shopping.20" {
			pick, _ = filepath.Rel(dir, fpath)
		}
	}
	if err := p.Navigate(hs.URL + "/ui/replay.html?ep=" + url.QueryEscape(pick) + "#step=2"); err != nil {
		return err
	}
	_ = p.WaitLoad()
	if err := p.Timeout(30 * time.Second).Wait(rod.Eval(`() => { const i = document.getElementById('shot'); return i.naturalWidth > 0 && !document.getElementById('target').hidden }`)); err != nil {
		return fmt.Errorf("replayer step: %w", err)
	}
	if err := shot(p, filepath.Join(out, "ui-replay-step.png")); err != nil {
		return err
	}
	// The same step's requests on its timeline.
	if err := p.Timeout(30 * time.Second).Wait(rod.Eval(`() => document.querySelectorAll('#timeline .tl-req').length > 0`)); err != nil {
		return fmt.Errorf("replayer network: %w", err)
	}
	net, err := p.Element("#net")
	if err != nil {
		return err
	}
	png, err := net.Screenshot(proto.PageCaptureScreenshotFormatPng, 0)
	if err != nil {
		return err
	}
	fmt.Println("wrote", filepath.Join(out, "ui-replay-network.png"))
	return os.WriteFile(filepath.Join(out, "ui-replay-network.png"), png, 0o644)
}

func shot(p *rod.Page, path string) error {
	png, err := p.Screenshot(false, &proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng})
	if err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return os.WriteFile(path, png, 0o644)
}

func task(id string) (tasks.Task, error) {
	site, _, _ := cut(id)
	raw, err := shop.TaskFile(site)
	if err != nil {
		return tasks.Task{}, err
	}
	set, err := tasks.ParseTasks(raw, site)
	if err != nil {
		return tasks.Task{}, err
	}
	for _, t := range set.Tasks {
		if fmt.Sprintf("%s.%d", site, t.ID) == id {
			return t, nil
		}
	}
	return tasks.Task{}, fmt.Errorf("no task %s", id)
}

func cut(id string) (string, string, bool) {
	for i := range id {
		if id[i] == '.' {
			return id[:i], id[i+1:], true
		}
	}
	return id, "", false
}

func playOracle(ctx context.Context, cl *client, id string) error {
	t, err := task(id)
	if err != nil {
		return err
	}
	return play(ctx, cl, id, t.Oracle)
}

func playWrong(ctx context.Context, cl *client, id string) error {
	t, err := task(id)
	if err != nil {
		return err
	}
	return play(ctx, cl, id, append([]string{`click("no-such-link")`}, t.Wrong...))
}

func play(ctx context.Context, cl *client, id string, actions []string) error {
	site, _, _ := cut(id)
	made, err := cl.call(ctx, "make", "", map[string]any{"site": site, "task": id, "record": map[string]any{"screenshots": true}})
	if err != nil {
		return err
	}
	env := made["env"].(string)
	for _, a := range actions {
		if _, err := cl.call(ctx, "step", env, map[string]any{"action": a}); err != nil {
			return fmt.Errorf("%s %s: %w", id, a, err)
		}
	}
	_, err = cl.call(ctx, "close", env, nil)
	return err
}

func launchViewer() (*rod.Browser, error) {
	l := launcher.New().Bin(chromium.Bin(chromium.Options{})).Headless(true).Leakless(true).
		Set("disable-background-networking").Set("no-first-run").Set("disable-gpu").Set("hide-scrollbars")
	if os.Geteuid() == 0 {
		l.Set("no-sandbox")
	}
	u, err := l.Launch()
	if err != nil {
		return nil, err
	}
	b := rod.New().ControlURL(u)
	return b, b.Connect()
}
