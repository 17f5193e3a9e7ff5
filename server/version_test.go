package server_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/webserv-rl/webserv/server"
)

// The server and the Python package are one release: `python -m webserv
// --version` prints both, and a user comparing them must see one number.
func TestVersionIsThePythonPackages(t *testing.T) {
	raw, err := os.ReadFile("../pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version\s*=\s*"([^"]+)"`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("pyproject.toml has no version line")
	}
	if string(m[1]) != server.Version {
		t.Errorf("pyproject.toml says %s, server.Version %s: release both as one", m[1], server.Version)
	}
}
