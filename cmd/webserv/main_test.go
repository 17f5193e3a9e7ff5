package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// The main demo: a scripted episode on the bundled shop, through the real
// browser. Every step must act and settle, and the cart must end up with
// the product and size the script chose.
func TestDemoEpisode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out strings.Builder
	if err := demoCmd(ctx, zap.NewNop(), []string{"-idle", "300ms"}, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "error:") || strings.Contains(s, "NOT SETTLED") {
		t.Errorf("a demo step failed:\n%s", s)
	}
	for _, want := range []string{"Cart: 1 items (last: Denim shirt, L)", `episode ended, answer: "Denim shirt, size L, is in the cart"`} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
}

// try's read loop: actions from stdin, one per line, observations out.
func TestTryReadsActionsFromStdin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url, stop, err := demoServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	in := strings.NewReader("hover(\"shop.categories\")\nclick [shop.shirts]\nbogus action\nstop [done]\nclick(\"x\")\nquit\n")
	var out strings.Builder
	if err := tryCmd(ctx, zap.NewNop(), []string{"-idle", "300ms", url}, in, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"<h3>Linen shirt</h3>", `unknown action "bogus"`, `episode ended, answer: "done"`, "the episode has ended"} {
		if !strings.Contains(s, want) {
			t.Errorf("try output lacks %q:\n%s", want, s)
		}
	}
}
