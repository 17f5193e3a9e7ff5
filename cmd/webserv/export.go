package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/trajectory"
)

// exportCmd turns recorded trajectories into training datasets.
func exportCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	format := fs.String("format", "transitions", "transitions (observation, action, next observation and the exact delta between them; web world models), sft (instruction-labelled demonstrations), or har (each episode's network trace in WebArena-Verified's layout, into the directory -o; webserv regrade grades them again)")
	axtree := fs.Bool("axtree", false, "use the accessibility-tree text view as the observation instead of the stripped HTML")
	minReward := fs.Float64("min-reward", math.Inf(-1), "keep only episodes with at least this total reward (1: successful ones)")
	out := fs.String("o", "-", "output file (JSON Lines); - for stdout")
	describeWith := fs.String("describe-with", "", "transitions: describe each transition's change in words, with a reasoning, asked of this OpenAI-compatible endpoint (a base URL like http://127.0.0.1:8000/v1; the API key from $OPENAI_API_KEY): DynaWeb's training layout, docs/dream.md")
	describeModel := fs.String("describe-model", "", "the --describe-with endpoint's model name")
	describeTimeout := fs.Duration("describe-timeout", dream.DefaultTimeout, "each --describe-with request's time limit")
	describeRetries := fs.Int("describe-retries", 2, "how many more times a failed, late or malformed --describe-with answer is asked again before the transition is written without a description")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv export [flags] TRAJECTORY-DIR...\n\nReads the *.jsonl.gz episodes `webserv serve --trajectories` recorded and writes JSON Lines that Hugging Face datasets loads. With --describe-with, each transition also gets a reasoning and a description of its change from an OpenAI-compatible endpoint (docs/dream.md).")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("export needs at least one trajectory directory")
	}
	var describer *dream.Describer
	if *describeWith != "" {
		if *format != "transitions" {
			return fmt.Errorf("--describe-with describes transitions: use it with --format transitions, not %s", *format)
		}
		if !strings.HasPrefix(*describeWith, "http://") && !strings.HasPrefix(*describeWith, "https://") {
			return fmt.Errorf("--describe-with %q: give an OpenAI-compatible endpoint's base URL, like http://127.0.0.1:8000/v1", *describeWith)
		}
		if *describeRetries < 0 {
			return fmt.Errorf("--describe-retries %d: give 0 or more", *describeRetries)
		}
		view := dream.ViewHTML
		if *axtree {
			view = dream.ViewAXTree
		}
		describer = &dream.Describer{View: view, Chat: dream.Chat{BaseURL: *describeWith, Model: *describeModel,
			Timeout: *describeTimeout, Retries: *describeRetries, APIKey: os.Getenv("OPENAI_API_KEY")}}
	} else {
		var stray []string
		fs.Visit(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "describe-") {
				stray = append(stray, "--"+f.Name)
			}
		})
		if len(stray) > 0 {
			return fmt.Errorf("%s without --describe-with: give the endpoint with --describe-with URL", strings.Join(stray, ", "))
		}
	}
	if *format == "har" {
		return exportHAR(*out, fs.Args(), stdout)
	}
	// The rows go to stdout or the file -o; the report to stderr or, with
	// -o, to stdout.
	w, report := stdout, io.Writer(os.Stderr)
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w, report = f, stdout
	}
	bw := bufio.NewWriter(w)
	opts := trajectory.ExportOptions{Format: *format, AXTree: *axtree, MinReward: *minReward}
	var described describeCount
	if describer != nil {
		opts.Describe = described.with(ctx, log, describer)
	}
	n, err := trajectory.Export(bw, fs.Args(), opts)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if describer == nil {
		fmt.Fprintf(report, "webserv export: %d rows\n", n)
		return err
	}
	fmt.Fprintf(report, "webserv export: %d rows, %d described, %d without a description (describe_error says why)\n", n, described.ok, described.failed)
	if err == nil && described.ok == 0 && described.failed > 0 {
		err = fmt.Errorf("the endpoint %s described none of the %d transitions (the rows are written, without descriptions): %s", *describeWith, described.failed, described.last)
	}
	return err
}

// describeCount counts the transitions export --describe-with described
// and those it could not.
type describeCount struct {
	ok, failed int
	last       string // the last failure's reason
}

// with is the export's Describe: each transition asked of describer,
// and one it could not describe written with the reason.
func (c *describeCount) with(ctx context.Context, log *zap.Logger, describer *dream.Describer) func(trajectory.TransitionRow, trajectory.Observation) (trajectory.ChangeDescription, error) {
	return func(row trajectory.TransitionRow, obs trajectory.Observation) (trajectory.ChangeDescription, error) {
		d, err := describer.Describe(ctx, row, obs)
		if ctx.Err() != nil {
			return d, ctx.Err()
		}
		if err != nil {
			c.failed++
			c.last = err.Error()
			log.Warn("transition written without a description", zap.String("episode", row.EpisodeID), zap.Int("step", row.Step), zap.Error(err))
			return trajectory.ChangeDescription{Error: err.Error()}, nil
		}
		c.ok++
		return d, nil
	}
}

// exportHAR writes the recorded episodes' traces under out.
func exportHAR(out string, dirs []string, stdout io.Writer) error {
	if out == "-" {
		return errors.New("export --format har writes a directory per episode: give it with -o DIR")
	}
	n, err := tasks.ExportHAR(out, dirs)
	fmt.Fprintf(stdout, "webserv export: %d episode traces in %s\n", n, out)
	return err
}

// regradeCmd grades exported episodes again with WebArena-Verified's
// evaluators and compares with the rewards given online.
func regradeCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("regrade", flag.ContinueOnError)
	py := fs.String("verified-python", defaultVerifiedPython(), "a Python with webarena-verified==1.2.3 and the webserv package")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv regrade [flags] EXPORT-DIR...\n\nGrades again, with WebArena-Verified's evaluators, the episodes `webserv export --format har` wrote, and compares with the rewards given online.")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("regrade needs at least one directory that webserv export --format har wrote")
	}
	if *py == "" {
		return errors.New("regrade needs --verified-python: a Python with webarena-verified==1.2.3 and this package (make venv makes one)")
	}
	g, err := tasks.NewVerifiedGrader(ctx, log, tasks.VerifiedCommand(*py))
	if err != nil {
		return err
	}
	defer g.Close()
	res, err := tasks.Regrade(ctx, g, fs.Args())
	differ := 0
	for _, r := range res {
		rec := "none"
		if r.Recorded != nil {
			rec = fmt.Sprint(*r.Recorded)
		}
		mark := ""
		if r.Recorded == nil || *r.Recorded != r.Regraded {
			mark, differ = "  DIFFERS", differ+1
		}
		fmt.Fprintf(stdout, "%s\t%s\trecorded %s\tregraded %v%s\n", r.Dir, r.TaskID, rec, r.Regraded, mark)
	}
	fmt.Fprintf(stdout, "webserv regrade: %d episodes, %d differ\n", len(res), differ)
	if err == nil && differ > 0 {
		err = fmt.Errorf("%d of %d episodes regraded differently from their online reward", differ, len(res))
	}
	return err
}
