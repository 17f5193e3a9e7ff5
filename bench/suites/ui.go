package suites

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/envcore/chromium"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
)

// UIOptions configure the ui suite: the step latency a client sees through
// the protocol from a server without its web UI, the same server with the
// UI and nobody watching, and with one person's browser on the live view
// of the stepping environment (its event stream and live picture),
// interleaved in one run.
type UIOptions struct {
	// Rounds of the three configurations, in rotating order (full: 10;
	// smoke: 1).
	Rounds int
	// Steps per configuration per round (full: 30; smoke: 3).
	Steps int
	// IdleMs is the idle window (100: short, so that what the UI adds is
	// a larger part of a step).
	IdleMs  int
	Out     string
	Command string
	Smoke   bool
	Log     io.Writer
}

// UIRow is one configuration's step latency.
type UIRow struct {
	Config  string  `json:"config"`
	Latency Stats   `json:"latency_ms"` // the client's round trip of a step
	Ratio   float64 `json:"ratio_p50"`  // p50 over the p50 without the UI
}

// UIReport is the ui suite's output.
type UIReport struct {
	Header
	IdleMs int     `json:"idle_ms"`
	Rows   []UIRow `json:"rows"`
	// ViewerFrames says whether the viewer's live picture showed frames.
	ViewerFrames bool `json:"viewer_frames"`
}

// The configurations.
const (
	uiOff    = "UI disabled"
	uiNobody = "UI on, nobody watching"
	uiViewer = "UI on, one viewer"
)

// uiPage is the stepped page: each click changes its text, so a viewer's
// live picture has a new frame to send at every step.
const uiPage = `<!doctype html><title>Counter</title><h1>Counter</h1>
<button onclick="document.getElementById('n').textContent = String(Number(document.getElementById('n').textContent) + 1)">Add</button>
<p id="n">0</p>`

// UI runs the ui suite.
func UI(ctx context.Context, o UIOptions) (*UIReport, error) {
	if o.Rounds <= 0 {
		o.Rounds = 10
	}
	if o.Steps <= 0 {
		o.Steps = 30
	}
	if o.IdleMs <= 0 {
		o.IdleMs = 100
	}
	rep := &UIReport{Header: newHeader("ui", o.Command, o.Smoke), IdleMs: o.IdleMs}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, uiPage) }))
	defer page.Close()
	router := netroute.New(zap.NewNop(), netroute.Options{})
	defer router.Close()
	b, err := envcore.Launch(ctx, zap.NewNop(), server.Routed(envcore.BrowserOptions{}, router))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	cfg := server.Config{Env: envcore.Config{IdleWindow: time.Duration(o.IdleMs) * time.Millisecond}}
	off := cfg
	off.NoUI = true
	type target struct {
		name string
		base string
		c    *protoClient
		env  string
	}
	var targets []*target
	for _, c := range []struct {
		name string
		cfg  server.Config
	}{{uiOff, off}, {uiNobody, cfg}, {uiViewer, cfg}} {
		srv := server.New(nil, b, server.OpenFactory{}, c.cfg)
		hs := httptest.NewServer(srv.Handler())
		defer srv.Close()
		defer hs.Close()
		cl, err := dialProto(ctx, hs.URL)
		if err != nil {
			return nil, err
		}
		defer cl.close()
		made, err := cl.call(ctx, "make", "", map[string]any{"start_url": page.URL})
		if err != nil {
			return nil, err
		}
		targets = append(targets, &target{name: c.name, base: hs.URL, c: cl, env: made["env"].(string)})
	}
	viewer, err := launchViewer()
	if err != nil {
		return nil, err
	}
	defer viewer.Close()

	samples := map[string][]float64{}
	bar := progress(o.Log, o.Rounds*len(targets)*o.Steps, "ui steps")
	for r := 0; r < o.Rounds; r++ {
		for k := range targets {
			t := targets[(k+r)%len(targets)]
			var p *rod.Page
			if t.name == uiViewer {
				if p, err = viewer.Page(proto.TargetCreateTarget{URL: t.base + "/ui/?env=" + t.env}); err != nil {
					return nil, fmt.Errorf("open the live view: %w", err)
				}
				// Wait for the live picture, so its screencast runs.
				if err := p.Timeout(20 * time.Second).Wait(rod.Eval(`() => ((document.getElementById('screen') || {}).src || '').startsWith('data:')`)); err != nil {
					_ = p.Close()
					return nil, fmt.Errorf("the viewer's live picture did not start: %w", err)
				}
				rep.ViewerFrames = true
			}
			for i := 0; i < o.Steps; i++ {
				start := time.Now()
				if _, err := t.c.call(ctx, "step", t.env, map[string]any{"action": `click("add")`}); err != nil {
					return nil, err
				}
				samples[t.name] = append(samples[t.name], ms(time.Since(start)))
				_ = bar.Add(1)
			}
			if p != nil {
				_ = p.Close() // nobody watches again: the screencast stops
			}
		}
	}
	base := stats(samples[uiOff]).P50
	for _, t := range targets {
		s := stats(samples[t.name])
		rep.Rows = append(rep.Rows, UIRow{Config: t.name, Latency: s, Ratio: s.P50 / base})
	}
	rep.Headline = fmt.Sprintf("step latency p50 (idle window %d ms): UI disabled %.1f ms; UI on, nobody watching %.1f ms (ratio %.3f); one viewer %.1f ms (ratio %.3f)",
		o.IdleMs, rep.Rows[0].Latency.P50, rep.Rows[1].Latency.P50, rep.Rows[1].Ratio, rep.Rows[2].Latency.P50, rep.Rows[2].Ratio)
	var md strings.Builder
	fmt.Fprintf(&md, "Step latency a client sees (protocol round trip of `click`, a DOM change, no network), idle window %d ms, %d rounds of %d steps per configuration, configurations interleaved in rotating order on one browser:\n\n", o.IdleMs, o.Rounds, o.Steps)
	md.WriteString("| configuration | n | p50 ms | p90 ms | p95 ms | p50 ratio to UI disabled |\n|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&md, "| %s | %d | %.1f | %.1f | %.1f | %.3f |\n", r.Config, r.Latency.N, r.Latency.P50, r.Latency.P90, r.Latency.P95, r.Ratio)
	}
	if err := plotUI(o.Out, rep.Rows); err != nil {
		return nil, err
	}
	return rep, write(o.Out, &rep.Header, rep, md.String())
}

