package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"go.uber.org/zap"
)

// exploreCmd: webserv explore [flags], the exploration loop of the Python
// package (docs/explore.md). The loop is Python (its model clients,
// prompts and outputs are the package's), so this command replaces itself
// with `PYTHON -m webserv.explore ARGS`: the Python is $WEBSERV_PYTHON
// (the pip-installed `webserv` script sets it to its own interpreter),
// else the repository's .venv beside bin/webserv, else python3 on the
// PATH. $WEBSERV_BIN is set to this binary, so a run without --server
// starts its local server from it.
func exploreCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	py, err := explorePython()
	if err != nil {
		return err
	}
	env := append(os.Environ(), "WEBSERV_EXPLORE_PROG=webserv explore")
	if os.Getenv("WEBSERV_BIN") == "" {
		if exe, err := os.Executable(); err == nil {
			env = append(env, "WEBSERV_BIN="+exe)
		}
	}
	argv := append([]string{py, "-m", "webserv.explore"}, args...)
	if err := syscall.Exec(py, argv, env); err != nil {
		return fmt.Errorf("explore: run %s -m webserv.explore: %w", py, err)
	}
	return nil // not reached: the process is Python's now
}

// explorePython is the interpreter that runs the loop.
func explorePython() (string, error) {
	if p := defaultVerifiedPython(); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p, nil
	}
	return "", errors.New("explore runs the Python package's loop and found no Python: set WEBSERV_PYTHON to a Python with the webserv package installed (pip install . in the repository), or make venv")
}
