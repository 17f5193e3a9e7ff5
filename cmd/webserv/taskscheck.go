package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/tasks"
)

// tasksCmd is "webserv tasks check FILE...": each task file is read as the
// server reads task files (every task validated, the file, task and field
// named in an error). Replaying oracles is the Python side's for now
// (webserv.explore.check_tasks).
func tasksCmd(_ context.Context, _ *zap.Logger, args []string, _ io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("tasks", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv tasks check FILE...\n\nreads each task file (docs/tasks.md) and reports its tasks or what is wrong in it")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 2 || fs.Arg(0) != "check" {
		fs.Usage()
		return errors.New("tasks: want \"tasks check FILE...\"")
	}
	for _, path := range fs.Args()[1:] {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("tasks check: %w", err)
		}
		set, err := tasks.ParseTasks(raw, path)
		if err != nil {
			return fmt.Errorf("tasks check: %w", err)
		}
		fmt.Fprintf(out, "%s: %d tasks\n", path, len(set.Tasks))
	}
	return nil
}
