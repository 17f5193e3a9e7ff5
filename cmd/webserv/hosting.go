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
)

// hostingFlags configure where sites run.
type hostingFlags struct {
	sites     string
	instances string
	noIncus   bool
	incus     incusmgr.Config
}

func (h *hostingFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.sites, "sites", "", "directory of site definitions (*.yaml, *.json; docs/sites.md)")
	fs.StringVar(&h.instances, "instances", filepath.Join(os.TempDir(), "webserv-instances"), "where the local backend keeps instance data")
	fs.BoolVar(&h.noIncus, "no-incus", false, "do not use Incus even where it is available")
	h.incusFlags(fs)
	fs.IntVar(&h.incus.Warm, "incus-warm", 0, "started instances to keep ready per Incus site")
	fs.StringVar(&h.incus.Target, "incus-target", "", "cluster member to place instances on")
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
	if h.sites == "" {
		log.Info("no --sites: serving the open site only")
		return server.OpenFactory{}, func() {}, nil
	}
	sites, err := hosting.LoadSites(h.sites)
	if err != nil {
		return nil, nil, err
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
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, b := range backends {
			if err := b.Close(ctx); err != nil {
				log.Warn("closing backend", zap.String("backend", b.Name()), zap.Error(err))
			}
		}
	}
	return server.NewHostedFactory(sites, backends, missing), closeAll, nil
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

// imageCmd: webserv image import --alias NAME PATH
func imageCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
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
	fmt.Fprintf(stdout, "imported %s as %s (%s)\n\n# a site definition to start from:\nname: %s\nincus:\n  image: %s\nport: %d\nready:\n  path: /\n",
		fs.Arg(0), info.Alias, info.Fingerprint[:12], *alias, *alias, info.Port)
	return nil
}
