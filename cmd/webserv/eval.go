package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"

	"go.uber.org/zap"
)

// evalCmd: webserv eval [flags] (and webserv eval compare DIR_A DIR_B),
// the Python package's benchmark runner (docs/eval.md). Like explore, it
// replaces itself with `PYTHON -m webserv.eval ARGS` (the interpreter
// explorePython finds), with $WEBSERV_BIN set to this binary so a run
// without --server starts its local server from it.
func evalCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	py, err := explorePython()
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	env := append(os.Environ(), "WEBSERV_EVAL_PROG=webserv eval")
	if os.Getenv("WEBSERV_BIN") == "" {
		if exe, err := os.Executable(); err == nil {
			env = append(env, "WEBSERV_BIN="+exe)
		}
	}
	argv := append([]string{py, "-m", "webserv.eval"}, args...)
	if err := syscall.Exec(py, argv, env); err != nil {
		return fmt.Errorf("eval: run %s -m webserv.eval: %w", py, err)
	}
	return nil // not reached: the process is Python's now
}
