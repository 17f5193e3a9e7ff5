package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
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
)

// Config configures a Server. Zero values mean the defaults.
type Config struct {
	// Token, when set, must be presented in hello before any other op.
	Token string
	// MaxEnvs is the most environments open at once. Default 32.
	MaxEnvs int
	// MaxCreating is the most makes in progress at once. Default 4.
	MaxCreating int
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
}

func (c Config) withDefaults() Config {
	if c.MaxEnvs <= 0 {
		c.MaxEnvs = 32
	}
	if c.MaxCreating <= 0 {
		c.MaxCreating = 4
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
	browser  *envcore.Browser
	factory  Factory
	metrics  *metrics
	started  time.Time
	creating chan struct{} // semaphore of makes in progress

	mu       sync.Mutex
	sessions map[string]*session
	groups   map[string]*group
	closing  bool

	stepsTotal atomic.Int64
	stop       chan struct{}
	reaperDone chan struct{}
}

// New returns a server that runs environments on browser with sites from
// factory. Call Close to end it.
func New(log *zap.Logger, browser *envcore.Browser, factory Factory, cfg Config) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	s := &Server{
		log:        log,
		cfg:        cfg,
		browser:    browser,
		factory:    factory,
		metrics:    newMetrics(),
		started:    time.Now(),
		creating:   make(chan struct{}, cfg.MaxCreating),
		sessions:   map[string]*session{},
		groups:     map[string]*group{},
		stop:       make(chan struct{}),
		reaperDone: make(chan struct{}),
	}
	go s.reap()
	return s
}

// Handler serves /v1/ws (the protocol), /openenv/ws (OpenEnv's protocol),
// /healthz and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/ws", s.serveWS)
	mux.HandleFunc("/openenv/ws", s.serveOpenEnv)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if !s.browser.Alive() {
			http.Error(w, "browser process is gone; restart the server", http.StatusServiceUnavailable)
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

// Close closes every environment and stops the reaper.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	list := make([]*session, 0, len(s.sessions))
	for _, x := range s.sessions {
		list = append(list, x)
	}
	s.mu.Unlock()
	close(s.stop)
	<-s.reaperDone
	for _, x := range list {
		s.closeSession(x, "server shutting down")
	}
	s.closeGroups(true)
	return nil
}

// ---- sessions -----------------------------------------------------------

// session is one environment. Its requests run one at a time, in arrival
// order, on its own worker goroutine.
type session struct {
	id       string
	site     string
	env      *envcore.Env
	inst     Instance
	jobs     chan func()
	done     chan struct{}
	lastUsed atomic.Int64 // unix nanoseconds
	closed   atomic.Bool

	// Touched only by the worker.
	episode   Episode
	started   time.Time
	steps     int
	over      string // why the episode is over: terminated, truncated
	maxSteps  int
	timeLimit time.Duration
	stepLimit time.Duration
	everyStep bool // grade after every step (make's evaluate_every_step)
	snaps     map[string]snapshotInfo
	rec       *recorder
	spec      MakeSpec
	joined    *group // the group make joined (consumed by the first episode)
	leads     bool
	// The group whose members may still fork this (leader's) instance's
	// snapshot: its next reset or close waits for them (group.lent).
	lending atomic.Pointer[group]
	// Set by a recorder: observe the accessibility tree (and screenshots)
	// on every step, whatever the client asked for.
	recordObserve, recordShots bool
}

func (x *session) touch() { x.lastUsed.Store(time.Now().UnixNano()) }

func (x *session) work() {
	for {
		select {
		case job := <-x.jobs:
			x.touch()
			job()
			x.touch()
		case <-x.done:
			return
		}
	}
}

// enqueue runs job on the session's worker. It fails only when the session
// is closed.
func (x *session) enqueue(job func()) bool {
	if x.closed.Load() {
		return false
	}
	select {
	case x.jobs <- job:
		return true
	case <-x.done:
		return false
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "env-" + hex.EncodeToString(b[:])
}

func (s *Server) session(id string) (*session, *Error) {
	if id == "" {
		return nil, errorf(CodeBadArgs, false, "this op needs env, the id make returned")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.sessions[id]
	if !ok {
		return nil, errorf(CodeUnknownEnv, false, "no environment %q: it was closed, reclaimed after %s idle, or never made; make a new one", id, s.cfg.TTL)
	}
	return x, nil
}

// reserve takes a slot for a new environment, or answers capacity.
func (s *Server) reserve() (*session, *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errorf(CodeShuttingDown, true, "the server is shutting down")
	}
	if len(s.sessions) >= s.cfg.MaxEnvs {
		e := errorf(CodeCapacity, true, "%d environments are open, the most this server allows; close one or retry later", len(s.sessions))
		e.RetryAfter = 5
		return nil, e
	}
	x := &session{id: newID(), jobs: make(chan func(), 64), done: make(chan struct{})}
	x.touch()
	s.sessions[x.id] = x
	s.metrics.envsLive.Set(float64(len(s.sessions)))
	return x, nil
}

func (s *Server) drop(x *session) {
	s.mu.Lock()
	delete(s.sessions, x.id)
	s.metrics.envsLive.Set(float64(len(s.sessions)))
	s.mu.Unlock()
}

// closeSession closes an environment once, whatever its worker is doing.
func (s *Server) closeSession(x *session, why string) {
	if !x.closed.CompareAndSwap(false, true) {
		return
	}
	s.drop(x)
	close(x.done)
	if x.rec != nil {
		x.rec.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if x.env != nil {
		if err := x.env.Close(); err != nil {
			s.log.Warn("closing environment", zap.String("env", x.id), zap.Error(err))
		}
	}
	if g := x.lending.Swap(nil); g != nil {
		g.lent()
	}
	if x.inst != nil {
		if err := x.inst.Close(ctx); err != nil {
			s.log.Warn("closing site instance", zap.String("env", x.id), zap.Error(err))
		}
	}
	s.log.Info("environment closed", zap.String("env", x.id), zap.String("why", why))
}

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
	EnvsLive     int      `json:"envs_live"`
	EnvsCreating int      `json:"envs_creating"`
	MaxEnvs      int      `json:"max_envs"`
	StepsTotal   int64    `json:"steps_total"`
	UptimeS      float64  `json:"uptime_s"`
	BrowserAlive bool     `json:"browser_alive"`
	Envs         []string `json:"envs"`
}

func (s *Server) stats() Stats {
	s.mu.Lock()
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	return Stats{
		EnvsLive: len(ids), EnvsCreating: len(s.creating), MaxEnvs: s.cfg.MaxEnvs,
		StepsTotal: s.stepsTotal.Load(), UptimeS: time.Since(s.started).Seconds(),
		BrowserAlive: s.browser.Alive(), Envs: ids,
	}
}

func (s *Server) authorized(token string) bool {
	return s.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) == 1
}

var errNoBrowser = errors.New("the browser process is gone; restart the server")
