package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// A site definition's own tasks (its tasks: field, docs/tasks.md): task
// files in the project's schema or WebArena-Verified's, detected per
// file, in YAML or JSON.

// SitePlaceholder stands for the site's canonical origin in a site's own
// task files ("__SITE__/issues/3").
const SitePlaceholder = "__SITE__"

// SiteRole is the role (the key of Instantiate's bases) __SITE__ stands
// for.
const SiteRole = "__site__"

// Schema names of task files.
const (
	SchemaWebServ  = "webserv"
	SchemaVerified = "webarena-verified"
)

// SiteFile is one loaded task file of a site.
type SiteFile struct {
	Path   string
	Schema string
	Count  int
}

// LoadSiteTasks reads a site's task files into one set. A task without
// sites is the site's; storage_state paths are relative to their file.
// Ids must be unique across the files. Errors name the file, the task and
// the field.
func LoadSiteTasks(site string, files []string) (*Set, []SiteFile, error) {
	set := &Set{ByID: map[int]*Task{}}
	from := map[int]string{}
	var info []SiteFile
	for _, f := range files {
		fs, schema, err := loadSiteFile(site, f)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range fs.Tasks {
			if prev, dup := from[t.ID]; dup {
				return nil, nil, fmt.Errorf("%s: task %d: id already used in %s (ids are unique across a site's task files)", f, t.ID, prev)
			}
			from[t.ID] = f
			set.Tasks = append(set.Tasks, t)
		}
		info = append(info, SiteFile{Path: f, Schema: schema, Count: len(fs.Tasks)})
	}
	for i := range set.Tasks {
		set.ByID[set.Tasks[i].ID] = &set.Tasks[i]
	}
	return set, info, nil
}

// loadSiteFile reads one file, detecting its schema: WebArena-Verified's
// tasks have start_urls and a list of evaluators.
func loadSiteFile(site, path string) (*Set, string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("site %s: read task file: %w", site, err)
	}
	data := raw
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		if data, err = yaml.YAMLToJSON(raw); err != nil {
			return nil, "", fmt.Errorf("%s: not YAML: %w", path, err)
		}
	}
	var probe []map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, "", fmt.Errorf("%s: want a list of tasks: %w", path, err)
	}
	if len(probe) == 0 {
		return nil, "", fmt.Errorf("%s: no tasks", path)
	}
	if _, ok := probe[0]["start_urls"]; ok {
		set, err := ParseVerified(data, path)
		return set, SchemaVerified, err
	}
	set, err := parseSiteTasks(site, data, path)
	return set, SchemaWebServ, err
}

// parseSiteTasks reads the project's schema strictly: a misspelled field
// is an error, not a silently ignored setting.
func parseSiteTasks(site string, data []byte, path string) (*Set, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%s: want a list of tasks: %w", path, err)
	}
	set := &Set{Tasks: make([]Task, len(raws)), ByID: map[int]*Task{}}
	for i, raw := range raws {
		t := &set.Tasks[i]
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(t); err != nil {
			name := fmt.Sprintf("task at index %d", i)
			var head struct {
				ID *int `json:"task_id"`
			}
			if json.Unmarshal(raw, &head) == nil && head.ID != nil {
				name = fmt.Sprintf("task %d", *head.ID)
			}
			return nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
		if !bytes.Contains(raw, []byte(`"task_id"`)) {
			return nil, fmt.Errorf("%s: task at index %d: task_id: missing", path, i)
		}
		if len(t.Sites) == 0 {
			t.Sites = []string{SiteRole}
		}
		if t.StartURL == "" {
			t.StartURL = SitePlaceholder + "/"
		} else if strings.HasPrefix(t.StartURL, "/") {
			t.StartURL = SitePlaceholder + t.StartURL // a path on the site
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%s: task %d: %w", path, t.ID, err)
		}
		if t.Login != nil && t.Login.As != "" {
			return nil, fmt.Errorf("%s: task %d: login.as: %q is the bundled shop's sign-in; a site's own tasks give login.cookies or login.storage_state", path, t.ID, t.Login.As)
		}
		if t.Login != nil && t.Login.StorageState != "" && !filepath.IsAbs(t.Login.StorageState) {
			t.Login.StorageState = filepath.Join(filepath.Dir(path), t.Login.StorageState)
		}
		if t.Login != nil && t.Login.StorageState != "" {
			if _, err := LoadStorageState(t.Login.StorageState); err != nil {
				return nil, fmt.Errorf("%s: task %d: login.storage_state: %w", path, t.ID, err)
			}
		}
		if _, dup := set.ByID[t.ID]; dup {
			return nil, fmt.Errorf("%s: task %d appears twice", path, t.ID)
		}
		set.ByID[t.ID] = t
	}
	return set, nil
}
