package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/webserv-rl/webserv/envcore"
)

// signalWriter closes ready at the first write that contains want.
type signalWriter struct {
	want  string
	ready chan struct{}
	buf   strings.Builder
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		select {
		case <-w.ready:
		default:
			close(w.ready)
		}
	}
	return len(p), nil
}

// serve --no-sandbox starts the server with Chromium's sandbox off and
// says so in a warning; without it, nothing warns of the sandbox.
func TestServeNoSandboxWarns(t *testing.T) {
	for _, args := range [][]string{{"--no-sandbox"}, nil} {
		core, logs := observer.New(zap.WarnLevel)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out := &signalWriter{want: "listening on", ready: make(chan struct{})}
		errc := make(chan error, 1)
		go func() {
			errc <- serveCmd(ctx, zap.New(core), append([]string{"--listen", "127.0.0.1:0", "--no-ui", "--warm-contexts", "0"}, args...), strings.NewReader(""), out)
		}()
		select {
		case <-out.ready:
		case err := <-errc:
			t.Fatalf("serve %v ended before listening: %v", args, err)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serve %v: %v", args, err)
		}
		warned := logs.FilterMessageSnippet("sandbox is off").Len()
		// One per browser process launched.
		if want := len(args) * envcore.DefaultBrowsers; warned != want {
			t.Errorf("serve %v: %d warnings that the sandbox is off, want %d", args, warned, want)
		}
	}
}

// A root server asked to run Chromium as a user that does not exist
// refuses to start, and says how to make one.
func TestServeRefusesAMissingBrowserUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := serveCmd(ctx, zap.NewNop(), []string{"--listen", "127.0.0.1:0", "--browser-user", "webserv-no-such-user"}, strings.NewReader(""), io.Discard)
	want := "make setup"
	if os.Geteuid() != 0 {
		want = "only a server running as root"
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("serve --browser-user webserv-no-such-user: %v; want an error saying %q", err, want)
	}
}
