package suites

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// StepOptions configure the step suite.
type StepOptions struct {
	Shop    ShopOptions
	Reps    int   // episodes per idle window (full: 10)
	IdleMs  []int // idle windows (the default, 50, and the previous default, 500)
	Out     string
	Command string
	Smoke   bool
	Log     io.Writer // progress
}

// StepSample is one step.
type StepSample struct {
	IdleMs    int     `json:"idle_ms"`
	Type      string  `json:"type"`
	Action    string  `json:"action"`
	ActionMs  float64 `json:"action_ms"`
	SettleMs  float64 `json:"settle_ms"`
	ExtractMs float64 `json:"extract_ms"`
	TotalMs   float64 `json:"total_ms"`
	Settled   bool    `json:"settled"`
	HTMLBytes int     `json:"html_bytes"`
	Targets   int     `json:"targets"`
}

// StepRow summarises one action type at one idle window.
type StepRow struct {
	IdleMs  int    `json:"idle_ms"`
	Type    string `json:"type"`
	Action  Stats  `json:"action_ms"`
	Settle  Stats  `json:"settle_ms"`
	Extract Stats  `json:"extract_ms"`
	Total   Stats  `json:"total_ms"`
	// Overhead is the total minus the idle window: what WebServ adds.
	Overhead  Stats `json:"overhead_ms"`
	HTMLBytes int   `json:"html_bytes_p50"`
}

// StepReport is the step suite's output.
type StepReport struct {
	Header
	Rows    []StepRow    `json:"rows"`
	Samples []StepSample `json:"samples"`
}

// stepScript is the scripted shop episode: every action type, on pages
// with hover menus, fetch-driven suggestions, form navigation and
// add-to-cart by fetch.
var stepScript = []struct{ typ, action string }{
	{"goto", `goto("{base}/")`},
	{"hover", `hover("categories.clothing")`},
	{"click", `click("categories.t-shirts")`},
	{"select", `select_option("filter.sort-by", "Price: low to high")`},
	{"click", `click("filter.apply")`},
	{"fill", `fill("search.search-products", "Sierra Organic Pocket Tee")`},
	{"press", `press("search.search-products", "Enter")`},
	{"click", `click("sierra-organic-pocket-tee")`},
	{"select", `select_option("add-to-cart.size", "M")`},
	{"select", `select_option("add-to-cart.colour", "Navy")`},
	{"click", `click("add-to-cart.add-to-cart")`},
	{"go_back", `go_back()`},
	{"noop", `noop()`},
}

// Step runs the step suite.
func Step(ctx context.Context, o StepOptions) (*StepReport, error) {
	if o.Reps <= 0 {
		o.Reps = 10
	}
	if len(o.IdleMs) == 0 {
		o.IdleMs = []int{int(envcore.DefaultIdleWindow.Milliseconds()), 500}
	}
	rep := &StepReport{Header: newHeader("step", o.Command, o.Smoke)}
	local, site, err := shopSite(ctx, o.Shop)
	if err != nil {
		return nil, err
	}
	defer local.Close(context.Background())
	in, err := local.Start(ctx, site)
	if err != nil {
		return nil, err
	}
	b, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	bar := progress(o.Log, len(o.IdleMs)*o.Reps*len(stepScript), "step suite")
	for _, idle := range o.IdleMs {
		env := b.NewEnv(envcore.Config{IdleWindow: time.Duration(idle) * time.Millisecond})
		for r := 0; r < o.Reps; r++ {
			if err := in.Reset(ctx); err != nil {
				return nil, err
			}
			if _, _, err := env.Reset(ctx, ""); err != nil {
				return nil, err
			}
			for _, s := range stepScript {
				act := strings.ReplaceAll(s.action, "{base}", in.URL())
				t0 := time.Now()
				obs, info, err := env.StepText(ctx, act)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", act, err)
				}
				if info.ActionError != "" {
					return nil, fmt.Errorf("%s: %s", act, info.ActionError)
				}
				rep.Samples = append(rep.Samples, StepSample{IdleMs: idle, Type: s.typ, Action: act,
					ActionMs: ms(info.Action), SettleMs: ms(info.Settle), ExtractMs: ms(info.Extract), TotalMs: ms(time.Since(t0)),
					Settled: info.Settled, HTMLBytes: len(obs.HTML), Targets: len(obs.Clickable) + len(obs.Inputs) + len(obs.Selects)})
				_ = bar.Add(1)
			}
		}
		_ = env.Close()
	}
	rep.Rows = stepRows(rep.Samples)
	var md strings.Builder
	md.WriteString("| idle ms | action | n | action p50 | settle p50 | extract p50 | total p50 (p90) | overhead p50 (p90) | HTML bytes p50 |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&md, "| %d | %s | %d | %.1f | %.1f | %.1f | %.1f (%.1f) | %.1f (%.1f) | %d |\n", r.IdleMs, r.Type, r.Total.N,
			r.Action.P50, r.Settle.P50, r.Extract.P50, r.Total.P50, r.Total.P90, r.Overhead.P50, r.Overhead.P90, r.HTMLBytes)
	}
	md.WriteString("\nTimes in ms, per step of a scripted shop episode (`bench/suites/step.go`). Settle includes the idle window; overhead is the total minus the idle window.\n")
	rep.Headline = stepHeadline(rep.Rows)
	if err := write(o.Out, &rep.Header, rep, md.String()); err != nil {
		return nil, err
	}
	return rep, plotStep(o.Out, rep.Rows)
}

func stepRows(samples []StepSample) []StepRow {
	type key struct {
		idle int
		typ  string
	}
	groups := map[key][]StepSample{}
	var keys []key
	for _, s := range samples {
		k := key{s.IdleMs, s.Type}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], s)
	}
	var rows []StepRow
	for _, k := range keys {
		g := groups[k]
		pick := func(f func(StepSample) float64) Stats {
			xs := make([]float64, len(g))
			for i, s := range g {
				xs[i] = f(s)
			}
			return stats(xs)
		}
		sizes := make([]int, len(g))
		for i, s := range g {
			sizes[i] = s.HTMLBytes
		}
		slices.Sort(sizes)
		rows = append(rows, StepRow{IdleMs: k.idle, Type: k.typ,
			Action: pick(func(s StepSample) float64 { return s.ActionMs }), Settle: pick(func(s StepSample) float64 { return s.SettleMs }),
			Extract: pick(func(s StepSample) float64 { return s.ExtractMs }), Total: pick(func(s StepSample) float64 { return s.TotalMs }),
			Overhead:  pick(func(s StepSample) float64 { return s.TotalMs - float64(s.IdleMs) }),
			HTMLBytes: sizes[len(sizes)/2]})
	}
	return rows
}

func stepHeadline(rows []StepRow) string {
	var all []string
	var idles []int // in the order the rows have them
	for _, r := range rows {
		if !slices.Contains(idles, r.IdleMs) {
			idles = append(idles, r.IdleMs)
		}
	}
	for _, idle := range idles {
		var xs []float64
		for _, r := range rows {
			if r.IdleMs == idle {
				xs = append(xs, r.Overhead.P50)
			}
		}
		if len(xs) > 0 {
			all = append(all, fmt.Sprintf("at a %d ms idle window the median step costs %.0f ms beyond the window (median over action types)", idle, stats(xs).P50))
		}
	}
	return strings.Join(all, "; ") + "."
}
