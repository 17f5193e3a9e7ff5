package shop

import (
	"context"
	"embed"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

//go:generate go run ./internal/taskgen/cmd

//go:embed tasks/*.json
var taskFS embed.FS

// TaskFile returns a bundled task set: "shopping" (the storefront) or
// "cms" (the admin), in the task file schema (docs/tasks.md).
func TaskFile(role string) ([]byte, error) {
	b, err := taskFS.ReadFile("tasks/" + role + ".json")
	if err != nil {
		return nil, fmt.Errorf("no bundled task set %q (there are shopping and cms)", role)
	}
	return b, nil
}

// LoginCookies signs in on a running shop at base (as "customer" with the
// email, or as "admin") and returns the session cookies a browser needs.
// hc reaches the shop (nil: a plain client without keep-alive).
func LoginCookies(ctx context.Context, hc *http.Client, base, as, email string) ([]*http.Cookie, error) {
	form := url.Values{}
	path := "/account/login"
	switch as {
	case "admin":
		path = "/admin/login"
		form.Set("username", AdminUser)
		form.Set("password", AdminPassword)
	case "customer":
		form.Set("email", email)
		form.Set("password", CustomerPassword)
	default:
		return nil, fmt.Errorf("sign in as %q: want customer or admin", as)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	c := http.Client{Timeout: 30 * time.Second, Transport: noKeepAlive}
	if hc != nil {
		c = *hc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sign in on %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("sign in as %s %s on %s: HTTP %d (is the account in this catalog?)", as, email, base, resp.StatusCode)
	}
	var out []*http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "shop_sid" {
			out = append(out, ck)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sign in on %s: no session cookie came back", base)
	}
	return out, nil
}

// noKeepAlive: a site instance's URL stays when a reset swaps the server
// behind it, so a pooled connection may lead to a server that is gone (and
// a POST on it is not retried). Sign-ins are rare; new connections are fine.
var noKeepAlive = &http.Transport{DisableKeepAlives: true, Proxy: nil}
