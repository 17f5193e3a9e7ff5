package ui

import (
	"context"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/trajectory"
)

//go:embed static
var static embed.FS

// Screens gives live pictures of environments' pages.
type Screens interface {
	// Screencast calls frame with JPEG pictures of env's page as it
	// changes, until ctx ends or frame returns an error. Nothing is
	// captured when nobody calls it.
	Screencast(ctx context.Context, env string, frame func(jpeg []byte) error) error
}

// Rerunner runs a recorded episode's actions again on a fresh environment.
type Rerunner interface {
	Rerun(ctx context.Context, ep *trajectory.Episode) (trajectory.RerunReport, error)
}

// Config is what a Handler serves; nil parts are left out.
type Config struct {
	Log      *zap.Logger
	Board    *Board   // the live view
	Screens  Screens  // live pictures
	Replay   *Replay  // the replayer
	Rerunner Rerunner // re-runs from the replayer
	// Poll is how often an open live view looks for changes. Default
	// 250ms.
	Poll time.Duration
}

// Handler serves the UI's pages and their JSON API. Mount it under a
// prefix with http.StripPrefix; the pages use relative URLs, and pass the
// token of their own URL (?token=) on to every request they make.
func Handler(cfg Config) http.Handler {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	h := &handler{cfg: cfg}
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page := "live.html"
		if cfg.Board == nil {
			page = "replay.html"
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + page
		files.ServeHTTP(w, r2)
	})
	mux.Handle("GET /", files)
	mux.HandleFunc("GET /api/config", h.config)
	if cfg.Board != nil {
		mux.HandleFunc("GET /api/envs", h.envs)
		mux.HandleFunc("GET /api/envs/{id}", h.env)
		mux.HandleFunc("POST /api/envs/{id}/review", h.review)
		mux.HandleFunc("GET /api/events", h.events)
		if cfg.Screens != nil {
			mux.HandleFunc("GET /api/envs/{id}/screen", h.screen)
		}
	}
	if cfg.Replay != nil {
		mux.HandleFunc("GET /api/episodes", h.episodes)
		mux.HandleFunc("GET /api/episode", h.episode)
		mux.HandleFunc("GET /api/shot", h.shot)
		if cfg.Rerunner != nil {
			mux.HandleFunc("POST /api/rerun", h.rerun)
		}
	}
	return mux
}

type handler struct {
	cfg Config
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// config tells the pages which parts this server has.
func (h *handler) config(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{
		"live": h.cfg.Board != nil, "screens": h.cfg.Screens != nil,
		"replay": h.cfg.Replay != nil, "rerun": h.cfg.Rerunner != nil,
	})
}

func (h *handler) envs(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"envs": h.cfg.Board.List()})
}

func (h *handler) env(w http.ResponseWriter, r *http.Request) {
	d, ok := h.cfg.Board.Detail(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, ErrNoEnv)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (h *handler) review(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Approve bool   `json:"approve"`
		Comment string `json:"comment"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("send JSON {\"approve\": true|false, \"comment\": \"...\"}: %w", err))
		return
	}
	if err := h.cfg.Board.Decide(r.PathValue("id"), body.Approve, body.Comment); err != nil {
		status := http.StatusConflict
		if errors.Is(err, ErrNoEnv) {
			status = http.StatusNotFound
		}
		writeError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// events is a server-sent event stream: the list of environments (and,
// with ?env=ID, that environment's detail) each time the board changes,
// looked for every Poll.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, errors.New("this connection cannot stream events"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	id := r.URL.Query().Get("env")
	tick := time.NewTicker(h.cfg.Poll)
	defer tick.Stop()
	var seen uint64
	first := true
	for {
		if v := h.cfg.Board.Version(); first || v != seen {
			first, seen = false, v
			msg := map[string]any{"envs": h.cfg.Board.List()}
			if id != "" {
				if d, ok := h.cfg.Board.Detail(id); ok {
					msg["env"] = d
				}
			}
			b, _ := json.Marshal(msg)
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// screen is a live picture of an environment's page: a server-sent event
// stream whose messages are base64 JPEG frames. The screencast runs while
// the stream is open (a page shows it in an <img> with data: URLs).
func (h *handler) screen(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, errors.New("this connection cannot stream frames"))
		return
	}
	if _, ok := h.cfg.Board.Detail(r.PathValue("id")); !ok {
		writeError(w, http.StatusNotFound, ErrNoEnv)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fl.Flush()
	enc := base64.StdEncoding
	buf := []byte{}
	err := h.cfg.Screens.Screencast(r.Context(), r.PathValue("id"), func(jpeg []byte) error {
		buf = append(buf[:0], "data: "...)
		buf = enc.AppendEncode(buf, jpeg)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		fl.Flush()
		return nil
	})
	if err != nil && r.Context().Err() == nil {
		h.cfg.Log.Debug("screencast ended", zap.String("env", r.PathValue("id")), zap.Error(err))
	}
}

func (h *handler) episodes(w http.ResponseWriter, r *http.Request) {
	list, err := h.cfg.Replay.Episodes()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"dir": h.cfg.Replay.Dir(), "episodes": list})
}

// episodeView is an episode as the replayer reads it: its lines without
// screenshots (fetched one by one from /api/shot), and which steps have one.
type episodeView struct {
	Summary trajectory.Summary `json:"summary"`
	Head    trajectory.Line    `json:"head"`
	Reset   *trajectory.Line   `json:"reset"`
	Steps   []trajectory.Line  `json:"steps"`
	Shots   []bool             `json:"shots"` // index 0: the reset's, i: step i's
	// Network is each step's requests (index as Shots), when the
	// episode's network trace was recorded.
	Network [][]trajectory.Request `json:"network,omitempty"`
}

func withoutShot(l *trajectory.Line) (*trajectory.Line, bool) {
	if l == nil {
		return nil, false
	}
	c := *l
	if c.Obs == nil {
		return &c, false
	}
	o := *c.Obs
	has := len(o.Screenshot) > 0
	o.Screenshot = nil
	c.Obs = &o
	return &c, has
}

func (h *handler) episode(w http.ResponseWriter, r *http.Request) {
	rel := r.URL.Query().Get("path")
	ep, err := h.cfg.Replay.Episode(rel)
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	net, err := h.cfg.Replay.Network(rel)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	v := episodeView{Summary: ep.Summarize(), Head: ep.Head, Steps: make([]trajectory.Line, len(ep.Steps)), Shots: make([]bool, len(ep.Steps)+1), Network: net}
	v.Reset, v.Shots[0] = withoutShot(ep.Reset)
	for i := range ep.Steps {
		l, has := withoutShot(&ep.Steps[i])
		v.Steps[i], v.Shots[i+1] = *l, has
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *handler) shot(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(r.URL.Query().Get("step"))
	if err != nil {
		writeError(w, http.StatusBadRequest, errors.New("step must be a number: 0 for the first observation, n for step n's"))
		return
	}
	png, err := h.cfg.Replay.Screenshot(r.URL.Query().Get("path"), i)
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "max-age=3600")
	_, _ = w.Write(png)
}

func (h *handler) rerun(w http.ResponseWriter, r *http.Request) {
	ep, err := h.cfg.Replay.Episode(r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	rep, err := h.cfg.Rerunner.Rerun(r.Context(), ep)
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Errorf("re-run failed: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