func plotUI(dir string, rows []UIRow) error {
	labels := make([]string, len(rows))
	vals := [][]float64{make([]float64, len(rows)), make([]float64, len(rows))}
	for i, r := range rows {
		labels[i] = r.Config
		vals[0][i], vals[1][i] = r.Latency.P50, r.Latency.P90
	}
	p, err := grouped("step latency with the web UI", "ms", labels, []string{"p50", "p90"}, vals)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return savePlots(dir, "ui", p)
}

// launchViewer starts the Chromium a person would watch the live view in
// (a process of its own, not the environments').
func launchViewer() (*rod.Browser, error) {
	bin := chromium.Bin(chromium.Options{})
	l := launcher.New().Bin(bin).Headless(true).Leakless(true).
		Set("disable-background-networking").Set("disable-component-update").Set("no-first-run").Set("disable-gpu")
	if os.Geteuid() == 0 {
		l.Set("no-sandbox")
	}
	u, err := l.Launch()
	if err != nil {
		return nil, fmt.Errorf("launch the viewer's chromium: %w", err)
	}
	b := rod.New().ControlURL(u)
	if err := b.Connect(); err != nil {
		return nil, fmt.Errorf("connect to the viewer's chromium: %w", err)
	}
	return b, nil
}

// protoClient is a minimal sequential client of the MessagePack protocol.
type protoClient struct {
	c  *websocket.Conn
	id uint64
}

func dialProto(ctx context.Context, base string) (*protoClient, error) {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/ws", nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", base, err)
	}
	c.SetReadLimit(-1)
	return &protoClient{c: c}, nil
}

func (p *protoClient) call(ctx context.Context, op, env string, args map[string]any) (map[string]any, error) {
	p.id++
	data, err := msgpack.Marshal(map[string]any{"id": p.id, "op": op, "env": env, "args": args})
	if err != nil {
		return nil, err
	}
	if err := p.c.Write(ctx, websocket.MessageBinary, data); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	_, data, err = p.c.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var r map[string]any
	if err := msgpack.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: reply: %w", op, err)
	}
	if r["ok"] != true {
		e, _ := r["error"].(map[string]any)
		code, _ := e["code"].(string)
		return nil, &protoError{op: op, code: code, reply: r["error"]}
	}
	res, _ := r["result"].(map[string]any)
	return res, nil
}

// protoError is an error reply.
type protoError struct {
	op, code string
	reply    any
}

func (e *protoError) Error() string { return fmt.Sprintf("%s: %v", e.op, e.reply) }

func (p *protoClient) close() { _ = p.c.CloseNow() }
