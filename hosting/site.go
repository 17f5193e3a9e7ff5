package hosting

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/webserv-rl/webserv/internal/similar"
)

// Site defines how to run a website for environments: one YAML or JSON file
// per site (docs/sites.md has the schema).
type Site struct {
	// Name is the site's id (lowercase letters, digits, - and _).
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Origin is the site's canonical origin, the one URL every instance of
	// it is seen at in every environment: the browser reaches it through
	// the environment's route, never at an instance's own address. An
	// image with a base URL baked in (WebArena's Magento, GitLab) declares
	// that URL here. Default http://<name>.webserv.test.
	Origin string `json:"origin,omitempty"`
	// Allow lists hosts the site's environments may reach besides their own
	// sites' origins ("host", "host:port" or "*.suffix").
	Allow []string `json:"allow,omitempty"`
	// Local runs the site as a process on the host.
	Local *LocalRun `json:"local,omitempty"`
	// Incus runs the site in a container cloned from an image.
	Incus *IncusRun `json:"incus,omitempty"`
	// Static serves a directory of files (pages whose state is all in the
	// browser).
	Static *StaticRun `json:"static,omitempty"`
	// Port is the TCP port the site listens on inside its container (Incus)
	// or the default when the command does not take {port} (local).
	Port int `json:"port,omitempty"`
	// Ready is the HTTP probe that must answer before an instance is used.
	Ready Probe `json:"ready,omitempty"`
	// Env is set in the site's environment.
	Env map[string]string `json:"env,omitempty"`
	// Secrets are set in each instance's environment as Env is, but are
	// no part of the site's definition: an Incus base is prepared without
	// them, so one base serves every server start (the bundled shop's
	// EVAL_TOKEN, new at each start, made each start build a base of its
	// own and leave the last one behind). Never written out.
	Secrets map[string]string `json:"-"`
	// PostStart are commands run once after the first start, before the
	// base state is captured (Incus: in the base container; local: in the
	// data directory). {url} is replaced by the site's Origin.
	PostStart [][]string `json:"post_start,omitempty"`
	// StartPath is appended to the site's Origin to start episodes.
	StartPath string `json:"start_path,omitempty"`
	// Login is what the browser needs to be signed in.
	Login *Login `json:"login,omitempty"`
	// Limits bound an Incus container's resources.
	Limits Limits `json:"limits,omitempty"`
	// Tasks are the site's task files (YAML or JSON), relative to the
	// definition; globs like tasks/*.yaml are allowed (docs/tasks.md).
	Tasks []string `json:"tasks,omitempty"`
	// StateDB is the SQLite file holding the site's state, relative to an
	// instance's data directory (as a state check's db): what the
	// state_diff op compares with the episode's start.
	StateDB string `json:"state_db,omitempty"`
	// State declares the site's state kept otherwise than in one SQLite
	// file (files, a PostgreSQL database): the state_diff op and state
	// checks with db "@state" read it as tables (state.go).
	State *State `json:"state,omitempty"`
	// Bookkeeping is the state every episode's path may touch whatever
	// its task asks (sign-in sessions, tokens, counters): never a side
	// effect of an episode (docs/tasks.md "Side effects").
	Bookkeeping []StateRows `json:"bookkeeping,omitempty"`
	// AttackData is how an attacker's words get into the site's own data
	// (the data attack channel, docs/attacks.md); nil: the site offers no
	// way, and only the channels that rewrite pages attack it.
	AttackData *AttackData `json:"attack_data,omitempty"`

	dir string // the directory of the definition file
}

// AttackData writes an attacker's words into one instance's own data,
// before an episode starts (the data attack channel): a review in the
// shop's database, a comment in a forum's.
type AttackData struct {
	// Command runs in the instance as a task's setup command does
	// (Execer: {data}, {port} and {url} filled in), with the words on its
	// standard input and $WEBSERV_ATTACK_DRAW the episode's seeded number
	// (for a choice of where, the same for the same seed). It exits 0
	// having written them, and may print the path of a page that shows
	// them (its last line of output), which info.attack.page reports.
	Command []string `json:"command"`
}

// LocalRun runs the site as a child process.
type LocalRun struct {
	// Command and its arguments. {port} is a free loopback port, {data}
	// the instance's own copy of DataDir; both are also in $PORT and
	// $DATA_DIR. Relative paths are relative to the definition file.
	Command []string `json:"command"`
	// DataDir holds the site's base state; every instance gets a copy.
	DataDir string `json:"data_dir,omitempty"`
}

// IncusRun runs the site in an Incus container.
type IncusRun struct {
	// Image is the alias of an Incus image (see `webserv image import`).
	Image string `json:"image"`
	// Command overrides the image's init command.
	Command []string `json:"command,omitempty"`
}

