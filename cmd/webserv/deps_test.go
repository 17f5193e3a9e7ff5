package main

import (
	"os/exec"
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
