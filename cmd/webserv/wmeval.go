package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/dream"
)

// wmEvalCmd scores a world model on held-out real transitions
// (docs/dream.md).
func wmEvalCmd(ctx context.Context, _ *zap.Logger, args []string, _ io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("wm-eval", flag.ContinueOnError)
	model := fs.String("model", "", "the world model: memory:SRC[,SRC...] (the transition-memory model built from recorded episode directories or files, or transitions files), or an OpenAI-compatible base URL like http://127.0.0.1:8000/v1")
	name := fs.String("model-name", "", "the endpoint's model name")
	format := fs.String("format", dream.FormatDelta, "the endpoint's answer format: delta, or text (DynaWeb's change description, applied by a second call)")
	transitions := fs.String("transitions", "", "the held-out transitions (webserv export --format transitions)")
	axtree := fs.Bool("axtree", false, "the transitions are in the accessibility-tree view (exported with --axtree); the model is asked and scored in it")
	depth := fs.Int("max-depth", dream.DefaultMaxSteps, "the longest dream scored, in steps from a real start")
	timeout := fs.Duration("timeout", dream.DefaultTimeout, "each endpoint request's time limit")
	retries := fs.Int("retries", 2, "how many more times a late or malformed answer is asked again")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file (- for stdout, in place of the table)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv wm-eval --model MODEL --transitions FILE [flags]\n\nScores a world model on held-out real transitions: exact next-state match, element-level F1 of the predicted change, URL accuracy, and their decay over dream length (dreams of each episode's recorded actions from its first real observation). docs/dream.md")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *model == "" || *transitions == "" {
		fs.Usage()
		return errors.New("wm-eval needs --model and --transitions")
	}
	rows, err := dream.ReadTransitions(*transitions)
	if err != nil {
		return err
	}
	view := dream.ViewHTML
	if *axtree {
		view = dream.ViewAXTree
	}
	var m dream.Model
	if src, ok := strings.CutPrefix(*model, "memory:"); ok {
		mem, err := dream.LoadMemory(strings.Split(src, ","), dream.MemoryOptions{AXTree: *axtree, TextView: true})
		if err != nil {
			return err
		}
		m = mem
	} else if strings.HasPrefix(*model, "http://") || strings.HasPrefix(*model, "https://") {
		ep, err := dream.NewEndpoint(dream.Chat{BaseURL: *model, Model: *name, Timeout: *timeout, Retries: *retries, APIKey: os.Getenv("OPENAI_API_KEY")}, *format, view)
		if err != nil {
			return err
		}
		m = ep
	} else {
		return fmt.Errorf("--model %q: give memory:SRC[,SRC...] or an endpoint's base URL (http://...)", *model)
	}
	began := time.Now()
	rep, err := dream.Evaluate(ctx, m, rows, dream.EvalOptions{AXTree: *axtree, MaxDepth: *depth})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "webserv wm-eval: %d transitions in %s\n", len(rows), time.Since(began).Round(time.Millisecond))
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if *jsonOut == "-" {
			_, err = stdout.Write(b)
			return err
		}
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	return rep.WriteTable(stdout)
}
