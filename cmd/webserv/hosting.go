package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/sites/shop"
)

// hostingFlags configure where sites run: they fill the options of the
// site catalogue (package catalog).
type hostingFlags struct {
	opts catalog.Options
}

func (h *hostingFlags) register(fs *flag.FlagSet) {
	o := &h.opts
	fs.StringVar(&o.SitesDir, "sites", "", "directory of site definitions (*.yaml, *.json; docs/sites.md)")
	fs.StringVar(&o.InstancesDir, "instances", filepath.Join(os.TempDir(), "webserv-instances"), "where the local backend keeps instance data")
	fs.BoolVar(&o.NoIncus, "no-incus", false, "do not use Incus even where it is available")
	h.incusFlags(fs)
	fs.IntVar(&o.Incus.Warm, "incus-warm", 0, "started instances to keep ready per Incus site")
	fs.StringVar(&o.Incus.Target, "incus-target", "", "cluster member to place instances on")
	fs.BoolVar(&o.NoBundled, "no-bundled", false, "do not serve the bundled shop (sites shopping and cms)")
	fs.StringVar(&o.Bundled.DataDir, "shop-data", bundled.DefaultDataDir(), "the bundled shop's catalog (generated on first use)")
	fs.StringVar(&o.Bundled.IncusImage, "shop-image", "", "run the bundled shop from this Incus image alias (webserv shop image) instead of local processes")
	fs.StringVar(&o.WebArena.ImagePrefix, "webarena-images", "webarena-", "alias prefix of imported WebArena images: <prefix>shopping, <prefix>shopping-admin, <prefix>gitlab replace the bundled site of their role")
	fs.StringVar(&o.WebArena.Tasks, "webarena-tasks", "", "WebArena or WebArena-Lite task file (test.raw.json) for the roles served from WebArena images")
	fs.StringVar(&o.WebArena.Host, "webarena-host", catalog.DefaultWebArenaHost, "the host WebArena's images have baked into their base URLs; their sites' origins are http://HOST:7770 (shopping), :7780 (shopping_admin), :8023 (gitlab), :9999 (reddit)")
	fs.StringVar(&o.WebArena.AuthDir, "webarena-auth", "", "directory of WebArena's storage states (<site>_state.json) for tasks that start signed in")
	fs.StringVar(&o.JudgeURL, "judge-url", os.Getenv("WEBSERV_JUDGE_URL"), "OpenAI-compatible endpoint for fuzzy_match grading, like http://127.0.0.1:8000/v1 ($WEBSERV_JUDGE_URL)")
	fs.BoolVar(&o.StrictAnswers, "strict-answers", false, "grade the answers of WebArena's task files as typed values, as the bundled and sites' own tasks are: an answer listing candidates earns 0 (rewards no longer comparable with published WebArena scores; make's strict_answers asks it per environment)")
	fs.StringVar(&o.VerifiedPython, "verified-python", defaultVerifiedPython(), "a Python with webarena-verified==1.2.3 and the webserv package, which grades WebArena-Verified tasks beside the server (default $WEBSERV_PYTHON, else the repository's .venv; empty: no Verified task sets)")
	fs.StringVar(&o.MiniWoB, "miniwob", os.Getenv("WEBSERV_MINIWOB"), "the miniwob package's html directory, served as the site miniwob with MiniWoB++'s tasks (default $WEBSERV_MINIWOB, else where the Python of --verified-python's default has the package installed: pip install miniwob==1.1.0)")
	fs.BoolVar(&o.NoMiniWoB, "no-miniwob", false, "do not serve MiniWoB++'s tasks (site miniwob)")
	fs.StringVar(&o.JudgeModel, "judge-model", envOr("WEBSERV_JUDGE_MODEL", "gpt-4-1106-preview"), "the judge's model ($WEBSERV_JUDGE_MODEL)")
}

// defaultVerifiedPython is the Python that grades WebArena-Verified tasks:
// $WEBSERV_PYTHON, else the repository's venv beside bin/webserv (make
// venv installs webarena-verified there), else none.
func defaultVerifiedPython() string {
	if p := os.Getenv("WEBSERV_PYTHON"); p != "" {
		return p
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), "..", ".venv", "bin", "python")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (h *hostingFlags) incusFlags(fs *flag.FlagSet) {
	o := &h.opts.Incus
	fs.StringVar(&o.Pool, "incus-pool", "webserv", "Incus storage pool (btrfs or ZFS)")
	fs.StringVar(&o.Remote, "incus-remote", "", "https URL of a remote Incus or cluster (default: the local daemon)")
	fs.StringVar(&o.ClientCert, "incus-cert", "", "client certificate (PEM) for --incus-remote")
	fs.StringVar(&o.ClientKey, "incus-key", "", "client key (PEM) for --incus-remote")
	fs.StringVar(&o.ServerCert, "incus-server-cert", "", "server certificate (PEM) for --incus-remote")
}

// open opens the site catalogue the flags describe; the bundled shop
// runs as this program's shop command.
func (h *hostingFlags) open(ctx context.Context, log *zap.Logger) (*catalog.Catalog, error) {
	o := h.opts
	o.JudgeKey = os.Getenv("WEBSERV_JUDGE_KEY")
	if o.MiniWoB == "" {
		o.MiniWoBPython = defaultVerifiedPython()
	}
	if o.Bundled.IncusImage != "" && len(o.Bundled.IncusProgram) == 0 {
		o.Bundled.IncusProgram = []string{"/app/shop", "shop"} // the image webserv shop image makes holds webserv
	}
	if !o.NoBundled && o.Bundled.IncusImage == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the webserv program to run the bundled shop: %w", err)
		}
		o.Bundled.Command = []string{exe, "shop"}
	}
	return catalog.Open(ctx, log, o)
}

// gcCmd removes containers leaked by servers that are gone.
func gcCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	all := fs.Bool("all", false, "remove every WebServ container, base snapshots and live servers' instances too")
	var h hostingFlags
	h.incusFlags(fs)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	c, err := incusmgr.Client(h.opts.Incus)
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
	if err := parseArgs(fs, args[1:]); err != nil {
		return err
	}
	if *alias == "" || fs.NArg() != 1 {
		return errors.New("usage: webserv image import --alias NAME (DOCKER-SAVE.tar | OCI-LAYOUT-DIR)")
	}
	c, err := incusmgr.Client(h.opts.Incus)
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
	if err := parseArgs(fs, args); err != nil {
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
	c, err := incusmgr.Client(h.opts.Incus)
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
