package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/ui"
)

// Config configures a Server. Zero values mean the defaults.
type Config struct {
	// Token, when set, must be presented in hello before any other op.
	Token string
	// MaxEnvs is the most environments open at once. Default 32.
	MaxEnvs int
	// MaxCreating is the most makes in progress at once. Default 4.
	MaxCreating int
	// CreateWait is how long a make waits, in arrival order, for one of
	// the MaxCreating places before it is answered "capacity". Default 1
	// minute.
	CreateWait time.Duration
	// TTL closes an environment no request has touched for this long.
	// Default 10 minutes.
	TTL time.Duration
	// MaxFrame is the largest request frame accepted. Default 64 MiB.
	MaxFrame int64
	// StepTimeout bounds one request's work. Default 2 minutes.
	StepTimeout time.Duration
	// Env is the default environment configuration; make may override
	// the idle window, settle timeout and viewport.
	Env envcore.Config
	// TrajectoryDir is where make's record option writes episodes; empty
	// means recording is off.
	TrajectoryDir string
	// TokenizerDir holds the tokenizer.json files observe.tokenizer names
	// (NAME.json or NAME/tokenizer.json); a client may also give a path.
	TokenizerDir string
	// Trace bounds the network traces of recorded and Verified-graded
	// episodes (bodies, entries); zero values are netroute's defaults.
	Trace netroute.RecordOptions
	// Observers are told of every episode, step and close (see Observer).
	Observers []Observer
	// NoUI turns the web UI at /ui off (the live view, approval and the
	// replayer); make's approve then fails.
	NoUI bool
}

func (c Config) withDefaults() Config {
	if c.MaxEnvs <= 0 {
		c.MaxEnvs = 32
	}
	if c.MaxCreating <= 0 {
		c.MaxCreating = 4
	}
	if c.CreateWait <= 0 {
		c.CreateWait = time.Minute
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Minute
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = 64 << 20
	}
	if c.StepTimeout <= 0 {
		c.StepTimeout = 2 * time.Minute
	}
	return c
}

// Server hosts environments and serves them over WebSockets. Environments
// belong to the server, not to a connection: any connection may use any
// environment by id, so a client can reconnect and go on.
type Server struct {
	log      *zap.Logger
	cfg      Config
	browser  Browsers
	factory  Factory
	metrics  *metrics
	tokens   *tokenizers
	started  time.Time
	creating chan struct{} // semaphore of makes in progress
	queued   atomic.Int64  // makes waiting for a place in creating

	mu       sync.Mutex
	sessions map[string]*session
	groups   map[string]*group
	closing  bool

	observers []Observer
	board     *ui.Board // the live view's; nil with NoUI

	stepsTotal atomic.Int64
	dreams     dreamModels // the memory models and observed starts of dreams (dream.go)
	// baseGate, when set (tests only, export_test.go), holds every group's
	// base build until it is closed.
	baseGate chan struct{}
	// base is the parent of every request's context; Close cancels it and
	// waits for inflight, as http.Server.Shutdown does.
	base       context.Context
	cancelBase context.CancelFunc
	inflight   sync.WaitGroup
	stop       chan struct{}
	reaperDone chan struct{}
}

// Browsers are where a server's environments get their browser side: an
// *envcore.Pool of supervised browser processes (what webserv serve runs),
// or a lone *envcore.Browser, which nothing restarts.
type Browsers interface {
	NewEnv(cfg envcore.Config) *envcore.Env
	Health() envcore.BrowserHealth
}

// New returns a server that runs environments on browser with sites from
// factory. Call Close to end it.
func New(log *zap.Logger, browser Browsers, factory Factory, cfg Config) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	s := &Server{
		log:        log,
		cfg:        cfg,
		browser:    browser,
		factory:    factory,
		metrics:    newMetrics(browser.Health),
		tokens:     newTokenizers(cfg.TokenizerDir),
		started:    time.Now(),
		creating:   make(chan struct{}, cfg.MaxCreating),
		sessions:   map[string]*session{},
		groups:     map[string]*group{},
		stop:       make(chan struct{}),
		reaperDone: make(chan struct{}),
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.observers = append(s.observers, cfg.Observers...)
	if cfg.TrajectoryDir != "" {
		s.observers = append(s.observers, newRecorder(log), newHARWriter(log))
	}
	if !cfg.NoUI {
		s.board = ui.NewBoard()
		s.observers = append(s.observers, liveView{s.board})
	}
	go s.reap()
	return s
}

