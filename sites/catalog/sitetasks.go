package catalog

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

// SetupTimeout bounds each of a task's setup commands.
const SetupTimeout = 2 * time.Minute

// SiteTaskSet loads the task files of a site definition's tasks: field
// (docs/tasks.md) as the site's task set: ids <site>.<task_id>, __SITE__
// and every task role at the site's canonical origin, checks and setup
// run in the environment's own instance. Files in WebArena-Verified's
// schema need verified (the package's grader); nil refuses them.
func SiteTaskSet(site *hosting.Site, grader *tasks.Grader, verified *tasks.VerifiedGrader) (*TaskSet, []tasks.SiteFile, error) {
	files, err := site.TaskFiles()
	if err != nil {
		return nil, nil, err
	}
	set, info, err := tasks.LoadSiteTasks(site.Name, files)
	if err != nil {
		return nil, nil, fmt.Errorf("site %s: %w", site.Name, err)
	}
	for _, f := range info {
		if f.Schema == tasks.SchemaVerified && verified == nil {
			return nil, nil, fmt.Errorf("site %s: %s is in WebArena-Verified's schema, whose grader runs in Python: start the server with --verified-python (a Python with webarena-verified==1.2.3)", site.Name, f.Path)
		}
	}
	if site.State == nil {
		for _, t := range set.Tasks {
			for k, c := range t.Eval.State {
				if c.DB == hosting.StateTables && (c.Site == "" || c.Site == site.Name || c.Site == tasks.SiteRole) {
					return nil, nil, fmt.Errorf("site %s: task %d: eval.state[%d].db %q reads the state the definition declares with state: (files, postgres; docs/sites.md), and it declares none", site.Name, t.ID, k, c.DB)
				}
			}
		}
	}
	roles := []string{tasks.SiteRole, site.Name}
	for _, t := range set.Tasks {
		for _, r := range t.Sites {
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
	}
	// The definition's login signs in every task of its own that gives none.
	if site.Login != nil && len(site.Login.Cookies) > 0 {
		for i := range set.Tasks {
			if t := &set.Tasks[i]; t.Login == nil && t.Eval.Verified == nil {
				l := &tasks.TaskLogin{}
				for _, c := range site.Login.Cookies {
					l.Cookies = append(l.Cookies, tasks.LoginCookie{Name: c.Name, Value: c.Value, Path: c.Path})
				}
				t.Login = l
			}
		}
	}
	if grader == nil {
		grader = &tasks.Grader{}
	}
	return &TaskSet{Set: set, Name: site.Name, Variant: "site", Roles: roles, Grader: grader, Verified: verified}, info, nil
}

// setup runs a task's setup commands in the episode's instance, in order;
// the first that fails ends the episode's start with its output.
func setup(ctx context.Context, in hosting.Execer, id string, t *tasks.Task) error {
	if len(t.Setup) == 0 {
		return nil
	}
	if in == nil {
		return server.Unconfigured(fmt.Errorf("task %s has setup commands, and its site's instances cannot run commands", id))
	}
	for k, c := range t.Setup {
		res, err := in.Exec(ctx, hosting.ExecRequest{Command: c, Timeout: SetupTimeout, Env: map[string]string{"WEBSERV_TASK_ID": id}})
		if err != nil {
			return fmt.Errorf("task %s: setup[%d]: %w", id, k, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("task %s: setup[%d] %q exited %d: %s", id, k, hosting.ExecLine(c), res.ExitCode, tail(res.Stderr, res.Stdout))
		}
	}
	return nil
}

// loginCookies are the cookies of a task's cookies or storage-state login,
// set on origin.
func loginCookies(l *tasks.TaskLogin, origin string) ([]envcore.Cookie, error) {
	var out []envcore.Cookie
	for _, c := range l.Cookies {
		p := c.Path
		if p == "" {
			p = "/"
		}
		out = append(out, envcore.Cookie{Name: c.Name, Value: c.Value, URL: origin + p, HTTPOnly: c.HTTPOnly})
	}
	if l.StorageState != "" {
		st, err := tasks.LoadStorageState(l.StorageState)
		if err != nil {
			return nil, err
		}
		for _, c := range st.HostlessCookies() {
			out = append(out, envcore.Cookie{Name: c.Name, Value: c.Value, URL: origin + c.Path, HTTPOnly: c.HTTPOnly})
		}
	}
	return out, nil
}

// siteCookies are the cookies of a site definition's login, set on its
// origin: a plain episode (no task) starts signed in with them.
func siteCookies(site *hosting.Site) []envcore.Cookie {
	if site.Login == nil {
		return nil
	}
	var out []envcore.Cookie
	for _, c := range site.Login.Cookies {
		p := c.Path
		if p == "" {
			p = "/"
		}
		out = append(out, envcore.Cookie{Name: c.Name, Value: c.Value, URL: site.Origin + p})
	}
	return out
}

// tail is the end of a failed command's output, stderr first.
func tail(stderr, stdout []byte) string {
	s := string(stderr)
	if len(s) == 0 {
		s = string(stdout)
	}
	if len(s) > 800 {
		s = "..." + s[len(s)-800:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
}
