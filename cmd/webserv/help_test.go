package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// stderrOf runs f with os.Stderr captured.
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, r)
		done <- b.String()
	}()
	f()
	os.Stderr = old
	w.Close()
	return <-done
}

// --help is asked for, not an error (main exits 0 on flag.ErrHelp), and a
// command lists its own flags: replay's help names no Incus or WebArena
// flag, which only its --rerun takes, and says where they are.
func TestReplayHelpListsItsOwnFlags(t *testing.T) {
	var err error
	out := stderrOf(t, func() { err = replayCmd(context.Background(), nil, []string{"--help"}, nil, io.Discard) })
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("replay --help returned %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-listen", "-rerun", "-token", "webserv serve --help"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay --help lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"incus", "webarena", "judge"} {
		if strings.Contains(out, not) {
			t.Errorf("replay --help lists serve's %s flags:\n%s", not, out)
		}
	}
}
