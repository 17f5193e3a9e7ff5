package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// Names of this run's own: other packages' tests and other checkouts
	// use the same incusd at the same time, and a killed run leaves its
	// containers behind.
	sfx := randomSuffix()
	alias := "webserv-test-gc-" + sfx
	if out := importTestSite(ctx, t, alias); !strings.Contains(out, "port: 8080") {
		t.Errorf("image import output: %s", out)
	}
	dead, live, other := "webserv-gc-dead-"+sfx, "webserv-gc-live-"+sfx, "webserv-gc-other-"+sfx
	host, _ := os.Hostname()
	create := func(name, owner string) {
		cfg := map[string]string{"user.webserv.role": "instance", "user.webserv.site": "gc", "user.webserv.owner": owner}
		if owner == "" {
			cfg = map[string]string{}
		}
		op, err := c.CreateInstance(api.InstancesPost{Name: name, Type: api.InstanceTypeContainer,
			Source:      api.InstanceSource{Type: "image", Alias: alias},
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
	create(dead, host+":1:1")      // pid 1 never started at tick 1: a dead server
	create(live, incusmgr.Owner()) // this test process
	create(other, "")              // not WebServ's
	var out strings.Builder
	if err := gcCmd(ctx, zap.NewNop(), nil, nil, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), live) || strings.Contains(out.String(), other) {
		t.Errorf("gc removed a live server's or a foreign container:\n%s", out.String())
	}
	for name, want := range map[string]bool{dead: false, live: true, other: true} {
		_, _, err := c.GetInstance(name)
		if (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", name, err == nil, want)
		}
	}
	if !strings.Contains(out.String(), "removed "+dead+"\n") {
		// Every incusmgr.Connect collects dead servers' containers too, and
		// other packages' tests connect at the same time: one of them may
		// have got there first (the container is gone, checked above).
		t.Logf("%s was collected by a concurrent gc; gc output:\n%s", dead, out.String())
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// importTestSite imports internal/testsite's image under alias with
// `webserv image import` and returns what the command printed; the alias
// is removed with the test.
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
	// Registered before the import, so that an import failing half-way is
	// cleaned up too. The image goes with the alias unless another alias
	// (another package's test importing the same content) still names it.
	t.Cleanup(func() {
		c, err := incusmgr.Client(incusmgr.Config{})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = incusmgr.RemoveImage(ctx, c, alias)
		}
		if err != nil {
			t.Errorf("remove test image %s: %v", alias, err)
		}
	})
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
