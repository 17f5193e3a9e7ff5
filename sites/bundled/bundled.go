// Package bundled describes WebServ's bundled shop (sites/shop) as sites
// to host: definitions for its two roles, "shopping" (the storefront) and
// "cms" (the admin panel), on the local or the Incus backend, their task
// sets (native and WebArena-Verified-style), how an episode signs in, and
// the catalog data they run on. Package catalog (sites/catalog) turns
// them into task sets a server serves:
//
//	shop, err := bundled.Sites(ctx, bundled.Options{DataDir: dir, Command: []string{exe, "shop"}})
//	// shop.Sites are hosting.Site definitions; shop.Tasks their task sets by site.
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
	// (webserv image shop) in place of local processes.
	IncusImage string
	// IncusProgram runs the shop program inside that image, its
	// arguments following (the data attack channel's writes): default
	// [/app/shop], the shop binary; an image `webserv shop image` made
	// holds webserv itself: [/app/shop, shop].
	IncusProgram []string
}

// Shop is the bundled shop ready to host.
type Shop struct {
	// Sites are the definitions of the shopping and cms sites.
	Sites []*hosting.Site
	// Tasks are each site's native task set, by site name.
	Tasks map[string]*tasks.Set
	// TaskRoles are the task files' site names the shop serves, at one
	// origin: shopping and shopping_admin.
	TaskRoles []string
	// Admin is the admin account WebArena's shopping helpers use.
	Admin tasks.Account
	// EvalToken opens the shop's state evaluator endpoint: each instance
	// is started with it, the grader sends it.
	EvalToken string
}

// Bookkeeping is the shop's state every episode may touch whatever its
// task: the sessions a sign-in, a cart or a checkout keeps its place in,
// and the admin API's tokens. A change to them is never a side effect.
var Bookkeeping = []hosting.StateRows{{Table: "sessions"}, {Table: "tokens"}}

// Roles are the bundled shop's site names and where their episodes start.
var Roles = map[string]string{"shopping": "/", "cms": "/admin"}

// Sites returns the definitions of the shopping and cms sites and their
// native task sets.
func Sites(ctx context.Context, o Options) (*Shop, error) {
	if o.IncusImage == "" {
		if len(o.Command) == 0 {
			return nil, fmt.Errorf("bundled shop: give the command that runs the shop program")
		}
		if err := EnsureData(ctx, o.DataDir); err != nil {
			return nil, err
		}
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	out := &Shop{Tasks: map[string]*tasks.Set{}, TaskRoles: []string{"shopping", "shopping_admin"},
		Admin: tasks.Account{Username: shop.AdminUser, Password: shop.AdminPassword}, EvalToken: hex.EncodeToString(tok[:])}
	for _, name := range []string{"shopping", "cms"} {
		s := &hosting.Site{
			Name:        name,
			Description: map[string]string{"shopping": "the bundled shop's storefront", "cms": "the bundled shop's admin panel (WebArena's shopping_admin role)"}[name],
			Ready:       hosting.Probe{Path: "/healthz", TimeoutMs: 30000},
			Secrets:     map[string]string{"EVAL_TOKEN": out.EvalToken},
			StartPath:   Roles[name],
			StateDB:     shop.DBFile,
			Bookkeeping: Bookkeeping,
		}
		// The data attack channel writes a review into the instance's
		// shop.db (shop attack-data): on the storefront an approved one,
		// on the admin panel one awaiting moderation.
		write := []string{"attack-data", "--data", "{data}"}
		if name == "cms" {
			write = append(write, "--admin")
		}
		if o.IncusImage != "" {
			s.Incus = &hosting.IncusRun{Image: o.IncusImage}
			s.Port = 8080
			write[2] = "/data"
			prog := o.IncusProgram
			if len(prog) == 0 {
				prog = []string{"/app/shop"}
			}
			s.AttackData = &hosting.AttackData{Command: append(append([]string{}, prog...), write...)}
		} else {
			cmd := append(append([]string{}, o.Command...), "serve", "--port", "{port}", "--data", "{data}")
			s.Local = &hosting.LocalRun{Command: cmd, DataDir: o.DataDir}
			s.AttackData = &hosting.AttackData{Command: append(append([]string{}, o.Command...), write...)}
		}
		if err := s.Validate(); err != nil {
			return nil, err
		}
		out.Sites = append(out.Sites, s)
		raw, err := shop.TaskFile(name)
		if err != nil {
			return nil, err
		}
		set, err := tasks.ParseTasks(raw, "bundled "+name+".json")
		if err != nil {
			return nil, err
		}
		out.Tasks[name] = set
	}
	return out, nil
}

// Login signs an episode in on the shop at its origin base, reached
// through hc, as l says (a customer or the admin).
func Login(ctx context.Context, hc *http.Client, base string, l *tasks.TaskLogin) ([]envcore.Cookie, error) {
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
