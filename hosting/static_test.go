package hosting

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestStaticSiteServesItsDirectoryToEveryInstance(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<p>hello</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ParseSite([]byte("name: pages\nstatic: {dir: .}\n"), dir)
	if err != nil || s.Backend() != "static" {
		t.Fatalf("ParseSite: %v, %v", s, err)
	}
	b := NewStatic(nil)
	defer b.Close(ctx)
	a, err := b.Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := b.Start(ctx, s)
	if a.URL() != c.URL() || a.ID() == c.ID() {
		t.Errorf("two instances: %s %s, %s %s", a.ID(), a.URL(), c.ID(), c.URL())
	}
	resp, err := http.Get(a.URL() + "/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "<p>hello</p>" {
		t.Errorf("served %q", body)
	}
	if err := a.Restore(ctx, "s1"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("restore of an unknown snapshot: %v", err)
	}
	if err := a.Snapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	forks, err := a.Fork(ctx, "s1", 2)
	if err != nil || len(forks) != 2 || forks[0].URL() != a.URL() {
		t.Fatalf("fork: %v, %v", forks, err)
	}
	if _, err := ParseSite([]byte("name: pages\nstatic: {dir: .}\nlocal: {command: [x]}\n"), dir); err == nil {
		t.Error("a site of two kinds was accepted")
	}
}
