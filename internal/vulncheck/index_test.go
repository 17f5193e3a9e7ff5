package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is a minimal OSV entry: an id, a time, and the modules it affects
// (one affected block per module; a module may appear twice, as the
// standard library does when two release branches are fixed apart).
func entry(id, modified string, modules ...string) string {
	var aff []string
	for _, m := range modules {
		aff = append(aff, `{"package":{"name":"`+m+`","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.2.0"}]}]}`)
	}
	return `{"schema_version":"1.3.1","id":"` + id + `","modified":"` + modified + `","affected":[` + strings.Join(aff, ",") + `]}`
}

func writeEntries(t *testing.T, entries map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range entries {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The index lists each module once with each of its entries once, sorted;
// db.json holds the newest entry's time; the entries are served as they are.
func TestIndexListsEveryModulesEntries(t *testing.T) {
	e2 := entry("GO-2026-0002", "2026-03-01T00:00:00Z", "stdlib", "stdlib", "golang.org/x/net")
	osv := writeEntries(t, map[string]string{
		"GO-2026-0002.json": e2,
		"GO-2026-0001.json": entry("GO-2026-0001", "2026-01-01T00:00:00Z", "golang.org/x/net"),
		"README.md":         "not an entry",
	})
	out := filepath.Join(t.TempDir(), "db")
	if err := Index(osv, out); err != nil {
		t.Fatal(err)
	}
	var modules []struct {
		Path  string `json:"path"`
		Vulns []struct {
			ID string `json:"id"`
		} `json:"vulns"`
	}
	readJSON(t, filepath.Join(out, "index/modules.json"), &modules)
	var got []string
	for _, m := range modules {
		for _, v := range m.Vulns {
			got = append(got, m.Path+" "+v.ID)
		}
	}
	want := "golang.org/x/net GO-2026-0001, golang.org/x/net GO-2026-0002, stdlib GO-2026-0002"
	if strings.Join(got, ", ") != want {
		t.Errorf("modules.json lists %q, want %q", strings.Join(got, ", "), want)
	}
	var db struct {
		Modified string `json:"modified"`
	}
	readJSON(t, filepath.Join(out, "index/db.json"), &db)
	if db.Modified != "2026-03-01T00:00:00Z" {
		t.Errorf("db.json modified = %q, want the newest entry's 2026-03-01T00:00:00Z", db.Modified)
	}
	if b, err := os.ReadFile(filepath.Join(out, "ID/GO-2026-0002.json")); err != nil || string(b) != e2 {
		t.Errorf("ID/GO-2026-0002.json = %q, %v; want the entry as it was", b, err)
	}
}

// A file named after another id, or a directory without entries, is
// refused with what is wrong.
func TestIndexRefusesWhatIsNotADatabase(t *testing.T) {
	osv := writeEntries(t, map[string]string{"GO-2026-0009.json": entry("GO-2026-0001", "2026-01-01T00:00:00Z", "stdlib")})
	if err := Index(osv, t.TempDir()); err == nil || !strings.Contains(err.Error(), "named after its id") {
		t.Errorf("a misnamed entry: err = %v, want one saying an entry's file is named after its id", err)
	}
	if err := Index(t.TempDir(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "no OSV entries") {
		t.Errorf("an empty directory: err = %v, want one saying it holds no OSV entries", err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
