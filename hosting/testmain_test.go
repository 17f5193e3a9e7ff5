package hosting_test

import (
	"os"
	"testing"

	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

// TestMain removes the site binaries the tests built (hostingtest.BuildStatic).
func TestMain(m *testing.M) {
	code := m.Run()
	hostingtest.RemoveBuilds()
	os.Exit(code)
}
