package incusmgr_test

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/lxc/incus/v6/shared/api"

	"github.com/webserv-rl/webserv/incusmgr"
)

// siteTarball writes the test site's image as a docker-save tarball named
// file. The name goes into the image's description, so a file name of its
// own gives a test content (and a fingerprint) of its own.
func siteTarball(t *testing.T, file string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), file)
	if err := tarball.WriteToFile(p, name.MustParseReference("webserv/testsite:latest"), siteImage); err != nil {
		t.Fatal(err)
	}
	return p
}

// removeWithTest removes alias when the test ends, and its image unless
// another alias still names it.
func removeWithTest(t *testing.T, alias string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := incusmgr.RemoveImage(ctx, client, alias); err != nil {
			t.Errorf("remove image alias %s: %v", alias, err)
		}
	})
}

func aliasTarget(t *testing.T, alias string) string {
	t.Helper()
	a, _, err := client.GetImageAlias(alias)
	if err != nil {
		t.Fatalf("alias %s: %v", alias, err)
	}
	return a.Target
}

func imageExists(t *testing.T, fp string) bool {
	t.Helper()
	_, _, err := client.GetImage(fp)
	if err != nil && !api.StatusErrorCheck(err, http.StatusNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// createFrom creates (and with the test deletes) a container from alias.
func createFrom(t *testing.T, alias string) {
	t.Helper()
	ctr := unique("webserv-test-img")
	op, err := client.CreateInstance(api.InstancesPost{Name: ctr, Type: api.InstanceTypeContainer,
		Source: api.InstanceSource{Type: "image", Alias: alias},
		InstancePut: api.InstancePut{Profiles: []string{}, Config: map[string]string{},
			Devices: map[string]map[string]string{"root": {"type": "disk", "path": "/", "pool": "webserv"}}}})
	if err == nil {
		err = op.WaitContext(t.Context())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := deleteContainer(ctx, ctr); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatalf("create a container from %s: %v", alias, err)
	}
}

// Two imports of one tarball at the same moment, under two aliases, store
// the content once and both aliases name it (issue 15: the second used to
// fail with "Image with same fingerprint already exists").
func TestImportSameImageTwiceAtOnce(t *testing.T) {
	src := siteTarball(t, unique("twice")+".tar")
	aliases := []string{unique("webserv-test-twice"), unique("webserv-test-twice")}
	for _, a := range aliases {
		removeWithTest(t, a)
	}
	infos := make([]incusmgr.ImageInfo, len(aliases))
	errs := make([]error, len(aliases))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, a := range aliases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			infos[i], errs[i] = incusmgr.ImportImage(t.Context(), client, src, a)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("import as %s: %v", aliases[i], err)
		}
	}
	fp := infos[0].Fingerprint
	if infos[1].Fingerprint != fp {
		t.Fatalf("fingerprints %s and %s", fp, infos[1].Fingerprint)
	}
	if !infos[0].Reused && !infos[1].Reused {
		t.Error("both imports report storing the image")
	}
	for _, a := range aliases {
		if got := aliasTarget(t, a); got != fp {
			t.Errorf("alias %s names %s, want %s", a, got, fp)
		}
		createFrom(t, a)
	}
}

// Importing the same content again under the same alias is a no-op that
// succeeds: Incus already holds it and the alias already names it.
func TestImportAgainUnderTheSameAlias(t *testing.T) {
	src := siteTarball(t, unique("again")+".tar")
	alias := unique("webserv-test-again")
	removeWithTest(t, alias)
	first, err := incusmgr.ImportImage(t.Context(), client, src, alias)
	if err != nil {
		t.Fatal(err)
	}
	if first.Reused {
		t.Error("the first import of new content reports reusing an image")
	}
	again, err := incusmgr.ImportImage(t.Context(), client, src, alias)
	if err != nil {
		t.Fatalf("second import: %v", err)
	}
	// Reused also shows that the fingerprint computed before the upload is
	// the one Incus gave the image.
	if again.Fingerprint != first.Fingerprint || !again.Reused {
		t.Errorf("second import: %s (reused %v), first %s", again.Fingerprint, again.Reused, first.Fingerprint)
	}
	if got := aliasTarget(t, alias); got != first.Fingerprint {
		t.Errorf("alias names %s, want %s", got, first.Fingerprint)
	}
	createFrom(t, alias)
}

// New content moves the alias; the image it named before is deleted once
// no alias names it, and kept while one does. RemoveImage follows the same
// rule.
func TestImportReplacesTheAliasImage(t *testing.T) {
	v1, v2 := siteTarball(t, unique("v1")+".tar"), siteTarball(t, unique("v2")+".tar")
	a, b := unique("webserv-test-replace"), unique("webserv-test-replace")
	removeWithTest(t, a)
	removeWithTest(t, b)
	imp := func(src, alias string) incusmgr.ImageInfo {
		t.Helper()
		info, err := incusmgr.ImportImage(t.Context(), client, src, alias)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	old := imp(v1, a).Fingerprint
	if info := imp(v1, b); info.Fingerprint != old || !info.Reused {
		t.Fatalf("v1 under a second alias: %+v, want a reuse of %s", info, old)
	}
	cur := imp(v2, a).Fingerprint
	if cur == old {
		t.Fatal("v1 and v2 have the same fingerprint")
	}
	if got := aliasTarget(t, a); got != cur {
		t.Errorf("alias %s names %s after the replacement, want %s", a, got, cur)
	}
	if !imageExists(t, old) {
		t.Fatalf("the replaced image was deleted while alias %s still names it", b)
	}
	imp(v2, b)
	if imageExists(t, old) {
		t.Error("the replaced image was kept after its last alias moved away")
	}
	createFrom(t, a)
	if err := incusmgr.RemoveImage(t.Context(), client, a); err != nil {
		t.Fatal(err)
	}
	if !imageExists(t, cur) || aliasTarget(t, b) != cur {
		t.Fatalf("removing alias %s deleted the image alias %s names", a, b)
	}
	if err := incusmgr.RemoveImage(t.Context(), client, b); err != nil {
		t.Fatal(err)
	}
	if imageExists(t, cur) {
		t.Error("removing the last alias kept the image")
	}
}
