package catalog

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/attack"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/miniwob"
	"github.com/webserv-rl/webserv/tasks"
)

// Options say which sites a catalogue opened with Open serves and where
// they run (webserv serve's hosting flags).
type Options struct {
	// SitesDir is a directory of site definitions (*.yaml, *.json;
	// docs/sites.md); empty: none.
	SitesDir string
	// InstancesDir is where the local backend keeps instance data.
	InstancesDir string
	// NoIncus leaves Incus out even where it is available: its sites are
	// listed as unavailable.
	NoIncus bool
	// Incus reaches the Incus daemon (local, or a remote or cluster).
	Incus incusmgr.Config
	// NoBundled leaves the bundled shop out.
	NoBundled bool
	// Bundled runs the bundled shop (its catalog data, the command that
	// runs the shop program, or its Incus image).
	Bundled bundled.Options
	// WebArena says where WebArena's images and task files are: a role
	// whose image has been imported into Incus replaces the bundled site
	// of that role.
	WebArena WebArena
	// JudgeURL, JudgeModel and JudgeKey reach an OpenAI-compatible judge
	// for fuzzy_match grading; empty JudgeURL: none.
	JudgeURL, JudgeModel, JudgeKey string
	// StrictAnswers grades the answers of WebArena's configs as typed
	// values, as the project's own tasks are (tasks.Grader.StrictAnswers):
	// rewards a listing answer cannot earn, no longer comparable with
	// published scores. make's strict_answers asks it per environment.
	StrictAnswers bool
	// VerifiedPython is a Python with webarena-verified==1.2.3 and the
	// webserv package, which grades WebArena-Verified tasks beside the
	// server; empty: no Verified task sets.
	VerifiedPython string
	// MiniWoB is the miniwob package's html directory, served as the site
	// miniwob with MiniWoB++'s tasks; empty: found by asking MiniWoBPython
	// where the package is installed, and without either the site is
	// listed as unavailable with how to install it.
	MiniWoB, MiniWoBPython string
	// NoMiniWoB leaves the miniwob site out.
	NoMiniWoB bool
}

