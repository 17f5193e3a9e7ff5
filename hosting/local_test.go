package hosting_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

func localSite(t *testing.T) *hosting.Site {
	t.Helper()
	dir := t.TempDir()
	bin := hostingtest.BuildTestSite(t, dir)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "state"), []byte("base"), 0o644); err != nil {
		t.Fatal(err)
	}
	def := "name: testsite\nlocal:\n  command: [" + bin + "]\n  data_dir: data\nready:\n  path: /ready\n"
	if err := os.WriteFile(filepath.Join(dir, "testsite.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := hosting.LoadSite(filepath.Join(dir, "testsite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLocalBackendConformance(t *testing.T) {
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	hostingtest.Conformance(t, b, localSite(t))
}

func TestLocalSiteThatNeverGetsReady(t *testing.T) {
	s := localSite(t)
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
