package tasks

import (
	"github.com/webserv-rl/webserv/hosting"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// WebArena's "func:" strings name one of five helper functions with
// literal arguments, like func:shopping_get_sku_latest_review_rating('B07X').
// They are parsed and run as Go code here; a string is never evaluated as
// code.

// Call is a parsed func: string.
type Call struct {
	Name string
	Args []string // literal strings; __page__ and __last_url__ stay as written
}

var helperNames = map[string]int{ // name -> number of arguments
	"shopping_get_latest_order_url":         0,
	"shopping_get_sku_latest_review_rating": 1,
	"shopping_get_sku_latest_review_author": 1,
	"gitlab_get_project_memeber_role":       2,
	"reddit_get_post_url":                   1,
}

// ParseCall parses "func:name(args)" (the func: prefix is optional).
func ParseCall(s string) (Call, error) {
	src := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "func:"))
	open := strings.IndexByte(src, '(')
	if open < 0 || !strings.HasSuffix(src, ")") {
		return Call{}, fmt.Errorf("func %q: want name(args)", s)
	}
	c := Call{Name: strings.TrimSpace(src[:open])}
	want, ok := helperNames[c.Name]
	if !ok {
		return Call{}, fmt.Errorf("func %q: unknown helper %q (known: shopping_get_latest_order_url, shopping_get_sku_latest_review_rating, shopping_get_sku_latest_review_author, gitlab_get_project_memeber_role, reddit_get_post_url)", s, c.Name)
	}
	rest := strings.TrimSpace(src[open+1 : len(src)-1])
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "__page__"):
			c.Args = append(c.Args, "__page__")
			rest = rest[len("__page__"):]
		case rest[0] == '\'' || rest[0] == '"':
			end := strings.IndexByte(rest[1:], rest[0])
			if end < 0 {
				return Call{}, fmt.Errorf("func %q: unterminated string", s)
			}
			c.Args = append(c.Args, rest[1:1+end])
			rest = rest[end+2:]
		default:
			return Call{}, fmt.Errorf("func %q: arguments must be quoted strings or __page__", s)
		}
		rest = strings.TrimSpace(rest)
		if rest != "" {
			if rest[0] != ',' {
				return Call{}, fmt.Errorf("func %q: want a comma between arguments", s)
			}
			rest = strings.TrimSpace(rest[1:])
		}
	}
	if len(c.Args) != want {
		return Call{}, fmt.Errorf("func %q: %s takes %d arguments, got %d", s, c.Name, want, len(c.Args))
	}
	return c, nil
}

// Account is a site's credentials.
type Account struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Site is how the grader reaches one site of a task.
type Site struct {
	// BaseURL is the site instance's base URL (no trailing slash).
	BaseURL string
	// Admin is the account the shopping helpers use for the REST API
	// (WebArena: the shopping_site_admin account).
	Admin Account
	// EvalToken enables the native state evaluator's queries.
	EvalToken string
	// Instance runs a site's own tasks' check verifiers and reads their
	// state databases (nil for sites without one).
	Instance hosting.Execer
}

// helpers runs helper calls for one grading.
type helpers struct {
	sites map[string]Site
	http  *http.Client
	page  Page
}

func (h *helpers) run(ctx context.Context, c Call) (string, error) {
	switch c.Name {
	case "shopping_get_latest_order_url":
		return h.latestOrderURL(ctx)
	case "shopping_get_sku_latest_review_rating", "shopping_get_sku_latest_review_author":
		return h.latestReview(ctx, c.Args[0], c.Name == "shopping_get_sku_latest_review_rating")
	case "reddit_get_post_url":
		return redditPostURL(c.Args[0]), nil
	case "gitlab_get_project_memeber_role":
		return h.gitlabRole(ctx, c.Args[1])
	}
	return "", fmt.Errorf("unknown helper %s", c.Name)
}

