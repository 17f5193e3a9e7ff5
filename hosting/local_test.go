package hosting_test

import (
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

func TestLocalBackendConformance(t *testing.T) {
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	hostingtest.Conformance(t, b, hostingtest.LocalSite(t))
}

func TestLocalSiteThatNeverGetsReady(t *testing.T) {
	s := hostingtest.LocalSite(t)
	s.Local.Command = []string{"sh", "-c", "echo booting; sleep 30"}
	s.Ready.TimeoutMs = 500
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Start(t.Context(), s)
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), "booting") {
		t.Errorf("start of a site that never answers: %v", err)
	}
}
