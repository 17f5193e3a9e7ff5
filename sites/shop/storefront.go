package shop

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// PageSize is how many products a listing page shows.
const PageSize = 12

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

func (s *Server) storefrontRoutes() {
	m := s.mux
	m.HandleFunc("GET /{$}", s.withSession(false, s.home))
	m.HandleFunc("GET /category/{slug}", s.withSession(false, s.category))
	m.HandleFunc("GET /search", s.withSession(false, s.search))
	m.HandleFunc("GET /product/{slug}", s.withSession(false, s.productPage))
	m.HandleFunc("GET /page/{slug}", s.withSession(false, s.contentPage))
	m.HandleFunc("/", s.withSession(false, s.notFound))
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	top, err := s.products(ctx, `WHERE p.status = 'enabled' ORDER BY 15 DESC, 14 DESC, p.id LIMIT 8`)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	fresh, err := s.products(ctx, `WHERE p.status = 'enabled' ORDER BY p.created_at DESC, p.id LIMIT 4`)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "home", http.StatusOK, view{Title: "WebServ Shop", Data: map[string]any{"Top": top, "New": fresh}})
}

// listing is a category or search result page.
type listing struct {
	Heading  string
	Category *Category
	Query    string
	Products []Product
	Total    int
	Page     int
	Pages    int
	Sort     string
	Min, Max string
	Size     string
	Colour   string
	Sizes    []string
	Colours  []string
	PrevURL  string
	NextURL  string
	PageURLs []pageLink
}

type pageLink struct {
	N       int
	URL     string
	Current bool
}

var sorts = map[string]string{
	"":           "p.id",
	"name":       "p.name",
	"price_asc":  "p.price_cents, p.id",
	"price_desc": "p.price_cents DESC, p.id",
	"rating":     "14 DESC, p.id",
	"newest":     "p.created_at DESC, p.id",
}

func (s *Server) category(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var c Category
	err := s.db.QueryRowContext(ctx, `SELECT id, slug, name, COALESCE(parent_id, 0) FROM categories WHERE slug = ?`, r.PathValue("slug")).Scan(&c.ID, &c.Slug, &c.Name, &c.ParentID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if c.ParentID == 0 {
		cats, _ := s.categories(ctx)
		for _, t := range cats {
			if t.ID == c.ID {
				c.Children = t.Children
			}
		}
	}
	s.list(w, r, listing{Heading: c.Name, Category: &c}, `(p.category_id = ? OR p.category_id IN (SELECT id FROM categories WHERE parent_id = ?))`, c.ID, c.ID)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	like := "%" + strings.ToLower(q) + "%"
	s.list(w, r, listing{Heading: "Search results for “" + q + "”", Query: q}, `(lower(p.name) LIKE ? OR lower(p.sku) LIKE ? OR lower(c.name) LIKE ?)`, like, like, like)
}

// list renders a filtered, sorted, paginated product listing.
func (s *Server) list(w http.ResponseWriter, r *http.Request, l listing, cond string, args ...any) {
	ctx := r.Context()
	q := r.URL.Query()
	l.Sort, l.Min, l.Max, l.Size, l.Colour = q.Get("sort"), q.Get("min"), q.Get("max"), q.Get("size"), q.Get("colour")
	order, ok := sorts[l.Sort]
	if !ok {
		order, l.Sort = sorts[""], ""
	}
	where := "WHERE p.status = 'enabled' AND " + cond
	// The facets come from the unfiltered result.
	facets, err := s.products(ctx, where, args...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	seenS, seenC := map[string]bool{}, map[string]bool{}
	for _, p := range facets {
		for _, v := range p.Sizes {
			if !seenS[v] {
				seenS[v] = true
				l.Sizes = append(l.Sizes, v)
			}
		}
		for _, v := range p.Colours {
			if !seenC[v] {
				seenC[v] = true
				l.Colours = append(l.Colours, v)
			}
		}
	}
	if v, err := parseMoney(l.Min); err == nil {
		where += " AND p.price_cents >= ?"
		args = append(args, v)
	}
	if v, err := parseMoney(l.Max); err == nil {
		where += " AND p.price_cents <= ?"
		args = append(args, v)
	}
	if l.Size != "" {
		where += " AND (',' || p.sizes || ',') LIKE ?"
		args = append(args, "%,"+l.Size+",%")
	}
	if l.Colour != "" {
		where += " AND (',' || p.colours || ',') LIKE ?"
		args = append(args, "%,"+l.Colour+",%")
	}
	all, err := s.products(ctx, where+" ORDER BY "+order, args...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	l.Total = len(all)
	l.Pages = max(1, (l.Total+PageSize-1)/PageSize)
	l.Page, _ = strconv.Atoi(q.Get("page"))
	l.Page = min(max(l.Page, 1), l.Pages)
	lo := (l.Page - 1) * PageSize
	l.Products = all[lo:min(lo+PageSize, l.Total)]
	at := func(n int) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(n))
		return r.URL.Path + "?" + v.Encode()
	}
	if l.Page > 1 {
		l.PrevURL = at(l.Page - 1)
	}
	if l.Page < l.Pages {
		l.NextURL = at(l.Page + 1)
	}
	for n := 1; n <= l.Pages; n++ {
		l.PageURLs = append(l.PageURLs, pageLink{n, at(n), n == l.Page})
	}
	s.render(w, r, "listing", http.StatusOK, view{Title: l.Heading, Data: l})
}

func (s *Server) productPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := s.product(ctx, `WHERE p.slug = ?`, r.PathValue("slug"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if p.Status != "enabled" {
		s.notFound(w, r)
		return
	}
	reviews, err := s.reviews(ctx, `WHERE r.product_id = ? AND r.status = 'approved' ORDER BY r.created_at DESC, r.id DESC`, p.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	wished := false
	if sess := sessionOf(r); sess != nil && sess.customerID != 0 {
		var n int
		_ = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM wishlist WHERE customer_id = ? AND product_id = ?`, sess.customerID, p.ID).Scan(&n)
		wished = n > 0
	}
	s.render(w, r, "product", http.StatusOK, view{Title: p.Name, Data: map[string]any{"P": p, "Reviews": reviews, "Wished": wished}})
}

func (s *Server) contentPage(w http.ResponseWriter, r *http.Request) {
	var title, body string
	err := s.db.QueryRowContext(r.Context(), `SELECT title, body FROM pages WHERE slug = ? AND published = 1`, r.PathValue("slug")).Scan(&title, &body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "page", http.StatusOK, view{Title: title, Data: map[string]string{"Title": title, "Body": body}})
}
