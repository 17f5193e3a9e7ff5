package shop_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/sites/shop/internal/taskgen"
)

// newShop serves a fresh seed-1 catalog.
func newShop(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := shop.Generate(context.Background(), dir, shop.GenerateOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := shop.Open(dir, shop.Options{EvalToken: "secret", SuggestDelay: 1, ReportDelay: 1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return hs, dir
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The committed task files are what the generator makes from the seed-1
// catalog: regenerate with `go generate ./sites/shop` after changing
// either.
func TestTaskFilesAreCurrent(t *testing.T) {
	shopping, cms, err := taskgen.Generate(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, ts := range map[string][]taskgen.Task{"shopping": shopping, "cms": cms} {
		want, _ := taskgen.Marshal(ts)
		got, err := shop.TaskFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("sites/shop/tasks/%s.json is stale: run go generate ./sites/shop", name)
		}
	}
	if len(shopping) < 60 || len(cms) < 40 {
		t.Errorf("%d storefront and %d admin tasks; want at least 60 and 40", len(shopping), len(cms))
	}
}

// The same seed gives the same catalog on every machine.
func TestGenerateIsDeterministic(t *testing.T) {
	a, _ := newShop(t)
	b, _ := newShop(t)
	for _, p := range []string{"/category/clothing?sort=price_asc", "/search?q=alpine", "/"} {
		_, x := get(t, a.URL+p)
		_, y := get(t, b.URL+p)
		if x != y {
			t.Errorf("%s differs between two seed-1 catalogs", p)
		}
	}
	dir := t.TempDir()
	if err := shop.Generate(context.Background(), dir, shop.GenerateOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := shop.Generate(context.Background(), dir, shop.GenerateOptions{Seed: 1}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("generating over an existing catalog: %v, want a clear refusal", err)
	}
	if err := shop.Generate(context.Background(), t.TempDir(), shop.GenerateOptions{Scale: "huge"}); err == nil || !strings.Contains(err.Error(), "small, medium or large") {
		t.Errorf("unknown scale: %v", err)
	}
}

// The state endpoint answers only with the evaluation token and never
// writes.
func TestEvalQueryIsGuarded(t *testing.T) {
	hs, _ := newShop(t)
	post := func(token, sql string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/__webserv/query", strings.NewReader(`{"sql": "`+sql+`"}`))
		if token != "" {
			req.Header.Set("X-Webserv-Eval", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := post("", "SELECT 1"); code != http.StatusNotFound {
		t.Errorf("no token: HTTP %d, want 404", code)
	}
	if code, _ := post("wrong", "SELECT 1"); code != http.StatusNotFound {
		t.Errorf("wrong token: HTTP %d, want 404", code)
	}
	if code, body := post("secret", "SELECT COUNT(*) FROM products"); code != 200 || !strings.Contains(body, "[[240]]") {
		t.Errorf("count products: %d %s", code, body)
	}
	if code, body := post("secret", "DELETE FROM orders"); code != http.StatusBadRequest || !strings.Contains(body, "readonly") {
		t.Errorf("a write through the state endpoint: %d %s", code, body)
	}
}

// Pages a shopper and an admin visit render; unknown ones are 404s.
func TestPagesRender(t *testing.T) {
	hs, _ := newShop(t)
	for path, want := range map[string]string{
		"/": "Top rated", "/category/clothing": "products", "/category/t-shirts?sort=price_desc&page=2": "page 2 of",
		"/search?q=tent": "Search results", "/page/shipping": "Express shipping", "/cart": "Your cart is empty",
		"/api/suggest?q=alpine": `"suggestions":[{`, "/admin/orders": "Admin sign in",
	} {
		code, body := get(t, hs.URL+path)
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: HTTP %d, want %q in the page", path, code, want)
		}
	}
	if code, _ := get(t, hs.URL+"/product/no-such-thing"); code != 404 {
		t.Errorf("unknown product: HTTP %d", code)
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
