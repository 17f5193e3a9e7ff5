package fleet_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore/chromium"
	"github.com/webserv-rl/webserv/envcore/fleet"
)

// browser is a real Chromium process as a Keeper's member (its Closed
// closes when the process ends).
type browser struct {
	p       *chromium.Process
	started time.Time
}

func startBrowser(ctx context.Context, log *zap.Logger) (*browser, error) {
	p, err := chromium.Start(ctx, log, chromium.Bin(chromium.Options{}), chromium.Options{})
	if err != nil {
		return nil, err
	}
	return &browser{p: p, started: time.Now()}, nil
}

func (b *browser) Closed() <-chan struct{} { return b.p.Closed() }
func (b *browser) Close() error            { return b.p.Stop(0) }
func (b *browser) Started() time.Time      { return b.started }
func (b *browser) DiedAt() time.Time       { return time.Now() }
func (b *browser) PID() int                { return b.p.PID() }
func (b *browser) Placed() int             { return 0 }

// A Keeper of two Chromium processes: one killed is counted as a crash
// and replaced in its slot (Replaced says when), the other is left
// alone, and Close ends both and says so on Replaced.
func TestKeeperReplacesAKilledBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k, err := fleet.Keep(ctx, zap.NewNop(), 2, startBrowser)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = k.Close()
		}
	}()
	before := k.Members()
	if len(before) != 2 {
		t.Fatalf("members: %d, want 2", len(before))
	}
	replaced := k.Replaced()
	before[0].p.Kill()
	select {
	case <-replaced:
	case <-ctx.Done():
		t.Fatalf("the killed browser was not replaced: counts %+v", k.Counts())
	}
	after := k.Members()
	if after[0] == before[0] || after[0].PID() == before[0].PID() || after[1] != before[1] {
		t.Errorf("slots after the kill: pids %d, %d (were %d, %d); want a new process in slot 0 only", after[0].PID(), after[1].PID(), before[0].PID(), before[1].PID())
	}
	select {
	case <-after[0].Closed():
		t.Error("the replacement is not running")
	default:
	}
	if c := k.Counts(); c != (fleet.Counts{Crashes: 1, Restarts: 1}) {
		t.Errorf("counts after one kill and its replacement: %+v; want 1 crash, 1 restart", c)
	}

	replaced = k.Replaced()
	closed = true
	if err := k.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	for i, m := range after {
		select {
		case <-m.Closed():
		case <-ctx.Done():
			t.Errorf("member %d (pid %d) still runs after Close", i, m.PID())
		}
	}
	select {
	case <-replaced:
	default:
		t.Error("Replaced was not closed by Close")
	}
	if c := k.Counts(); c != (fleet.Counts{Crashes: 1, Restarts: 1}) {
		t.Errorf("counts after Close: %+v; Close is no crash", c)
	}
}
