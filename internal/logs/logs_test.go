package logs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// At info, debug lines are dropped; a warning is one line, an error
// carries its stack; raising the level later drops what is below it.
func TestLoggerLevelsAndStacks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	level := zap.NewAtomicLevelAt(zap.InfoLevel)
	log, err := New(level, path)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("debug-line")
	log.Warn("warn-line")
	log.Error("error-line")
	level.SetLevel(zap.ErrorLevel)
	log.Warn("late-warn-line")
	_ = log.Sync()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, absent := range []string{"debug-line", "late-warn-line"} {
		if strings.Contains(out, absent) {
			t.Errorf("%s was logged:\n%s", absent, out)
		}
	}
	lines := strings.Split(out, "\n")
	w := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "warn-line") })
	if w < 0 || w+1 >= len(lines) || !strings.Contains(lines[w+1], "error-line") {
		t.Fatalf("want the warning on one line, the error's line right after it:\n%s", out)
	}
	if !strings.Contains(strings.Join(lines[w+2:], "\n"), "TestLoggerLevelsAndStacks") {
		t.Errorf("an error carries no stack trace naming its caller:\n%s", out)
	}
}