// Probe is an HTTP readiness check.
type Probe struct {
	Path      string `json:"path,omitempty"`       // default "/"
	Status    int    `json:"status,omitempty"`     // default 200
	TimeoutMs int    `json:"timeout_ms,omitempty"` // default 60000
}

// Login lists browser state that signs an agent in.
type Login struct {
	Cookies []Cookie          `json:"cookies,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// LocalStorage entries, set for the site's origin.
	LocalStorage map[string]string `json:"local_storage,omitempty"`
}

// Cookie is one cookie set for the site's host.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Path  string `json:"path,omitempty"`
}

// Limits bound a container.
type Limits struct {
	Memory    string `json:"memory,omitempty"`    // "512MiB"
	CPU       string `json:"cpu,omitempty"`       // "1" or "0-1"
	Processes int    `json:"processes,omitempty"` // most processes
}

// CanonicalOrigin checks a site origin and writes it the one way WebServ
// compares origins: "http://host" or "http://host:port", lowercase, no
// default port, no path. Origins are plain http: the browser reaches them
// through its environment's proxy, which does not terminate TLS.
func CanonicalOrigin(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("%q: give an http:// origin like http://shop.webserv.test (https origins would need a certificate per environment)", raw)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: give scheme, host and optional port only, like http://shop.webserv.test or http://metis.lti.cs.cmu.edu:7770", raw)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "80" {
		port = ""
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: port %q is not 1-65535", raw, port)
		}
		return "http://" + net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		return "http://[" + host + "]", nil
	}
	return "http://" + host, nil
}

var siteName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,40}$`)

// Validate checks a definition and fills defaults.
func (s *Site) Validate() error {
	if !siteName.MatchString(s.Name) {
		return fmt.Errorf("site name %q: use 1-41 lowercase letters, digits, - and _", s.Name)
	}
	kinds := 0
	for _, set := range []bool{s.Local != nil, s.Incus != nil, s.Static != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("site %s: give exactly one of local (a command), incus (an image) or static (a directory)", s.Name)
	}
	if s.Static != nil && s.Static.Dir == "" {
		return fmt.Errorf("site %s: static.dir is empty", s.Name)
	}
	if s.Local != nil && len(s.Local.Command) == 0 {
		return fmt.Errorf("site %s: local.command is empty", s.Name)
	}
	if s.AttackData != nil && (len(s.AttackData.Command) == 0 || strings.TrimSpace(s.AttackData.Command[0]) == "") {
		return fmt.Errorf("site %s: attack_data.command is empty; give the command that writes an attacker's words (on its standard input) into the instance's data", s.Name)
	}
	if s.Incus != nil {
		if s.Incus.Image == "" {
			return fmt.Errorf("site %s: incus.image is empty", s.Name)
		}
		if s.Port <= 0 || s.Port > 65535 {
			return fmt.Errorf("site %s: port (inside the container) must be 1-65535", s.Name)
		}
	}
	if s.Origin == "" {
		s.Origin = "http://" + s.Name + ".webserv.test"
	}
	origin, err := CanonicalOrigin(s.Origin)
	if err != nil {
		return fmt.Errorf("site %s: origin: %w", s.Name, err)
	}
	s.Origin = origin
	if s.Ready.Path == "" {
		s.Ready.Path = "/"
	}
	if !strings.HasPrefix(s.Ready.Path, "/") || (s.StartPath != "" && !strings.HasPrefix(s.StartPath, "/")) {
		return fmt.Errorf("site %s: ready.path and start_path must start with /", s.Name)
	}
	if p := filepath.Clean(s.StateDB); s.StateDB != "" && (filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../")) {
		return fmt.Errorf("site %s: state_db %q: give a path inside the instance's data directory, like app.db", s.Name, s.StateDB)
	}
	if s.State != nil {
		if s.StateDB != "" {
			return fmt.Errorf("site %s: give state_db (a SQLite file) or state (files, postgres), not both", s.Name)
		}
		if s.Static != nil {
			return fmt.Errorf("site %s: a static site has no state of its own to declare (state:)", s.Name)
		}
		if err := s.State.validate(); err != nil {
			return fmt.Errorf("site %s: %w", s.Name, err)
		}
	}
	if len(s.Bookkeeping) > 0 && s.StateDB == "" && s.State == nil {
		return fmt.Errorf("site %s: bookkeeping names rows of the site's state: declare it (state_db or state)", s.Name)
	}
	if err := validateRows("bookkeeping", s.Bookkeeping); err != nil {
		return fmt.Errorf("site %s: %w", s.Name, err)
	}
	if s.Ready.Status == 0 {
		s.Ready.Status = 200
	}
	if s.Ready.TimeoutMs <= 0 {
		s.Ready.TimeoutMs = 60000
	}
	return nil
}

// Backend names the backend the site runs on: "local", "incus" or
// "static".
func (s *Site) Backend() string {
	if s.Incus != nil {
		return "incus"
	}
	if s.Static != nil {
		return "static"
	}
	return "local"
}

