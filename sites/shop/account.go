package shop

import (
	"net/http"
	"strconv"
	"strings"
)

func (s *Server) accountRoutes() {
	m := s.mux
	m.HandleFunc("GET /account/login", s.withSession(false, s.loginPage))
	m.HandleFunc("POST /account/login", s.withSession(true, s.loginPost))
	m.HandleFunc("POST /account/logout", s.withSession(false, s.logout))
	m.HandleFunc("GET /account", s.needCustomer(s.accountHome))
	m.HandleFunc("GET /account/orders", s.needCustomer(s.accountOrders))
	m.HandleFunc("GET /account/orders/{number}", s.needCustomer(s.accountOrder))
	m.HandleFunc("GET /account/wishlist", s.needCustomer(s.wishlistPage))
	m.HandleFunc("POST /wishlist/add", s.needCustomer(s.wishlistAdd))
	m.HandleFunc("POST /wishlist/remove", s.needCustomer(s.wishlistRemove))
	m.HandleFunc("GET /account/addresses", s.needCustomer(s.addressesPage))
	m.HandleFunc("POST /account/addresses", s.needCustomer(s.addressAdd))
	m.HandleFunc("POST /product/{slug}/review", s.needCustomer(s.reviewPost))
}

func safeNext(next, def string) string {
	if strings.HasPrefix(next, "/") && !strings.HasPrefix(next, "//") {
		return next
	}
	return def
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "login", http.StatusOK, view{Title: "Sign in", Form: map[string]string{"next": r.URL.Query().Get("next")}})
}

func (s *Server) loginPost(w http.ResponseWriter, r *http.Request) {
	email, pass := r.FormValue("email"), r.FormValue("password")
	if err := s.login(r.Context(), sessionOf(r).id, email, pass, false); err != nil {
		s.render(w, r, "login", http.StatusUnauthorized, view{Title: "Sign in", Flash: "Sign-in failed: " + err.Error() + ".",
			Form: map[string]string{"email": email, "next": r.FormValue("next")}})
		return
	}
	flash(w, r, safeNext(r.FormValue("next"), "/account"), "Welcome back!")
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if sess := sessionOf(r); sess != nil {
		_, _ = s.db.ExecContext(r.Context(), `DELETE FROM sessions WHERE id = ?`, sess.id)
	}
	http.SetCookie(w, &http.Cookie{Name: "shop_sid", Path: "/", MaxAge: -1})
	flash(w, r, "/", "You are signed out.")
}

func (s *Server) accountHome(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := sessionOf(r).customerID
	recent, err := s.orders(ctx, `WHERE o.customer_id = ? ORDER BY o.created_at DESC, o.id DESC LIMIT 3`, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "account", http.StatusOK, view{Title: "My account", Data: map[string]any{"Recent": recent}})
}

func (s *Server) accountOrders(w http.ResponseWriter, r *http.Request) {
	orders, err := s.orders(r.Context(), `WHERE o.customer_id = ? ORDER BY o.created_at DESC, o.id DESC`, sessionOf(r).customerID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "orders", http.StatusOK, view{Title: "My orders", Data: orders})
}

func (s *Server) accountOrder(w http.ResponseWriter, r *http.Request) {
	o, err := s.order(r.Context(), `WHERE o.number = ? AND o.customer_id = ?`, r.PathValue("number"), sessionOf(r).customerID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "order", http.StatusOK, view{Title: "Order #" + o.Number, Data: o})
}

func (s *Server) wishlistPage(w http.ResponseWriter, r *http.Request) {
	ps, err := s.products(r.Context(), `JOIN wishlist wl ON wl.product_id = p.id WHERE wl.customer_id = ? ORDER BY wl.added_at, p.id`, sessionOf(r).customerID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "wishlist", http.StatusOK, view{Title: "My wishlist", Data: ps})
}

func (s *Server) wishlistAdd(w http.ResponseWriter, r *http.Request) {
	p, err := s.product(r.Context(), `WHERE p.id = ?`, r.FormValue("product_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.db.ExecContext(r.Context(), `INSERT OR IGNORE INTO wishlist (customer_id, product_id, added_at) VALUES (?, ?, ?)`, sessionOf(r).customerID, p.ID, now()); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/product/"+p.Slug, p.Name+" was added to your wishlist.")
}

func (s *Server) wishlistRemove(w http.ResponseWriter, r *http.Request) {
	if _, err := s.db.ExecContext(r.Context(), `DELETE FROM wishlist WHERE customer_id = ? AND product_id = ?`, sessionOf(r).customerID, r.FormValue("product_id")); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/account/wishlist", "Removed from your wishlist.")
}

type address struct {
	ID                                   int64
	Name, Street, City, Zip, Country, Ph string
}

func (s *Server) addresses(r *http.Request) ([]address, error) {
	rows, err := s.db.QueryContext(r.Context(), `SELECT id, name, street, city, zip, country, phone FROM addresses WHERE customer_id = ? ORDER BY id`, sessionOf(r).customerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []address
	for rows.Next() {
		var a address
		if err := rows.Scan(&a.ID, &a.Name, &a.Street, &a.City, &a.Zip, &a.Country, &a.Ph); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (s *Server) addressesPage(w http.ResponseWriter, r *http.Request) {
	as, err := s.addresses(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "addresses", http.StatusOK, view{Title: "My addresses", Data: as})
}

// addressForm reads and validates an address form; errs is nil when valid.
func addressForm(r *http.Request) (map[string]string, map[string]string) {
	f := map[string]string{}
	errs := map[string]string{}
	for _, k := range []string{"name", "street", "city", "zip", "country", "phone"} {
		f[k] = strings.TrimSpace(r.FormValue(k))
		if f[k] == "" {
			errs[k] = "This field is required."
		}
	}
	if z := f["zip"]; z != "" && (len(z) < 3 || len(z) > 10) {
		errs["zip"] = "Enter a valid postal code."
	}
	if len(errs) == 0 {
		errs = nil
	}
	return f, errs
}

func (s *Server) addressAdd(w http.ResponseWriter, r *http.Request) {
	f, errs := addressForm(r)
	if errs != nil {
		as, _ := s.addresses(r)
		s.render(w, r, "addresses", http.StatusUnprocessableEntity, view{Title: "My addresses", Data: as, Form: f, Errors: errs})
		return
	}
	if _, err := s.db.ExecContext(r.Context(), `INSERT INTO addresses (customer_id, name, street, city, zip, country, phone) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		sessionOf(r).customerID, f["name"], f["street"], f["city"], f["zip"], f["country"], f["phone"]); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/account/addresses", "The address was saved.")
}

func (s *Server) reviewPost(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := s.product(ctx, `WHERE p.slug = ?`, r.PathValue("slug"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rating, _ := strconv.Atoi(r.FormValue("rating"))
	title, body := strings.TrimSpace(r.FormValue("title")), strings.TrimSpace(r.FormValue("body"))
	if rating < 1 || rating > 5 || title == "" || body == "" {
		flash(w, r, "/product/"+p.Slug+"#write-review", "Your review needs a rating, a title and some text.")
		return
	}
	c, err := s.customer(ctx, sessionOf(r).customerID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO reviews (product_id, customer_id, nickname, rating, title, body, status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)`,
		p.ID, c.ID, c.First, rating, title, body, now()); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/product/"+p.Slug, "Thank you! Your review will appear once it has been approved.")
}
