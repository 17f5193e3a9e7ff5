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

	"github.com/webserv-rl/webserv/trajectory"
)

// exportCmd turns recorded trajectories into training datasets.
func exportCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	format := fs.String("format", "transitions", "transitions (observation, action, next observation; web world models) or sft (instruction-labelled demonstrations)")
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
