package hosting

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Backend runs site instances: the local process backend (Local), the
// static file backend (Static) and the Incus backend (package incusmgr)
// implement it.
type Backend interface {
	// Name is "local", "static" or "incus".
	Name() string
	// Start returns a ready instance of site in the site's base state.
	Start(ctx context.Context, site *Site) (Instance, error)
	// Close stops every instance the backend started.
	Close(ctx context.Context) error
}

// Instance is one running copy of a site, private to one environment.
type Instance interface {
	// ID names the instance (a container or a directory).
	ID() string
	// URL is the instance's base URL on 127.0.0.1, reachable from the
	// browser. It does not change for the life of the instance.
	URL() string
	// Reset puts the instance back in the site's base state.
	Reset(ctx context.Context) error
	// Snapshot captures the running instance's state under name.
	Snapshot(ctx context.Context, name string) error
	// Restore returns the instance to the state captured under name.
	Restore(ctx context.Context, name string) error
	// Fork starts n new instances, each in the state captured under name.
	Fork(ctx context.Context, name string, n int) ([]Instance, error)
	// Stop stops the instance and deletes what it wrote.
	Stop(ctx context.Context) error
}

// ErrNoSnapshot is returned by Restore and Fork for an unknown name.
var ErrNoSnapshot = errors.New("no snapshot with that name")

// ErrBadSnapshotName is returned by Snapshot for a name the backend cannot
// take: the caller's mistake, not the backend's failure.
var ErrBadSnapshotName = errors.New("not a valid snapshot name")

// WaitReady polls base+probe.Path until it answers probe.Status or the
// probe's timeout passes. The wait between probes doubles from 10 ms to at
// most 40 ms: a probe on loopback costs well under a millisecond, and every
// millisecond between the site being ready and the probe seeing it is a
// millisecond of every reset, fork and group start.
func WaitReady(ctx context.Context, base string, probe Probe) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(probe.TimeoutMs)*time.Millisecond)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	wait := 10 * time.Millisecond
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+probe.Path, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == probe.Status {
				return nil
			}
			last = fmt.Errorf("answered %d, want %d", resp.StatusCode, probe.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("site not ready at %s%s within %dms: %v", base, probe.Path, probe.TimeoutMs, last)
		case <-time.After(wait):
		}
		wait = min(wait*2, 40*time.Millisecond)
	}
}

// ValidSnapshotName reports whether name can name a snapshot: 1 to 63
// letters, digits, - and _.
func ValidSnapshotName(name string) bool {
	if name == "" || len(name) > 63 {
		return false
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
