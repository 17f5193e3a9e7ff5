package hosting

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// StaticRun serves a directory of files as the site, as they are: pages
// whose whole state lives in the browser (MiniWoB's tasks). Nothing runs
// per instance, so starting, resetting and forking one costs nothing.
type StaticRun struct {
	// Dir is the directory served at the site's origin (relative to the
	// definition file).
	Dir string `json:"dir"`
}

// Static serves static sites: one file server on a loopback port per site
// directory, shared by every instance of the site (the files are read
// only; an instance has no state of its own).
type Static struct {
	log *zap.Logger

	mu      sync.Mutex
	servers map[string]*staticServer // by directory
	next    int
}

type staticServer struct {
	srv *http.Server
	url string
}

// NewStatic makes the static backend.
func NewStatic(log *zap.Logger) *Static {
	if log == nil {
		log = zap.NewNop()
	}
	return &Static{log: log, servers: map[string]*staticServer{}}
}

// Name is "static".
func (s *Static) Name() string { return "static" }

// Start returns an instance of the site, starting its directory's file
// server on first use.
func (s *Static) Start(ctx context.Context, site *Site) (Instance, error) {
	if site.Static == nil {
		return nil, fmt.Errorf("site %s serves no directory; it runs on the %s backend", site.Name, site.Backend())
	}
	dir := site.path(site.Static.Dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	fs, ok := s.servers[dir]
	if !ok {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("site %s: static.dir %s is not a directory", site.Name, dir)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("site %s: listen: %w", site.Name, err)
		}
		fs = &staticServer{srv: &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}, url: "http://" + ln.Addr().String()}
		go func() {
			if err := fs.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Warn("static file server stopped", zap.String("dir", dir), zap.Error(err))
			}
		}()
		s.servers[dir] = fs
		s.log.Info("static site", zap.String("site", site.Name), zap.String("dir", dir), zap.String("url", fs.url))
	}
	s.next++
	return &staticInstance{id: fmt.Sprintf("%s-%d", site.Name, s.next), url: fs.url, snaps: map[string]bool{}}, nil
}

// Close stops the file servers.
func (s *Static) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for dir, fs := range s.servers {
		errs = append(errs, fs.srv.Shutdown(ctx))
		delete(s.servers, dir)
	}
	return errors.Join(errs...)
}

// staticInstance is an environment's handle on a static site: its state is
// the browser's alone, so reset, snapshot, restore and fork only keep the
// snapshot names honest.
type staticInstance struct {
	id, url string
	mu      sync.Mutex
	snaps   map[string]bool
}

func (in *staticInstance) ID() string                  { return in.id }
func (in *staticInstance) URL() string                 { return in.url }
func (in *staticInstance) Reset(context.Context) error { return nil }
func (in *staticInstance) Stop(context.Context) error  { return nil }

func (in *staticInstance) Snapshot(_ context.Context, name string) error {
	if !ValidSnapshotName(name) {
		return fmt.Errorf("%q: %w", name, ErrBadSnapshotName)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.snaps[name] = true
	return nil
}

func (in *staticInstance) has(name string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.snaps[name] {
		return fmt.Errorf("%q: %w", name, ErrNoSnapshot)
	}
	return nil
}

func (in *staticInstance) Restore(_ context.Context, name string) error { return in.has(name) }

func (in *staticInstance) Fork(_ context.Context, name string, n int) ([]Instance, error) {
	if err := in.has(name); err != nil {
		return nil, err
	}
	out := make([]Instance, n)
	for i := range out {
		out[i] = &staticInstance{id: fmt.Sprintf("%s-fork%d", in.id, i), url: in.url, snaps: map[string]bool{name: true}}
	}
	return out, nil
}
