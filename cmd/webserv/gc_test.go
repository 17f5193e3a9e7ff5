package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/incusmgr"
)

// `webserv gc` removes containers whose server is gone and leaves those of
// live servers and unlabelled ones alone. Needs incusd (scripts/incus-setup.sh).
func TestGCCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := incus.ConnectIncusUnix("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := importTestSite(ctx, t, "webserv-test-gc"); !strings.Contains(out, "port: 8080") {
		t.Errorf("image import output: %s", out)
	}
	host, _ := os.Hostname()
	create := func(name, owner string) {
		cfg := map[string]string{"user.webserv.role": "instance", "user.webserv.site": "gc", "user.webserv.owner": owner}
		if owner == "" {
			cfg = map[string]string{}
		}
		op, err := c.CreateInstance(api.InstancesPost{Name: name, Type: api.InstanceTypeContainer,
			Source:      api.InstanceSource{Type: "image", Alias: "webserv-test-gc"},
			InstancePut: api.InstancePut{Profiles: []string{}, Config: cfg, Devices: map[string]map[string]string{"root": {"type": "disk", "path": "/", "pool": "webserv"}}}})
		if err == nil {
			err = op.WaitContext(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if op, err := c.DeleteInstance(name); err == nil {
				_ = op.Wait()
			}
		})
	}
	create("webserv-gc-dead", host+":1:1")      // pid 1 never started at tick 1: a dead server
	create("webserv-gc-live", incusmgr.Owner()) // this test process
	create("webserv-gc-other", "")              // not WebServ's
	var out strings.Builder
	if err := gcCmd(ctx, zap.NewNop(), nil, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed webserv-gc-dead") || strings.Contains(out.String(), "webserv-gc-live") {
		t.Errorf("gc output:\n%s", out.String())
	}
	for name, want := range map[string]bool{"webserv-gc-dead": false, "webserv-gc-live": true, "webserv-gc-other": true} {
		_, _, err := c.GetInstance(name)
		if (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", name, err == nil, want)
		}
	}
}

// importTestSite imports internal/testsite's image under alias with
// `webserv image import` and returns what the command printed.
func importTestSite(ctx context.Context, t *testing.T, alias string) string {
	t.Helper()
	dir := t.TempDir()
	img, err := hostingtest.SiteImage(hostingtest.BuildTestSite(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dir, "site.tar")
	if err := tarball.WriteToFile(saved, mustRef("webserv/"+alias+":latest"), img); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := imageCmd(ctx, zap.NewNop(), []string{"import", "--alias", alias, saved}, nil, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func mustRef(s string) name.Reference {
	r, err := name.ParseReference(s)
	if err != nil {
		panic(err)
	}
	return r
}
