// Package taskstest helps tests that grade with WebArena-Verified: it
// starts the grader from the repository's virtual environment.
package taskstest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/webserv-rl/webserv/tasks"
)

// VerifiedGrader starts the WebArena-Verified grader with the
// repository's .venv (make venv installs webarena-verified there),
// closed when the test ends. A missing venv fails the test with what to run.
func VerifiedGrader(t testing.TB) *tasks.VerifiedGrader {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	py := filepath.Join(filepath.Dir(file), "..", "..", ".venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("%s: %v; run make venv (it installs webarena-verified)", py, err)
	}
	g, err := tasks.NewVerifiedGrader(context.Background(), nil, tasks.VerifiedCommand(py))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}
