package hosting

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// An instance can die under an environment: its process exits (the OOM
// killer, a crash), its container is stopped. Its backend watches for that
// with the cheapest true signal it has (the local backend: the process's
// exit; Incus: the container's init process's exit) and keeps the verdict,
// so asking costs nothing; Check asks the backend itself, and Health adds
// one readiness probe.

// ErrDown marks an instance that died or stopped answering its readiness
// probe: its environment's episode cannot go on, and a reset brings a
// fresh instance.
var ErrDown = errors.New("site instance is down")

// Watched is an Instance whose backend watches it.
type Watched interface {
	// Down is nil while nothing says the instance died, else what was
	// seen (wrapping ErrDown). It only reads the watcher's verdict.
	Down() error
	// Check asks the backend now: the process's or the container's state
	// (a request to the Incus daemon). Nil when it is running.
	Check(ctx context.Context) error
}

// healthProbeLimit bounds one health probe: a site that does not answer
// its readiness path in this time is not answering.
const healthProbeLimit = 10 * time.Second

// Health says whether in is alive. Shallow, it reads the watcher's verdict
// (no I/O); deep, it also asks the backend and probes the site's readiness
// path once. A failure wraps ErrDown and says what was seen.
func Health(ctx context.Context, in Instance, probe Probe, deep bool) error {
	w, _ := in.(Watched)
	if w != nil {
		if err := w.Down(); err != nil {
			return err
		}
	}
	if !deep {
		return nil
	}
	if w != nil {
		if err := w.Check(ctx); err != nil {
			return err
		}
	}
	if err := ProbeOnce(ctx, in.URL(), probe); err != nil {
		return fmt.Errorf("%w: instance %s does not answer its readiness probe: %v", ErrDown, in.ID(), err)
	}
	return nil
}

// ProbeOnce asks base+probe.Path once, within 10 s (the probe's timeout is
// how long a start may take, not how fast a running site answers), and
// says why it did not answer probe.Status.
func ProbeOnce(ctx context.Context, base string, probe Probe) error {
	ctx, cancel := context.WithTimeout(ctx, healthProbeLimit)
	defer cancel()
	path, status := probe.Path, probe.Status
	if path == "" {
		path = "/"
	}
	if status == 0 {
		status = http.StatusOK
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != status {
		return fmt.Errorf("GET %s answered %d, want %d", path, resp.StatusCode, status)
	}
	return nil
}
