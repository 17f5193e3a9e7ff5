package hostingtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
)

// HealthConformance checks that a backend's instances report their own
// death: alive after start, snapshot, restore and reset (the backend's own
// stops are no deaths); after kill (a real signal or a forced stop,
// returning once the instance is dead) a deep look says ErrDown naming the
// instance, the watcher's verdict follows, and a reset brings a fresh,
// healthy instance.
func HealthConformance(t *testing.T, b hosting.Backend, site *hosting.Site, kill func(t *testing.T, in hosting.Instance)) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	in, err := b.Start(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Stop(ctx) }()
	if _, ok := in.(hosting.Watched); !ok {
		t.Fatalf("%s instances are not watched", b.Name())
	}
	alive := func(when string) {
		t.Helper()
		for _, deep := range []bool{false, true} {
			if err := hosting.Health(ctx, in, site.Ready, deep); err != nil {
				t.Fatalf("%s (deep %v): %v", when, deep, err)
			}
		}
	}
	alive("after start")
	if err := in.Snapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	alive("after a snapshot")
	if err := in.Restore(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	alive("after a restore")
	if err := in.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	alive("after a reset")

	id := in.ID()
	kill(t, in)
	err = hosting.Health(ctx, in, site.Ready, true)
	if !errors.Is(err, hosting.ErrDown) || !strings.Contains(err.Error(), id) {
		t.Fatalf("deep look at the killed instance %s: %v; want ErrDown naming it", id, err)
	}
	// The watcher's verdict comes from the runtime's wait on the death,
	// shortly after it: wait for it, bounded only against a hang.
	w := in.(hosting.Watched)
	for deadline := time.Now().Add(time.Minute); w.Down() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never saw instance %s die", id)
		}
	}
	if err := hosting.Health(ctx, in, site.Ready, false); !errors.Is(err, hosting.ErrDown) {
		t.Errorf("shallow look at the killed instance: %v", err)
	}
	if err := in.Reset(ctx); err != nil {
		t.Fatalf("reset of the dead instance: %v", err)
	}
	alive("after the reset of the dead instance")
	if got := state(t, in); got != "state=base" {
		t.Errorf("the fresh instance is in %q, want the base state", got)
	}
}
