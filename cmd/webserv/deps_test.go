package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The server binary links no benchmark code: the suites, their plotting
// and fonts are the webserv-bench binary's (bench/cmd/webserv-bench).
func TestServerLinksNoBenchmarkCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "gonum.org/") || strings.Contains(dep, "/bench/") {
			t.Errorf("webserv depends on %s", dep)
		}
	}
}

// Dependencies point one way: the wire and the sessions (server) know no
// site catalogue, and task grading (tasks) and the bundled shop's
// description (sites/bundled) know no server; the catalogue sits between.
func TestPackagesDependOneWay(t *testing.T) {
	const mod = "github.com/webserv-rl/webserv/"
	for pkg, never := range map[string][]string{
		"server":        {"sites/catalog", "sites/bundled", "incusmgr"},
		"tasks":         {"server", "sites/catalog"},
		"sites/bundled": {"server", "sites/catalog"},
	} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, n := range never {
			if slices.Contains(deps, mod+n) {
				t.Errorf("%s depends on %s", pkg, n)
			}
		}
	}
}
