// Package bundled wires WebServ's bundled shop into a server: site
// definitions for its two roles, "shopping" (the storefront) and "cms"
// (the admin panel), on the local or the Incus backend, and their task
// sets with grading.
//
//	sites, sets, err := bundled.Sites(ctx, bundled.Options{DataDir: dir, Command: []string{exe, "shop"}})
//	f := server.NewHostedFactory(sites, backends, nil)
//	for name, st := range sets {
//		f.SetTasks(name, st)
//	}
package bundled

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// Options choose how the bundled shop runs.
type Options struct {
	// DataDir holds the generated catalog (made on first use: seed 1,
	// small). Local instances each get a copy.
	DataDir string
	// Command runs the shop program with its arguments following, like
	// [/usr/local/bin/webserv, shop] or [bin/shop]. Local backend only.
	Command []string
	// IncusImage, when set, runs the shop from this Incus image alias
	// (see ImageCommand) in place of local processes.
	IncusImage string
	// Grader scores the tasks (its Judge is unused: bundled tasks need none).
	Grader *tasks.Grader
}

// Roles are the bundled shop's site names and where their episodes start.
var Roles = map[string]string{"shopping": "/", "cms": "/admin"}

// Sites returns the definitions of the shopping and cms sites and their
// task sets, keyed by site name.
func Sites(ctx context.Context, o Options) ([]*hosting.Site, map[string]*server.SiteTasks, error) {
	if o.IncusImage == "" {
		if len(o.Command) == 0 {
			return nil, nil, fmt.Errorf("bundled shop: give the command that runs the shop program")
		}
		if err := EnsureData(ctx, o.DataDir); err != nil {
			return nil, nil, err
		}
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	if o.Grader == nil {
		o.Grader = &tasks.Grader{}
	}
	var sites []*hosting.Site
	sets := map[string]*server.SiteTasks{}
	for _, name := range []string{"shopping", "cms"} {
		s := &hosting.Site{
			Name:        name,
			Description: map[string]string{"shopping": "the bundled shop's storefront", "cms": "the bundled shop's admin panel (WebArena's shopping_admin role)"}[name],
			Ready:       hosting.Probe{Path: "/healthz", TimeoutMs: 30000},
			Env:         map[string]string{"EVAL_TOKEN": token},
			StartPath:   Roles[name],
		}
		if o.IncusImage != "" {
			s.Incus = &hosting.IncusRun{Image: o.IncusImage}
			s.Port = 8080
		} else {
			cmd := append(append([]string{}, o.Command...), "serve", "--port", "{port}", "--data", "{data}")
			s.Local = &hosting.LocalRun{Command: cmd, DataDir: o.DataDir}
		}
		if err := s.Validate(); err != nil {
			return nil, nil, err
		}
		sites = append(sites, s)
		raw, err := shop.TaskFile(name)
		if err != nil {
			return nil, nil, err
		}
		set, err := tasks.ParseTasks(raw, "bundled "+name+".json")
		if err != nil {
			return nil, nil, err
		}
		sets[name] = &server.SiteTasks{
			Set: set, Name: "bundled-" + name, Variant: "bundled",
			Roles:     []string{"shopping", "shopping_admin"},
			Admin:     tasks.Account{Username: shop.AdminUser, Password: shop.AdminPassword},
			EvalToken: token, Login: login, Grader: o.Grader,
		}
	}
	return sites, sets, nil
}

// login signs an episode in on the shop at its origin, reached through hc.
func login(ctx context.Context, hc *http.Client, base string, l *tasks.TaskLogin) ([]envcore.Cookie, error) {
	cks, err := shop.LoginCookies(ctx, hc, base, l.As, l.Email)
	if err != nil {
		return nil, err
	}
	out := make([]envcore.Cookie, len(cks))
	for i, c := range cks {
		out[i] = envcore.Cookie{Name: c.Name, Value: c.Value, URL: base + "/", HTTPOnly: true}
	}
	return out, nil
}

// EnsureData generates the default catalog in dir unless it has one.
func EnsureData(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, shop.DBFile)); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("bundled shop data: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".shop-data-")
	if err != nil {
		return fmt.Errorf("bundled shop data: %w", err)
	}
	if err := shop.Generate(ctx, tmp, shop.GenerateOptions{Seed: 1, Scale: shop.ScaleSmall}); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(dir, shop.DBFile)); serr == nil {
			return nil // another process made it first
		}
		return fmt.Errorf("bundled shop data: %w", err)
	}
	return nil
}

// DefaultDataDir is where the catalog lives when no directory is given:
// $WEBSERV_CACHE or ~/.cache/webserv, then shop-small-seed1.
func DefaultDataDir() string {
	base := os.Getenv("WEBSERV_CACHE")
	if base == "" {
		if d, err := os.UserCacheDir(); err == nil {
			base = filepath.Join(d, "webserv")
		} else {
			base = filepath.Join(os.TempDir(), "webserv-cache")
		}
	}
	return filepath.Join(base, "shop-small-seed"+strconv.Itoa(1))
}
