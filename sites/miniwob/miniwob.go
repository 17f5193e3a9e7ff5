// Package miniwob serves MiniWoB++'s tasks (the Farama `miniwob` package
// on PyPI, 1.1.0) as a site with its own kind of task: the task pages are
// served as they are from where pip installed them (never copied), each
// episode is started by the page itself with a seed, and the page's own
// reward and done flag grade it, as BrowserGym's MiniWoB tasks
// (browsergym-miniwob) read them. docs/tasks.md, "MiniWoB++", says what
// is carried over from which source.
//
//	pages, err := miniwob.Load(dir) // dir: the package's html directory
//	site := pages.Site()            // static, at http://miniwob.webserv.test
//	ep, err := pages.Episode("click-test", site.Origin, &seed)
package miniwob

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/webserv-rl/webserv/hosting"
)

// SiteName is the site's name, and the prefix of its task ids
// (miniwob.click-test).
const SiteName = "miniwob"

// Origin is where the task pages are seen.
const Origin = "http://miniwob.webserv.test"

// MaxTimeMs is the episode time limit BrowserGym gives MiniWoB's page
// (AbstractMiniwobTask's episode_max_time default, 1,000,000 ms), which
// replaces the page's own 10 s (core.EPISODE_MAX_TIME).
const MaxTimeMs = 1_000_000

// Install says how to get the task files where they are missing.
const Install = "install MiniWoB++'s package into the Python the server uses (pip install miniwob==1.1.0, or pip install 'webserv[miniwob]'), or give its html directory with --miniwob DIR"

// Pages are the MiniWoB task pages of one html directory.
type Pages struct {
	// Dir is the package's html directory (it holds core/ and miniwob/).
	Dir string
	// Tasks are the task names (click-test), sorted: miniwob/<name>.html.
	Tasks []string
}

// Load lists the task pages of dir, the miniwob package's html directory.
func Load(dir string) (*Pages, error) {
	if dir == "" {
		return nil, errors.New("MiniWoB++'s task files were not found: " + Install)
	}
	if _, err := os.Stat(filepath.Join(dir, "core", "core.js")); err != nil {
		return nil, fmt.Errorf("%s is not MiniWoB++'s html directory (it has no core/core.js): %s", dir, Install)
	}
	files, err := filepath.Glob(filepath.Join(dir, "miniwob", "*.html"))
	if err != nil {
		return nil, err
	}
	p := &Pages{Dir: dir}
	for _, f := range files {
		p.Tasks = append(p.Tasks, strings.TrimSuffix(filepath.Base(f), ".html"))
	}
	if len(p.Tasks) == 0 {
		return nil, fmt.Errorf("%s has no task pages (miniwob/*.html): %s", dir, Install)
	}
	slices.Sort(p.Tasks)
	return p, nil
}

// Site is the static site serving the pages at Origin.
func (p *Pages) Site() *hosting.Site {
	s := &hosting.Site{
		Name:        SiteName,
		Description: fmt.Sprintf("MiniWoB++'s %d tasks (the miniwob package's pages, %s)", len(p.Tasks), p.Dir),
		Origin:      Origin,
		Static:      &hosting.StaticRun{Dir: p.Dir},
		StartPath:   "/miniwob/",
	}
	if err := s.Validate(); err != nil {
		panic(err) // a fixed definition
	}
	return s
}

// Has reports whether name is one of the tasks.
func (p *Pages) Has(name string) bool {
	_, ok := slices.BinarySearch(p.Tasks, name)
	return ok
}

// Pick chooses an episode's task: name if given, else by seed (the same
// seed always the same task), else at random.
func (p *Pages) Pick(name string, seed *int64) (string, error) {
	if name != "" {
		if !p.Has(name) {
			return "", fmt.Errorf("MiniWoB has no task %q (the tasks op lists its %d tasks, like %s.click-test)", name, len(p.Tasks), SiteName)
		}
		return name, nil
	}
	if seed != nil {
		return p.Tasks[uint64(*seed)%uint64(len(p.Tasks))], nil
	}
	return p.Tasks[rand.IntN(len(p.Tasks))], nil
}

// URL is a task page's address at origin, as BrowserGym opens it
// (MINIWOB_URL + subdomain + ".html").
func URL(origin, name string) string {
	return origin + "/miniwob/" + name + ".html"
}

//go:embed start.js
var startJS string

//go:embed state.js
var stateJS string

// StartScript is the JavaScript that starts an episode of a loaded task
// page with page seed pageSeed and time limit maxTimeMs; its value is the
// goal.
func StartScript(pageSeed int64, maxTimeMs int) string {
	return fmt.Sprintf("(%s)(%d, %d, false)", strings.TrimSpace(startJS), pageSeed, maxTimeMs)
}

// RestartScript is StartScript for a task page whose last episode
// StartScript or RestartScript started: it starts the next episode in the
// page as a fresh load would (start.js says what it resets), or, when the
// page is no longer as its last start left it but for the task's area,
// changes nothing and its value is null (envcore.Env.RestartInPlace).
func RestartScript(pageSeed int64, maxTimeMs int) string {
	return fmt.Sprintf("(%s)(%d, %d, true)", strings.TrimSpace(startJS), pageSeed, maxTimeMs)
}

// StateScript is the JavaScript that reads the episode's State.
func StateScript() string { return stateJS }

// State is the episode's state as the page keeps it.
type State struct {
	URL string `json:"url"`
	// Task is false on a page that is not the episode's task page.
	Task      bool    `json:"task"`
	Done      bool    `json:"done"`
	Reward    float64 `json:"reward"`     // WOB_REWARD_GLOBAL: scaled by time where the task says so
	RawReward float64 `json:"raw_reward"` // WOB_RAW_REWARD_GLOBAL
	Reason    any     `json:"reason"`
	EpisodeID int     `json:"episode_id"`
}

// FindDir asks python where the miniwob package is installed and returns
// its html directory ("" when python has no such package). It imports
// nothing of the package (importlib finds it).
func FindDir(ctx context.Context, python string) (string, error) {
	if python == "" {
		return "", nil
	}
	const prog = `import importlib.util, json, os
s = importlib.util.find_spec("miniwob")
print(json.dumps(os.path.join(list(s.submodule_search_locations)[0], "html") if s and s.submodule_search_locations else ""))`
	out, err := exec.CommandContext(ctx, python, "-c", prog).Output()
	if err != nil {
		return "", fmt.Errorf("ask %s where the miniwob package is: %w", python, err)
	}
	var dir string
	if err := json.Unmarshal(out, &dir); err != nil {
		return "", fmt.Errorf("ask %s where the miniwob package is: %q: %w", python, out, err)
	}
	return dir, nil
}
