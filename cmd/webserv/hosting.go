package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// hostingFlags configure where sites run.
type hostingFlags struct {
	sites     string
	instances string
	noIncus   bool
	incus     incusmgr.Config
	noBundled bool
	shopData  string
	shopImage string
	judgeURL  string
	judgeMod  string
	webarena  webarenaOptions
	// verifiedPython runs the WebArena-Verified grader (verified.go).
	verifiedPython string
}

func (h *hostingFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.sites, "sites", "", "directory of site definitions (*.yaml, *.json; docs/sites.md)")
	fs.StringVar(&h.instances, "instances", filepath.Join(os.TempDir(), "webserv-instances"), "where the local backend keeps instance data")
	fs.BoolVar(&h.noIncus, "no-incus", false, "do not use Incus even where it is available")
	h.incusFlags(fs)
	fs.IntVar(&h.incus.Warm, "incus-warm", 0, "started instances to keep ready per Incus site")
	fs.StringVar(&h.incus.Target, "incus-target", "", "cluster member to place instances on")
	fs.BoolVar(&h.noBundled, "no-bundled", false, "do not serve the bundled shop (sites shopping and cms)")
	fs.StringVar(&h.shopData, "shop-data", bundled.DefaultDataDir(), "the bundled shop's catalog (generated on first use)")
	fs.StringVar(&h.shopImage, "shop-image", "", "run the bundled shop from this Incus image alias (webserv shop image) instead of local processes")
	fs.StringVar(&h.webarena.prefix, "webarena-images", "webarena-", "alias prefix of imported WebArena images: <prefix>shopping, <prefix>shopping-admin, <prefix>gitlab replace the bundled site of their role")
	fs.StringVar(&h.webarena.tasks, "webarena-tasks", "", "WebArena or WebArena-Lite task file (test.raw.json) for the roles served from WebArena images")
	fs.StringVar(&h.webarena.host, "webarena-host", defaultWebArenaHost, "the host WebArena's images have baked into their base URLs; their sites' origins are http://HOST:7770 (shopping), :7780 (shopping_admin), :8023 (gitlab), :9999 (reddit)")
	fs.StringVar(&h.webarena.authDir, "webarena-auth", "", "directory of WebArena's storage states (<site>_state.json) for tasks that start signed in")
	fs.StringVar(&h.judgeURL, "judge-url", os.Getenv("WEBSERV_JUDGE_URL"), "OpenAI-compatible endpoint for fuzzy_match grading, like http://127.0.0.1:8000/v1 ($WEBSERV_JUDGE_URL)")
	fs.StringVar(&h.verifiedPython, "verified-python", defaultVerifiedPython(), "a Python with webarena-verified==1.2.3 and the webserv package, which grades WebArena-Verified tasks beside the server (default $WEBSERV_PYTHON, else the repository's .venv; empty: no Verified task sets)")
	fs.StringVar(&h.judgeMod, "judge-model", envOr("WEBSERV_JUDGE_MODEL", "gpt-4-1106-preview"), "the judge's model ($WEBSERV_JUDGE_MODEL)")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (h *hostingFlags) incusFlags(fs *flag.FlagSet) {
	fs.StringVar(&h.incus.Pool, "incus-pool", "webserv", "Incus storage pool (btrfs or ZFS)")
	fs.StringVar(&h.incus.Remote, "incus-remote", "", "https URL of a remote Incus or cluster (default: the local daemon)")
	fs.StringVar(&h.incus.ClientCert, "incus-cert", "", "client certificate (PEM) for --incus-remote")
	fs.StringVar(&h.incus.ClientKey, "incus-key", "", "client key (PEM) for --incus-remote")
	fs.StringVar(&h.incus.ServerCert, "incus-server-cert", "", "server certificate (PEM) for --incus-remote")
}

