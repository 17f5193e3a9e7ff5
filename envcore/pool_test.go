package envcore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// With warm contexts, resets take ready contexts, and each is as fresh as
// a new one: nothing of an earlier episode or environment shows.
func TestWarmContexts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{WarmContexts: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	time.Sleep(500 * time.Millisecond) // let the pool fill
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := b.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
			defer env.Close()
			for round := 0; round < 2; round++ {
				obs, _, err := env.Reset(ctx, site.URL+"/b.html")
				if err != nil {
					t.Error(err)
					return
				}
				if !strings.Contains(obs.HTML, "loads 1") || len(obs.Tabs) != 1 {
					t.Errorf("a warm context was not fresh: %s %+v", obs.HTML, obs.Tabs)
				}
			}
		}()
	}
	wg.Wait()
	// A custom viewport does not take pooled (default-sized) contexts.
	env := b.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond, Viewport: envcore.Viewport{Width: 800, Height: 600}})
	defer env.Close()
	if _, _, err := env.Reset(ctx, site.URL+"/a.html"); err != nil {
		t.Fatal(err)
	}
	var w float64
	if err := env.Evaluate(ctx, "window.innerWidth", &w); err != nil || w != 800 {
		t.Errorf("viewport width %v (%v)", w, err)
	}
	// RestoreState takes warm contexts too.
	st, err := env.CaptureState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fork := b.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
	defer fork.Close()
	obs, _, err := fork.RestoreState(ctx, st)
	if err != nil || obs.Title != "Page A" {
		t.Errorf("restore on a warm context: %q %v", obs.Title, err)
	}
}
