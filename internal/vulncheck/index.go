package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Index writes a vulnerability database that govulncheck reads with
// -db file://out, from a directory of OSV entries (golang.org/x/vulndb's
// data/osv, which the module proxy serves). The layout is the database
// API's (https://go.dev/security/vuln/database#api): index/db.json (the
// newest entry's time), index/modules.json (each module's entries) and
// ID/<id>.json (the entries as they are).
//
// x/vulndb's own cmd/indexdb writes the same layout, but building it
// compiles x/vulndb's dependencies (about 90 CPU-s on an empty build
// cache, the case of every fresh machine); this reads and writes JSON.
// It leaves out the index's optional "fixed" version: govulncheck then
// reads every entry of a module it finds and keeps those whose ranges
// contain the version in use, which gives the same findings.
func Index(osvDir, out string) error {
	files, err := filepath.Glob(filepath.Join(osvDir, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("index %s: no OSV entries (*.json) there; is it x/vulndb's data/osv?", osvDir)
	}
	type vuln struct {
		ID       string    `json:"id"`
		Modified time.Time `json:"modified"`
	}
	type module struct {
		Path  string `json:"path"`
		Vulns []vuln `json:"vulns"`
	}
	var newest time.Time
	modules := map[string]*module{}
	if err := os.MkdirAll(filepath.Join(out, "ID"), 0o755); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var e struct {
			ID       string    `json:"id"`
			Modified time.Time `json:"modified"`
			Affected []struct {
				Package struct {
					Name string `json:"name"`
				} `json:"package"`
			} `json:"affected"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("index: %s is not an OSV entry: %w", f, err)
		}
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); e.ID != name {
			return fmt.Errorf("index: %s holds entry %q; an entry's file must be named after its id", f, e.ID)
		}
		if e.Modified.After(newest) {
			newest = e.Modified
		}
		for _, a := range e.Affected {
			m := modules[a.Package.Name]
			if m == nil {
				m = &module{Path: a.Package.Name}
				modules[a.Package.Name] = m
			}
			if !slices.ContainsFunc(m.Vulns, func(v vuln) bool { return v.ID == e.ID }) {
				m.Vulns = append(m.Vulns, vuln{ID: e.ID, Modified: e.Modified})
			}
		}
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), b, 0o644); err != nil {
			return err
		}
	}
	list := make([]*module, 0, len(modules))
	for _, m := range modules {
		slices.SortFunc(m.Vulns, func(a, b vuln) int { return strings.Compare(a.ID, b.ID) })
		list = append(list, m)
	}
	slices.SortFunc(list, func(a, b *module) int { return strings.Compare(a.Path, b.Path) })
	return writeJSON(out, map[string]any{
		"index/db.json":      map[string]time.Time{"modified": newest},
		"index/modules.json": list,
	})
}

func writeJSON(dir string, files map[string]any) error {
	for name, v := range files {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