func (h *helpers) shop() (Site, error) {
	s, ok := h.sites["shopping"]
	if !ok || s.BaseURL == "" {
		return s, errors.New("the shopping helpers need the shopping site, which this task's environment does not have")
	}
	return s, nil
}

// restGet calls the shop's REST API as its admin.
func (h *helpers) restGet(ctx context.Context, path string, out any) error {
	s, err := h.shop()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"username": s.Admin.Username, "password": s.Admin.Password})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL+"/rest/default/V1/integration/admin/token", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	var token string
	if err := h.do(req, &token); err != nil {
		return fmt.Errorf("shopping admin token: %w", err)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return h.do(req, out)
}

func (h *helpers) do(req *http.Request, out any) error {
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d: %.200s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// latestOrderURL: the newest order by created_at, as the customer's order
// page URL WebArena expects.
func (h *helpers) latestOrderURL(ctx context.Context) (string, error) {
	q := url.Values{}
	q.Set("searchCriteria[sortOrders][0][field]", "created_at")
	q.Set("searchCriteria[sortOrders][0][direction]", "DESC")
	q.Set("searchCriteria[pageSize]", "1")
	var res struct {
		Items []struct {
			IncrementID string `json:"increment_id"`
		} `json:"items"`
	}
	if err := h.restGet(ctx, "/rest/V1/orders?"+q.Encode(), &res); err != nil {
		return "", err
	}
	if len(res.Items) == 0 {
		return "", errors.New("shopping_get_latest_order_url: the shop has no orders")
	}
	id, err := strconv.Atoi(res.Items[0].IncrementID)
	if err != nil {
		return "", fmt.Errorf("shopping_get_latest_order_url: increment_id %q is not a number", res.Items[0].IncrementID)
	}
	s, _ := h.shop()
	return fmt.Sprintf("%s/sales/order/view/order_id/%d/", s.BaseURL, id), nil
}

// latestReview: the last review the API lists for the SKU; its first
// rating's percent, or its nickname. No reviews gives "".
func (h *helpers) latestReview(ctx context.Context, sku string, rating bool) (string, error) {
	var res []struct {
		Nickname string `json:"nickname"`
		Ratings  []struct {
			Percent json.Number `json:"percent"`
		} `json:"ratings"`
	}
	if err := h.restGet(ctx, "/rest/V1/products/"+url.PathEscape(sku)+"/reviews", &res); err != nil {
		return "", err
	}
	if len(res) == 0 {
		return "", nil
	}
	last := res[len(res)-1]
	if !rating {
		return last.Nickname, nil
	}
	if len(last.Ratings) == 0 {
		return "", nil
	}
	return last.Ratings[0].Percent.String(), nil
}

// redditPostURL cuts a post or comment URL (/f/forum/id/...) to the post's
// URL; anything else comes back unchanged.
func redditPostURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	parts := strings.Split(p.Path, "/")
	if len(parts) < 4 || parts[1] != "f" {
		return u
	}
	return fmt.Sprintf("%s://%s/f/%s/%s/", p.Scheme, p.Host, parts[2], parts[3])
}

// gitlabRole reads an account's role from a GitLab project members page
// (the page must be the members page); "" when it is not listed.
func (h *helpers) gitlabRole(ctx context.Context, account string) (string, error) {
	acct, _ := json.Marshal("@" + account)
	js := `(() => {
  const names = [...document.querySelectorAll("td[data-label='Account'] span.gl-avatar-labeled-sublabel")];
  const i = names.findIndex((e) => e.innerText === ` + string(acct) + `);
  if (i < 0) return "";
  const roles = document.querySelectorAll("td.col-max-role span");
  return roles[i] ? roles[i].innerText : "";
})()`
	var role string
	if err := h.page.Eval(ctx, js, &role); err != nil {
		return "", nil // as WebArena: a page without the table has no role
	}
	return role, nil
}

// defaultHTTP is the grader's client for site APIs. No keep-alive: a site
// instance's URL stays when a reset swaps the server behind it, and a POST
// on a pooled connection to the old one would fail rather than retry.
var defaultHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