// Handler serves /v1/ws (the protocol), /v1/mcp (the Model Context
// Protocol, mcp.go), /openenv/ws (OpenEnv's protocol),
// /ui (the web UI, unless NoUI), /healthz and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/ws", s.serveWS)
	mux.Handle("/v1/mcp", s.serveMCP())
	mux.HandleFunc("/openenv/ws", s.serveOpenEnv)
	// openenv-core's client appends /ws to its base URL after the query:
	// http://HOST/openenv?token=T arrives as /openenv?token=T/ws.
	mux.HandleFunc("/openenv", s.serveOpenEnv)
	if !s.cfg.NoUI {
		ui := s.uiHandler()
		mux.Handle("/ui", ui)
		mux.Handle("/ui/", ui)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.noBrowser(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// CheckListen refuses a non-loopback listen address when no token is set:
// anyone who reaches the port could drive a browser on this host.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without a token: anyone who reaches it could drive the browser; listen on 127.0.0.1 or set --token", addr)
}

// Close stops the server: new requests are answered shutting_down, the
// requests in flight are cancelled (and answered shutting_down) and waited
// for, at most closeWait, then every environment and site instance is
// closed and the reaper stopped. The HTTP listener is the caller's.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	s.mu.Unlock()
	s.cancelBase()
	waited := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(closeWait):
		s.log.Warn("requests still running after the server's close wait; closing their environments under them", zap.Duration("wait", closeWait))
	}
	close(s.stop)
	<-s.reaperDone
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, x := range s.sessions {
		list = append(list, x)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, x := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.closeSession(x, "server shutting down")
		}()
	}
	wg.Wait()
	s.closeGroups(true)
	return nil
}

// closeWait bounds how long Close waits for cancelled requests to return.
const closeWait = 5 * time.Second

// reap closes environments idle longer than the TTL.
func (s *Server) reap() {
	defer close(s.reaperDone)
	every := min(max(s.cfg.TTL/10, 50*time.Millisecond), 30*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		cutoff := time.Now().Add(-s.cfg.TTL).UnixNano()
		s.mu.Lock()
		var idle []*session
		for _, x := range s.sessions {
			if x.lastUsed.Load() < cutoff && len(x.jobs) == 0 {
				idle = append(idle, x)
			}
		}
		s.mu.Unlock()
		s.closeGroups(false)
		for _, x := range idle {
			s.metrics.reclaimed.Inc()
			s.closeSession(x, fmt.Sprintf("idle longer than its TTL (%s)", s.cfg.TTL))
		}
	}
}

// Stats is the answer of the stats op.
type Stats struct {
	EnvsLive     int     `json:"envs_live"`
	EnvsCreating int     `json:"envs_creating"`
	EnvsQueued   int64   `json:"envs_queued"`
	MaxEnvs      int     `json:"max_envs"`
	StepsTotal   int64   `json:"steps_total"`
	UptimeS      float64 `json:"uptime_s"`
	// BrowserAlive: at least one browser process runs, so environments
	// can be made and reset; Browsers says which.
	BrowserAlive bool                  `json:"browser_alive"`
	Browsers     envcore.BrowserHealth `json:"browsers"`
	Envs         []string              `json:"envs"`
}

func (s *Server) stats() Stats {
	s.mu.Lock()
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	h := s.browser.Health()
	return Stats{
		EnvsLive: len(ids), EnvsCreating: len(s.creating), EnvsQueued: s.queued.Load(), MaxEnvs: s.cfg.MaxEnvs,
		StepsTotal: s.stepsTotal.Load(), UptimeS: time.Since(s.started).Seconds(),
		BrowserAlive: h.Alive > 0, Browsers: h, Envs: ids,
	}
}

func (s *Server) authorized(token string) bool { return tokenOK(s.cfg.Token, token) }

// tokenOK is whether got passes a server whose token is want (any does
// when want is empty).
func tokenOK(want, got string) bool {
	return want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

var errNoBrowser = errors.New("the browser process is gone and nothing restarts it; restart the server")

// noBrowser says why no environment can be made or reset now: no browser
// process runs. A pool that is restarting one is answered with
// browser_crashed (retryable); a lone browser that died with errNoBrowser.
func (s *Server) noBrowser() *Error {
	h := s.browser.Health()
	switch {
	case h.Alive > 0:
		return nil
	case h.Supervised:
		return errorf(CodeBrowserCrashed, true, "none of the server's %d browser processes is running: they are being restarted (%d crashes so far); retry shortly", h.Browsers, h.Crashes)
	}
	return errorf(CodeBackend, false, "%v", errNoBrowser)
}
