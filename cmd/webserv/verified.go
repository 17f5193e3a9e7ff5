package main

import (
	"context"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

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

// verifiedGrader starts the grader process, or returns nil (and logs why)
// when there is no Python with webarena-verified: Verified task sets are
// then not offered.
func (h *hostingFlags) verifiedGrader(ctx context.Context, log *zap.Logger) *server.VerifiedGrader {
	if h.verifiedPython == "" {
		log.Info("no WebArena-Verified grader: give --verified-python (a Python with webarena-verified==1.2.3 and this package)")
		return nil
	}
	g, err := server.NewVerifiedGrader(ctx, log.Named("verified"), server.VerifiedCommand(h.verifiedPython))
	if err != nil {
		log.Warn("WebArena-Verified task sets are not offered", zap.Error(err))
		return nil
	}
	log.Info("WebArena-Verified grader ready", zap.String("version", g.Hello().Version), zap.String("dataset", g.Hello().Full))
	return g
}

// webarenaVerifiedSets returns, for each WebArena role served here from
// its image, the WebArena-Verified tasks of that role alone (task_set
// "webarena-verified", ids verified.<site>.<id>) and their Hard subset
// ("webarena-verified-hard"), plus the multi-site groups whose roles are
// all served; graded by g by task id.
func webarenaVerifiedSets(g *server.VerifiedGrader, served []*hosting.Site, authDir string) (map[string][]*server.SiteTasks, error) {
	out := map[string][]*server.SiteTasks{}
	for _, subset := range []struct{ path, name string }{{g.Hello().Full, "webarena-verified"}, {g.Hello().Hard, "webarena-verified-hard"}} {
		set, err := tasks.LoadVerified(subset.path)
		if err != nil {
			return nil, err
		}
		for site, st := range webarenaRoleSets(set, served, subset.name, authDir) {
			st.IDPrefix, st.Verified, st.VerifiedByID, st.Unlisted = "verified.", g, true, subset.name != "webarena-verified"
			out[site] = append(out[site], st)
		}
	}
	return out, nil
}

// webarenaRoleSets splits set by the roles served here: each role's tasks
// of that role alone under its site, and multi-site tasks under the joined
// site name, as webarenaSites does for WebArena's own configs.
func webarenaRoleSets(set *tasks.Set, served []*hosting.Site, name, authDir string) map[string]*server.SiteTasks {
	out := multiSiteSets(set, served, name, authDir, nil)
	for _, r := range webarenaRoles {
		if !hasSite(served, r.site) {
			continue
		}
		sub := &tasks.Set{ByID: map[int]*tasks.Task{}}
		for _, t := range set.Tasks {
			if len(t.Sites) == 1 && t.Sites[0] == r.role {
				sub.Tasks = append(sub.Tasks, t)
			}
		}
		for i := range sub.Tasks {
			sub.ByID[sub.Tasks[i].ID] = &sub.Tasks[i]
		}
		out[r.site] = &server.SiteTasks{Set: sub, Name: name, Variant: "webarena", Roles: []string{r.role},
			Admin: tasks.Account{Username: "admin", Password: "admin1234"}, AuthDir: authDir}
	}
	return out
}
