package shop

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a running shop.
type Options struct {
	// EvalToken, when set, enables POST /__webserv/query for requests that
	// carry it in X-Webserv-Eval.
	EvalToken string
	// SuggestDelay is added to each search-suggestion response, the way a
	// real search backend takes time (default 120 ms).
	SuggestDelay time.Duration
	// ReportDelay is added to each admin report widget (default 300 ms).
	ReportDelay time.Duration
	Log         *zap.Logger
}

// Server serves one shop data directory.
type Server struct {
	db    *sql.DB
	ro    *sql.DB
	opts  Options
	pages map[string]*template.Template
	mux   *http.ServeMux
	log   *zap.Logger
}

// Open serves the database in dir. Close it when done.
func Open(dir string, opts Options) (*Server, error) {
	db, err := openDB(dir, false)
	if err != nil {
		return nil, err
	}
	ro, err := openDB(dir, true)
	if err != nil {
		db.Close()
		return nil, err
	}
	if opts.SuggestDelay == 0 {
		opts.SuggestDelay = 120 * time.Millisecond
	}
	if opts.ReportDelay == 0 {
		opts.ReportDelay = 300 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	s := &Server{db: db, ro: ro, opts: opts, log: opts.Log, mux: http.NewServeMux()}
	if err := s.parseTemplates(); err != nil {
		s.Close()
		return nil, err
	}
	s.routes()
	return s, nil
}

// Close closes the database.
func (s *Server) Close() error {
	return errors.Join(s.ro.Close(), s.db.Close())
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

var funcs = template.FuncMap{
	"money": Money,
	"stars": func(r float64) string {
		n := int(r + 0.5)
		return strings.Repeat("★", n) + strings.Repeat("☆", 5-n)
	},
	"rating1": func(r float64) string { return fmt.Sprintf("%.1f", r) },
	"add":     func(a, b int) int { return a + b },
	"date":    func(s string) string { return strings.SplitN(s, " ", 2)[0] },
	"title":   func(s string) string { return strings.ToUpper(s[:1]) + s[1:] },
}

func (s *Server) parseTemplates() error {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/admin_layout.html"))
	s.pages = map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" || name == "admin_layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return fmt.Errorf("template %s: %w", n, err)
		}
		s.pages[name] = t
	}
	return nil
}

// view is what every page template gets.
type view struct {
	Title     string
	Customer  *Customer
	Admin     string
	CartCount int64
	Cats      []Category
	Flash     string
	Errors    map[string]string
	Form      map[string]string
	Data      any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, status int, v view) {
	sess := sessionOf(r)
	ctx := r.Context()
	if sess != nil {
		if sess.customerID != 0 {
			c, err := s.customer(ctx, sess.customerID)
			if err == nil {
				v.Customer = &c
			}
		}
		if sess.adminID != 0 {
			v.Admin = AdminUser
		}
		_ = s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(qty), 0) FROM cart_items WHERE session_id = ?`, sess.id).Scan(&v.CartCount)
	}
	if v.Flash == "" {
		if c, err := r.Cookie("shop_flash"); err == nil {
			v.Flash = strings.ReplaceAll(c.Value, "+", " ")
			http.SetCookie(w, &http.Cookie{Name: "shop_flash", Path: "/", MaxAge: -1})
		}
	}
	cats, err := s.categories(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.Cats = cats
	t, ok := s.pages[name]
	if !ok {
		s.fail(w, r, fmt.Errorf("no template %s", name))
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, name, v); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// flash sets a one-time message shown on the next page, then redirects.
func flash(w http.ResponseWriter, r *http.Request, to, msg string) {
	http.SetCookie(w, &http.Cookie{Name: "shop_flash", Value: strings.ReplaceAll(msg, " ", "+"), Path: "/", HttpOnly: true})
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, sql.ErrNoRows) {
		s.notFound(w, r)
		return
	}
	s.log.Error("request failed", zap.String("path", r.URL.Path), zap.Error(err))
	http.Error(w, "internal error: "+err.Error(), http.StatusInternalServerError)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "notfound", http.StatusNotFound, view{Title: "Page not found"})
}

// now is the time as the shop's tables store it.
func now() string { return time.Now().UTC().Format(time.DateTime) }

func (s *Server) routes() {
	m := s.mux
	st, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(st)))
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.db.PingContext(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	s.storefrontRoutes()
	s.accountRoutes()
	s.checkoutRoutes()
	s.adminRoutes()
	s.apiRoutes()
}
