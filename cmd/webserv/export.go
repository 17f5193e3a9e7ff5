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

	"go.uber.org/zap"

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
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv export [flags] TRAJECTORY-DIR...\n\nReads the *.jsonl.gz episodes `webserv serve --trajectories` recorded and writes JSON Lines that Hugging Face datasets loads.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("export needs at least one trajectory directory")
	}
	if *format == "har" {
		return exportHAR(*out, fs.Args(), stdout)
	}
	w := stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	n, err := trajectory.Export(bw, fs.Args(), trajectory.ExportOptions{Format: *format, AXTree: *axtree, MinReward: *minReward})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	fmt.Fprintf(os.Stderr, "webserv export: %d rows\n", n)
	return err
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
	if err := fs.Parse(args); err != nil {
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