// factory loads the site definitions and opens the backends they need.
// Incus being unavailable is not fatal: its sites say why they cannot
// start, and the local backend still serves.
func (h *hostingFlags) factory(ctx context.Context, log *zap.Logger) (server.Factory, func(), error) {
	var sites []*hosting.Site
	if h.sites != "" {
		var err error
		if sites, err = hosting.LoadSites(h.sites); err != nil {
			return nil, nil, err
		}
	}
	grader := &tasks.Grader{}
	if h.judgeURL != "" {
		grader.Judge = tasks.NewOpenAIJudge(h.judgeURL, h.judgeMod, os.Getenv("WEBSERV_JUDGE_KEY"))
	}
	sets := map[string]*server.SiteTasks{}
	extra := map[string][]*server.SiteTasks{} // further task sets (WebArena-Verified)
	verified := h.verifiedGrader(ctx, log)
	// Roles with an imported WebArena image run it with WebArena's tasks;
	// the others run the bundled shop.
	if !h.noIncus {
		if c, err := incusmgr.Client(h.incus); err == nil {
			if _, _, err := c.GetServer(); err == nil {
				waSites, waSets, err := webarenaSites(c, h.webarena, grader)
				if err != nil {
					return nil, nil, err
				}
				sites = append(sites, waSites...)
				for k, v := range waSets {
					sets[k] = v
				}
				if verified != nil {
					vs, err := webarenaVerifiedSets(verified, waSites, h.webarena.authDir)
					if err != nil {
						return nil, nil, err
					}
					for k, v := range vs {
						extra[k] = append(extra[k], v...)
					}
				}
			}
		}
	}
	if !h.noBundled {
		exe, err := os.Executable()
		if err != nil {
			return nil, nil, fmt.Errorf("find the webserv program to run the bundled shop: %w", err)
		}
		shopSites, shopSets, err := bundled.Sites(ctx, bundled.Options{DataDir: h.shopData, Command: []string{exe, "shop"}, IncusImage: h.shopImage, Grader: grader})
		if err != nil {
			return nil, nil, fmt.Errorf("bundled shop: %w", err)
		}
		var shopVerified map[string]*server.SiteTasks
		if verified != nil {
			if shopVerified, err = bundled.VerifiedSets(shopSets, verified); err != nil {
				return nil, nil, err
			}
		}
		for _, s := range shopSites {
			if !hasSite(sites, s.Name) {
				sites = append(sites, s)
				sets[s.Name] = shopSets[s.Name]
				if st := shopVerified[s.Name]; st != nil {
					extra[s.Name] = append(extra[s.Name], st)
				}
			}
		}
	}
	// A definition's own tasks (its tasks: files) are its site's task set.
	for _, s := range sites {
		if len(s.Tasks) == 0 {
			continue
		}
		st, files, err := server.SiteTaskSet(s, grader, verified)
		if err != nil {
			return nil, nil, err
		}
		sets[s.Name] = st
		for _, f := range files {
			log.Info("site tasks", zap.String("site", s.Name), zap.String("file", f.Path), zap.String("schema", f.Schema), zap.Int("tasks", f.Count))
		}
	}
	local, err := hosting.NewLocal(log.Named("local"), h.instances)
	if err != nil {
		return nil, nil, err
	}
	backends := []hosting.Backend{local}
	missing := map[string]string{}
	needIncus := false
	for _, s := range sites {
		needIncus = needIncus || s.Backend() == "incus"
	}
	switch {
	case !needIncus:
	case h.noIncus:
		missing["incus"] = "disabled with --no-incus"
	default:
		m, err := incusmgr.Connect(ctx, log.Named("incus"), h.incus)
		if err != nil {
			missing["incus"] = err.Error()
			log.Warn("incus backend unavailable; its sites will not start", zap.Error(err))
		} else {
			backends = append(backends, m)
			log.Info("incus backend ready", zap.String("pool", h.incus.Pool), zap.Int("warm", h.incus.Warm))
		}
	}
	for _, s := range sites {
		log.Info("site", zap.String("name", s.Name), zap.String("backend", s.Backend()))
	}
	closeAll := func() {
		if verified != nil {
			verified.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, b := range backends {
			if err := b.Close(ctx); err != nil {
				log.Warn("closing backend", zap.String("backend", b.Name()), zap.Error(err))
			}
		}
	}
	f := server.NewHostedFactory(sites, backends, missing)
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	for name, more := range extra {
		for _, st := range more {
			f.AddTaskSet(name, st)
		}
	}
	if !hasSite(sites, "gitlab") {
		f.SetUnavailable("gitlab", "no GitLab image has been imported and there is no bundled forge yet; import WebArena's GitLab image with `webserv image import --alias webarena-gitlab gitlab-populated-final-port8023.tar` and give a site definition for it (docs/sites.md)")
	}
	return f, closeAll, nil
}

func hasSite(sites []*hosting.Site, name string) bool {
	for _, s := range sites {
		if s.Name == name {
			return true
		}
	}
	return false
}

// gcCmd removes containers leaked by servers that are gone.
func gcCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	all := fs.Bool("all", false, "remove every WebServ container, base snapshots and live servers' instances too")
	var h hostingFlags
	h.incusFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := incusmgr.Client(h.incus)
	if err != nil {
		return err
	}
	removed, err := incusmgr.GC(ctx, c, *all)
	for _, name := range removed {
		fmt.Fprintln(stdout, "removed", name)
	}
	fmt.Fprintf(stdout, "%d container(s) removed\n", len(removed))
	return err
}

