package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/bench/suites"
	"github.com/webserv-rl/webserv/envcore"
)

const benchUsage = `usage: webserv-bench SUITE [flags]   (suites: system, step, scale, density, route, ui, recovery; add --smoke for a seconds-long check)
the peer (BrowserGym) and settle suites are Python: python bench/peer_bench.py, python bench/settle_bench.py`

// benchCmd runs one Go benchmark suite and writes its JSON, Markdown and
// PNG into --out.
func benchCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(benchUsage)
	}
	suite := args[0]
	fs := flag.NewFlagSet("bench "+suite, flag.ContinueOnError)
	out := fs.String("out", "bench/results", "results folder")
	smoke := fs.Bool("smoke", false, "a few samples in seconds, to check the output")
	work := fs.String("work", "/var/tmp/webserv-bench", "scratch directory (the system suite's full copies need a non-reflink filesystem)")
	reps := fs.Int("reps", 10, "step: episodes per idle window; route, ui: rounds")
	defIdle := envcore.DefaultIdleWindow.Milliseconds()
	idle := fs.String("idle", fmt.Sprintf("%d,500", defIdle), fmt.Sprintf("step: idle windows in ms (the default, %d, and the one before issue 33); scale: the first is used", defIdle))
	ns := fs.String("n", "1,8,32,64,128", "scale: environment counts; density: pairs open at once, grown until a bound breaks (its default 1,2,4,8,12,16,24,32,48,64,96,128)")
	runFor := fs.Duration("run", 40*time.Second, "scale, density: measured time per N (density's default 30s)")
	minFree := fs.Float64("min-free", 2, "scale, density: stop growing N when the host's MemAvailable falls below this many GiB")
	maxP95 := fs.Float64("max-p95", 0, "density: stop growing N when the step p95 passes this many ms (0: twice the p95 at the first N)")
	episode := fs.Int("episode", 10, "density: steps between an environment's resets (resets run while the others step)")
	sizes := fs.String("sizes", "1GiB,6GiB", "system: state sizes")
	launches := fs.Int("launches", 8, "system: launches measured per size")
	warm := fs.Int("warm", 2, "system: launches that warm the caches first")
	forkN := fs.Int("fork", 8, "system: instances per fork")
	pool := fs.String("pool", "webserv", "system, density: Incus storage pool")
	browsers := fs.String("browsers", "1,2,4", "recovery: browser process counts of the pool")
	envs := fs.Int("envs", 16, "recovery: environments stepping when a browser process is killed")
	costEnvs := fs.Int("cost-envs", 32, "recovery: environments stepping while the cost of each pool size is measured")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	shop := suites.ShopOptions{Command: []string{exe, "shop"}, Work: *work}
	command := "webserv-bench " + strings.Join(args, " ")
	idles, err := ints(*idle)
	if err != nil {
		return fmt.Errorf("--idle: %w", err)
	}
	var headline string
	switch suite {
	case "step":
		o := suites.StepOptions{Shop: shop, Reps: *reps, IdleMs: idles, Out: *out, Command: command, Smoke: *smoke, Log: os.Stderr}
		if *smoke {
			o.Reps = 1
		}
		rep, err := suites.Step(ctx, o)
		if err != nil {
			return err
		}
		headline = rep.Headline
	case "scale":
		nlist, err := ints(*ns)
		if err != nil {
			return fmt.Errorf("--n: %w", err)
		}
		o := suites.ScaleOptions{Shop: shop, Ns: nlist, Run: *runFor, IdleMs: idles[0], Out: *out, Command: command, Smoke: *smoke, Log: os.Stderr, Refine: !*smoke, MinFreeGiB: *minFree}
		if *smoke {
			o.Ns, o.Run = []int{1, 2}, 3*time.Second
		}
		rep, err := suites.Scale(ctx, o)
		if err != nil {
			return err
		}
		headline = rep.Headline
	case "density":
		o := suites.DensityOptions{Shop: shop, Run: 30 * time.Second, IdleMs: idles[0], Episode: *episode, MinFreeGiB: *minFree, MaxP95Ms: *maxP95,
			Pool: *pool, Out: *out, Command: command, Smoke: *smoke, Log: os.Stderr, Logger: log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))}
		if *smoke {
			o.Ns, o.Run, o.Episode = []int{1, 2}, 4*time.Second, 3
		}
		// Only flags given on the command line override the suite's own
		// defaults (its ramp of N, 30 s per N).
		var ferr error
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "n":
				o.Ns, ferr = ints(*ns)
			case "run":
				o.Run = *runFor
			}
		})
		if ferr != nil {
			return fmt.Errorf("--n: %w", ferr)
		}
		rep, err := suites.Density(ctx, o)
		if err != nil {
			return err
		}
		headline = rep.Headline
	case "route":
		o := suites.RouteOptions{Shop: shop, Out: *out, Command: command, Smoke: *smoke, Log: os.Stderr}
		// Only flags given on the command line override the suite's own
		// defaults (N=16, 20 s per configuration, 5 rounds, 500 ms).
		var ferr error
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "n":
				var nlist []int
				if nlist, ferr = ints(*ns); ferr == nil {
					o.N = nlist[0]
				}
			case "run":
				o.Run = *runFor
			case "reps":
				o.Rounds = *reps
			case "idle":
				o.IdleMs = idles[0]
			}
		})
		if ferr != nil {
			return fmt.Errorf("--n: %w", ferr)
		}
		rep, err := suites.Route(ctx, o)
		if err != nil {
			return err
		}
		headline = rep.Headline
	case "ui":
		o := suites.UIOptions{Out: *out, Command: command, Smoke: *smoke, Log: os.Stderr}
		if *smoke {
			o.Rounds, o.Steps = 1, 3
		}
		// Only flags given on the command line override the suite's own
		// defaults (10 rounds, 100 ms).
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "reps":
				o.Rounds = *reps
			case "idle":
				o.IdleMs = idles[0]
			}
		})
		rep, err := suites.UI(ctx, o)
		if err != nil {
			return err
		}
		headline = rep.Headline
	case "recovery":
		bs, err := ints(*browsers)
		if err != nil {
			return fmt.Errorf("--browsers: %w", err)
		}
		o := suites.RecoveryOptions{Browsers: bs, N: *envs, CostN: *costEnvs, Out: *out, Command: command, Smoke: *smoke, Log: os.Stderr}
		if *smoke {
			o.Browsers, o.N, o.CostN, o.Run, o.Episode = []int{1, 2}, 4, 4, 3*time.Second, 3
		}
		// Only flags given on the command line override the suite's own
		// defaults (30 s, 100 ms).
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "run":
				o.Run = *runFor
			case "idle":
				o.IdleMs = idles[0]
			case "browsers":
				o.Browsers = bs
			case "envs":
				o.N = *envs
			case "cost-envs":
				o.CostN = *costEnvs
			}
		})
		rep, err := suites.Recovery(ctx, o)
		if err != nil {
			return err
		}
		headline = rep.Headline
	case "system":
		rep, err := suites.System(ctx, suites.SystemOptions{Sizes: *sizes, N: *launches, Warm: *warm, ForkN: *forkN, Out: *out, Work: *work,
			Pool: *pool, Command: command, Smoke: *smoke, Log: os.Stderr})
		if err != nil {
			return err
		}
		headline = rep.Headline
	default:
		return fmt.Errorf("unknown suite %q\n%s", suite, benchUsage)
	}
	fmt.Fprintf(stdout, "%s\nwrote %s/%s.{json,md,png}\n", headline, *out, suite)
	return nil
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q: want positive whole numbers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}