// path resolves p relative to the definition's directory.
func (s *Site) path(p string) string {
	if p == "" || filepath.IsAbs(p) || s.dir == "" {
		return p
	}
	return filepath.Join(s.dir, p)
}

// TaskFiles resolves the definition's tasks: entries (globs allowed) to
// file paths, in order, each once. A pattern that matches no file is an
// error: a typo would otherwise leave the site without its tasks.
func (s *Site) TaskFiles() ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, pat := range s.Tasks {
		if strings.TrimSpace(pat) == "" {
			return nil, fmt.Errorf("site %s: tasks[%d]: empty path", s.Name, i)
		}
		matches, err := filepath.Glob(s.path(pat))
		if err != nil {
			return nil, fmt.Errorf("site %s: tasks[%d] %q: %w", s.Name, i, pat, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("site %s: tasks[%d] %q: no such file (paths are relative to the definition, %s)", s.Name, i, pat, s.dir)
		}
		sort.Strings(matches)
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// Dir is the directory of the definition file ("" when parsed from bytes
// without one).
func (s *Site) Dir() string { return s.dir }

// ParseSite reads one definition (YAML or JSON). dir resolves relative paths.
func ParseSite(data []byte, dir string) (*Site, error) {
	var s Site
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("parse site definition: %w%s", err, didYouMean(err))
	}
	s.dir = dir
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// LoadSite reads a definition file.
func LoadSite(path string) (*Site, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read site definition: %w", err)
	}
	abs, _ := filepath.Abs(filepath.Dir(path))
	s, err := ParseSite(data, abs)
	if err != nil {
		if what := notADefinition(data); what != "" {
			return nil, fmt.Errorf("%s is %s, not a site definition: task files belong in a definition's tasks: list (paths relative to the definition, as examples/sites/tracker.yaml names tracker/tasks.yaml); move it into a subfolder, which --sites does not read as definitions (%w)", path, what, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// notADefinition says what data looks like when it is a task file rather
// than a site definition ("a list of 6 tasks", "a task"), or "" when it
// looks like neither.
func notADefinition(data []byte) string {
	var v any
	if yaml.Unmarshal(data, &v) != nil {
		return ""
	}
	isTask := func(x any) bool {
		m, ok := x.(map[string]any)
		if !ok {
			return false
		}
		_, intent := m["intent"]
		_, eval := m["eval"]
		_, id := m["task_id"]
		return intent || eval || id
	}
	switch v := v.(type) {
	case []any:
		n := 0
		for _, x := range v {
			if isTask(x) {
				n++
			}
		}
		switch {
		case n == 0 && len(v) > 0:
			return fmt.Sprintf("a list of %d items", len(v))
		case n == 1:
			return "a list of 1 task"
		case n > 0:
			return fmt.Sprintf("a list of %d tasks", n)
		}
	case map[string]any:
		if _, name := v["name"]; !name && isTask(v) {
			return "a task"
		}
	}
	return ""
}

// LoadSites reads every *.yaml, *.yml and *.json file of dir.
func LoadSites(dir string) ([]*Site, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read site definitions: %w", err)
	}
	var out []*Site
	seen := map[string]string{}
	var errs []error
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		s, err := LoadSite(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := seen[s.Name]; dup {
			errs = append(errs, fmt.Errorf("site %s is defined twice: %s and %s", s.Name, prev, e.Name()))
			continue
		}
		seen[s.Name] = e.Name()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// unknownField finds the field name in a strict decoder's error.
var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// didYouMean is "; did you mean NAME?" for an unknown field of a
// definition close to a setting's name (any level), else "".
func didYouMean(err error) string {
	m := unknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	best, bestD, bestEdits := "", -1, 0
	for _, name := range settingNames(reflect.TypeOf(Site{}), map[reflect.Type]bool{}) {
		edits := similar.Distance(m[1], name)
		d := edits
		if strings.HasPrefix(name, m[1]) || strings.HasPrefix(m[1], name) {
			d = min(d, 1)
		}
		if d <= max(2, len(name)/3) && (bestD < 0 || d < bestD || d == bestD && edits < bestEdits) {
			best, bestD, bestEdits = name, d, edits
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s? (docs/sites.md lists the settings)", best)
}

// settingNames are the JSON names of t's fields and of its nested
// structs' fields.
func settingNames(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
		out = append(out, settingNames(f.Type, seen)...)
	}
	return out
}

// InstanceEnv is the environment of the site's instances: Env, then
// Secrets.
func (s *Site) InstanceEnv() map[string]string {
	env := make(map[string]string, len(s.Env)+len(s.Secrets))
	for k, v := range s.Env {
		env[k] = v
	}
	for k, v := range s.Secrets {
		env[k] = v
	}
	return env
}