// imageCmd: webserv image import --alias NAME PATH, or webserv image shop.
func imageCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "shop" {
		return shopImageCmd(ctx, args[1:], stdout)
	}
	if len(args) == 0 || args[0] != "import" {
		return errors.New("usage: webserv image import --alias NAME (DOCKER-SAVE.tar | OCI-LAYOUT-DIR)")
	}
	fs := flag.NewFlagSet("image import", flag.ContinueOnError)
	alias := fs.String("alias", "", "Incus image alias to create (the site definition's incus.image)")
	var h hostingFlags
	h.incusFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *alias == "" || fs.NArg() != 1 {
		return errors.New("usage: webserv image import --alias NAME (DOCKER-SAVE.tar | OCI-LAYOUT-DIR)")
	}
	c, err := incusmgr.Client(h.incus)
	if err != nil {
		return err
	}
	info, err := incusmgr.ImportImage(ctx, c, fs.Arg(0), *alias)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported %s as %s (%s%s)\n\n# a site definition to start from:\nname: %s\nincus:\n  image: %s\nport: %d\nready:\n  path: /\n",
		fs.Arg(0), info.Alias, info.Fingerprint[:12], reusedNote(info), *alias, *alias, info.Port)
	return nil
}

// reusedNote says when an import stored nothing new.
func reusedNote(info incusmgr.ImageInfo) string {
	if info.Reused {
		return ", already in Incus: reused"
	}
	return ""
}

// shopImageCmd builds the bundled shop's Incus image from this (static)
// program and the catalog, and imports it.
func shopImageCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image shop", flag.ContinueOnError)
	alias := fs.String("alias", "webserv-shop", "Incus image alias to create (serve with --shop-image ALIAS)")
	data := fs.String("shop-data", bundled.DefaultDataDir(), "the catalog to put in the image (generated if missing)")
	var h hostingFlags
	h.incusFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := bundled.EnsureData(ctx, *data); err != nil {
		return err
	}
	img, err := shop.Image(exe, []string{"shop"}, *data)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "webserv-shop-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := incusmgr.WriteLayout(filepath.Join(dir, "oci"), img); err != nil {
		return err
	}
	c, err := incusmgr.Client(h.incus)
	if err != nil {
		return err
	}
	info, err := incusmgr.ImportImage(ctx, c, filepath.Join(dir, "oci"), *alias)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported the bundled shop as %s (%s%s); serve it with: webserv serve --shop-image %s\n", info.Alias, info.Fingerprint[:12], reusedNote(info), *alias)
	return nil
}