// Open makes the catalogue o describes: it loads the site definitions,
// adds the sites of imported WebArena images and the bundled shop (for the
// roles no image serves) with their task sets, the WebArena-Verified sets
// where a grader can start, and opens the backends the sites need. Incus
// being unavailable is not fatal: its sites say why they cannot start, and
// the local backend still serves. Close frees the backends and the grader.
func Open(ctx context.Context, log *zap.Logger, o Options) (*Catalog, error) {
	if log == nil {
		log = zap.NewNop()
	}
	var sites []*hosting.Site
	if o.SitesDir != "" {
		var err error
		if sites, err = hosting.LoadSites(o.SitesDir); err != nil {
			return nil, err
		}
	}
	grader := &tasks.Grader{StrictAnswers: o.StrictAnswers}
	if o.JudgeURL != "" {
		grader.Judge = tasks.NewOpenAIJudge(o.JudgeURL, o.JudgeModel, o.JudgeKey)
	}
	sets := map[string]*TaskSet{}
	extra := map[string][]*TaskSet{} // further task sets (WebArena-Verified)
	verified := verifiedGrader(ctx, log, o.VerifiedPython)
	closeVerified := func() {
		if verified != nil {
			verified.Close()
		}
	}
	// Roles with an imported WebArena image run it with WebArena's tasks;
	// the others run the bundled shop.
	if !o.NoIncus {
		if c, err := incusmgr.Client(o.Incus); err == nil {
			if _, _, err := c.GetServer(); err == nil {
				waSites, waSets, err := webarenaSites(c, o.WebArena, grader)
				if err != nil {
					closeVerified()
					return nil, err
				}
				sites = append(sites, waSites...)
				for k, v := range waSets {
					sets[k] = v
				}
				if verified != nil {
					vs, err := webarenaVerifiedSets(verified, waSites, o.WebArena.AuthDir)
					if err != nil {
						closeVerified()
						return nil, err
					}
					for k, v := range vs {
						extra[k] = append(extra[k], v...)
					}
				}
			}
		}
	}
	if !o.NoBundled {
		shopSites, shopSets, err := Bundled(ctx, o.Bundled, grader)
		if err != nil {
			closeVerified()
			return nil, fmt.Errorf("bundled shop: %w", err)
		}
		var shopVerified map[string]*TaskSet
		if verified != nil {
			if shopVerified, err = BundledVerified(shopSets, verified); err != nil {
				closeVerified()
				return nil, err
			}
		}
		for _, s := range shopSites {
			if !hasSite(sites, s.Name) {
				sites = append(sites, s)
				sets[s.Name] = shopSets[s.Name]
				if st := shopVerified[s.Name]; st != nil {
					extra[s.Name] = append(extra[s.Name], st)
				}
				extra[s.Name] = append(extra[s.Name], Attacked(shopSets[s.Name], s.Name, attack.Library()))
			}
		}
	}
	var miniwobWhy string
	if !o.NoMiniWoB && !hasSite(sites, miniwob.SiteName) {
		site, st, err := miniwobSite(ctx, o)
		if err != nil {
			miniwobWhy = err.Error()
			log.Info("no MiniWoB++ site", zap.Error(err))
		} else {
			sites = append(sites, site)
			sets[site.Name] = st
		}
	}
	// A definition's own tasks (its tasks: files) are its site's task set.
	for _, s := range sites {
		if len(s.Tasks) == 0 {
			continue
		}
		st, files, err := SiteTaskSet(s, grader, verified)
		if err != nil {
			closeVerified()
			return nil, err
		}
		sets[s.Name] = st
		for _, f := range files {
			log.Info("site tasks", zap.String("site", s.Name), zap.String("file", f.Path), zap.String("schema", f.Schema), zap.Int("tasks", f.Count))
		}
	}
	local, err := hosting.NewLocal(log.Named("local"), o.InstancesDir)
	if err != nil {
		closeVerified()
		return nil, err
	}
	backends := []hosting.Backend{local, hosting.NewStatic(log.Named("static"))}
	missing := map[string]string{}
	needIncus := false
	for _, s := range sites {
		needIncus = needIncus || s.Backend() == "incus"
	}
	switch {
	case !needIncus:
	case o.NoIncus:
		missing["incus"] = "disabled with --no-incus"
	default:
		m, err := incusmgr.Connect(ctx, log.Named("incus"), o.Incus)
		if err != nil {
			missing["incus"] = err.Error()
			log.Warn("incus backend unavailable; its sites will not start", zap.Error(err))
		} else {
			backends = append(backends, m)
			log.Info("incus backend ready", zap.String("pool", o.Incus.Pool), zap.Int("warm", o.Incus.Warm))
		}
	}
	for _, s := range sites {
		log.Info("site", zap.String("name", s.Name), zap.String("backend", s.Backend()))
	}
	f := New(sites, backends, missing)
	f.close = func() {
		closeVerified()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, b := range backends {
			if err := b.Close(ctx); err != nil {
				log.Warn("closing backend", zap.String("backend", b.Name()), zap.Error(err))
			}
		}
	}
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	for name, more := range extra {
		for _, st := range more {
			f.AddTaskSet(name, st)
		}
	}
	if miniwobWhy != "" {
		f.SetUnavailable(miniwob.SiteName, miniwobWhy)
	}
	if !hasSite(sites, "gitlab") {
		f.SetUnavailable("gitlab", "no GitLab image has been imported and there is no bundled forge yet; import WebArena's GitLab image with `webserv image import --alias webarena-gitlab gitlab-populated-final-port8023.tar` and give a site definition for it (docs/sites.md)")
	}
	return f, nil
}

// verifiedGrader starts the WebArena-Verified grader process with python,
// or returns nil (and logs why) when there is none: Verified task sets are
// then not offered.
func verifiedGrader(ctx context.Context, log *zap.Logger, python string) *tasks.VerifiedGrader {
	if python == "" {
		log.Info("no WebArena-Verified grader: give --verified-python (a Python with webarena-verified==1.2.3 and this package)")
		return nil
	}
	g, err := tasks.NewVerifiedGrader(ctx, log.Named("verified"), tasks.VerifiedCommand(python))
	if err != nil {
		log.Warn("WebArena-Verified task sets are not offered", zap.Error(err))
		return nil
	}
	log.Info("WebArena-Verified grader ready", zap.String("version", g.Hello().Version), zap.String("dataset", g.Hello().Full))
	return g
}

// miniwobSite is MiniWoB++'s site and task set from the package's html
// directory: o.MiniWoB, else where o.MiniWoBPython has the package.
func miniwobSite(ctx context.Context, o Options) (*hosting.Site, *TaskSet, error) {
	dir := o.MiniWoB
	if dir == "" {
		var err error
		if dir, err = miniwob.FindDir(ctx, o.MiniWoBPython); err != nil {
			return nil, nil, fmt.Errorf("%w; %s", err, miniwob.Install)
		}
	}
	pages, err := miniwob.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	return pages.Site(), MiniWoBTaskSet(pages), nil
}

// MiniWoBTaskSet is the task set of MiniWoB++'s pages.
func MiniWoBTaskSet(p *miniwob.Pages) *TaskSet {
	return &TaskSet{Set: &tasks.Set{ByID: map[int]*tasks.Task{}}, Name: miniwob.TaskSetName, Variant: miniwob.TaskSetName, Roles: []string{miniwob.SiteName}, MiniWoB: p}
}
