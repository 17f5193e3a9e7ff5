package shop

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// OrderStatuses are the statuses an order moves through.
var OrderStatuses = []string{"pending", "processing", "shipped", "complete", "canceled"}

func (s *Server) adminRoutes() {
	m := s.mux
	m.HandleFunc("GET /admin/login", s.withSession(false, func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, "admin_login", http.StatusOK, view{Title: "Admin sign in", Form: map[string]string{"next": r.URL.Query().Get("next")}})
	}))
	m.HandleFunc("POST /admin/login", s.withSession(true, s.adminLogin))
	m.HandleFunc("POST /admin/logout", s.withSession(false, s.logout))
	m.HandleFunc("GET /admin", s.needAdmin(func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, "admin_dashboard", http.StatusOK, view{Title: "Dashboard"})
	}))
	m.HandleFunc("GET /admin/products", s.needAdmin(s.adminProducts))
	m.HandleFunc("GET /admin/products/new", s.needAdmin(s.adminProductForm))
	m.HandleFunc("POST /admin/products/new", s.needAdmin(s.adminProductSave))
	m.HandleFunc("GET /admin/products/{id}", s.needAdmin(s.adminProductForm))
	m.HandleFunc("POST /admin/products/{id}", s.needAdmin(s.adminProductSave))
	m.HandleFunc("GET /admin/orders", s.needAdmin(s.adminOrders))
	m.HandleFunc("GET /admin/orders/{number}", s.needAdmin(s.adminOrder))
	m.HandleFunc("POST /admin/orders/{number}/status", s.needAdmin(s.adminOrderStatus))
	m.HandleFunc("POST /admin/orders/{number}/cancel", s.needAdmin(s.adminOrderCancel))
	m.HandleFunc("GET /admin/customers", s.needAdmin(s.adminCustomers))
	m.HandleFunc("GET /admin/customers/{id}", s.needAdmin(s.adminCustomer))
	m.HandleFunc("GET /admin/reviews", s.needAdmin(s.adminReviews))
	m.HandleFunc("POST /admin/reviews/{id}/{action}", s.needAdmin(s.adminReviewAction))
	m.HandleFunc("GET /admin/pages", s.needAdmin(s.adminPages))
	m.HandleFunc("GET /admin/pages/{slug}", s.needAdmin(s.adminPageForm))
	m.HandleFunc("POST /admin/pages/{slug}", s.needAdmin(s.adminPageSave))
}

func (s *Server) adminLogin(w http.ResponseWriter, r *http.Request) {
	user := r.FormValue("username")
	if err := s.login(r.Context(), sessionOf(r).id, user, r.FormValue("password"), true); err != nil {
		s.render(w, r, "admin_login", http.StatusUnauthorized, view{Title: "Admin sign in", Flash: "Sign-in failed: " + err.Error() + ".",
			Form: map[string]string{"username": user, "next": r.FormValue("next")}})
		return
	}
	flash(w, r, safeNext(r.FormValue("next"), "/admin"), "Signed in as "+user+".")
}

// paged cuts a query's results into admin pages of 20.
type paged struct {
	Page, Pages int
	Prev, Next  string
	Query       string
	Status      string
	Items       any
}

func pageOf(r *http.Request, total int) (page, pages, offset int) {
	pages = max(1, (total+19)/20)
	page, _ = strconv.Atoi(r.URL.Query().Get("page"))
	page = min(max(page, 1), pages)
	return page, pages, (page - 1) * 20
}

func (p *paged) links(r *http.Request) {
	at := func(n int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		return r.URL.Path + "?" + q.Encode()
	}
	if p.Page > 1 {
		p.Prev = at(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = at(p.Page + 1)
	}
}

func (s *Server) count(r *http.Request, q string, args ...any) int {
	var n int
	_ = s.db.QueryRowContext(r.Context(), q, args...).Scan(&n)
	return n
}

func (s *Server) adminProducts(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	like := "%" + strings.ToLower(q) + "%"
	cond := `WHERE (lower(p.name) LIKE ? OR lower(p.sku) LIKE ?)`
	total := s.count(r, `SELECT COUNT(*) FROM products p `+cond, like, like)
	pg := paged{Query: q}
	var off int
	pg.Page, pg.Pages, off = pageOf(r, total)
	items, err := s.products(r.Context(), cond+` ORDER BY p.id LIMIT 20 OFFSET ?`, like, like, off)
	pg.Items = items
	s.renderPaged(w, r, "admin_products", "Products", &pg, err)
}

func (s *Server) adminProductForm(w http.ResponseWriter, r *http.Request) {
	cats, err := s.categories(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := map[string]string{"status": "enabled"}
	title := "New product"
	if id := r.PathValue("id"); id != "" {
		p, err := s.product(r.Context(), `WHERE p.id = ?`, id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f = productForm(p)
		title = "Edit " + p.Name
	}
	s.render(w, r, "admin_product", http.StatusOK, view{Title: title, Form: f, Data: cats})
}

func productForm(p Product) map[string]string {
	return map[string]string{"id": strconv.FormatInt(p.ID, 10), "sku": p.SKU, "name": p.Name, "price": fmt.Sprintf("%d.%02d", p.Price/100, p.Price%100),
		"stock": strconv.FormatInt(p.Stock, 10), "status": p.Status, "category": strconv.FormatInt(p.CategoryID, 10),
		"description": p.Description, "sizes": strings.Join(p.Sizes, ","), "colours": strings.Join(p.Colours, ","), "slug": p.Slug}
}

func (s *Server) adminProductSave(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	f := map[string]string{"id": id}
	for _, k := range []string{"sku", "name", "price", "stock", "status", "category", "description", "sizes", "colours"} {
		f[k] = strings.TrimSpace(r.FormValue(k))
	}
	errs := map[string]string{}
	price, err := parseMoney(f["price"])
	if err != nil {
		errs["price"] = "Enter a price like 19.99."
	}
	stock, err := strconv.ParseInt(f["stock"], 10, 64)
	if err != nil || stock < 0 {
		errs["stock"] = "Enter a whole number of 0 or more."
	}
	if f["name"] == "" {
		errs["name"] = "The name is required."
	}
	if f["sku"] == "" {
		errs["sku"] = "The SKU is required."
	}
	if f["status"] != "enabled" && f["status"] != "disabled" {
		errs["status"] = "Choose enabled or disabled."
	}
	cat, _ := strconv.ParseInt(f["category"], 10, 64)
	if s.count(r, `SELECT COUNT(*) FROM categories WHERE id = ? AND parent_id IS NOT NULL`, cat) == 0 {
		errs["category"] = "Choose a category."
	}
	if len(errs) == 0 {
		var dup int
		_ = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM products WHERE sku = ? AND id != ?`, f["sku"], id).Scan(&dup)
		if dup > 0 {
			errs["sku"] = "Another product has this SKU."
		}
	}
	if len(errs) > 0 {
		cats, _ := s.categories(ctx)
		s.render(w, r, "admin_product", http.StatusUnprocessableEntity, view{Title: "Product", Form: f, Errors: errs, Data: cats,
			Flash: "The product was not saved: correct the highlighted fields."})
		return
	}
	if id == "" {
		res, err := s.db.ExecContext(ctx, `INSERT INTO products (sku, name, slug, category_id, price_cents, stock, status, description, sizes, colours, created_at)
		  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, f["sku"], f["name"], slugify(f["name"])+"-"+strings.ToLower(f["sku"]), cat, price, stock, f["status"],
			f["description"], f["sizes"], f["colours"], now())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		n, _ := res.LastInsertId()
		id = strconv.FormatInt(n, 10)
	} else if _, err := s.db.ExecContext(ctx, `UPDATE products SET sku = ?, name = ?, category_id = ?, price_cents = ?, stock = ?, status = ?, description = ?, sizes = ?, colours = ? WHERE id = ?`,
		f["sku"], f["name"], cat, price, stock, f["status"], f["description"], f["sizes"], f["colours"], id); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/admin/products/"+id, "You saved the product.")
}

func (s *Server) adminOrders(w http.ResponseWriter, r *http.Request) {
	q, status := strings.TrimSpace(r.URL.Query().Get("q")), r.URL.Query().Get("status")
	cond := `WHERE (o.number LIKE ? OR lower(o.ship_name) LIKE ? OR lower(o.email) LIKE ?)`
	like := "%" + strings.ToLower(q) + "%"
	args := []any{like, like, like}
	if slices.Contains(OrderStatuses, status) {
		cond += ` AND o.status = ?`
		args = append(args, status)
	} else {
		status = ""
	}
	total := s.count(r, `SELECT COUNT(*) FROM orders o `+cond, args...)
	pg := paged{Query: q, Status: status}
	var off int
	pg.Page, pg.Pages, off = pageOf(r, total)
	items, err := s.orders(r.Context(), cond+` ORDER BY o.created_at DESC, o.id DESC LIMIT 20 OFFSET ?`, append(args, off)...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pg.Items = items
	pg.links(r)
	s.render(w, r, "admin_orders", http.StatusOK, view{Title: "Orders", Data: map[string]any{"P": pg, "Statuses": OrderStatuses, "Total": total}})
}

func (s *Server) adminOrder(w http.ResponseWriter, r *http.Request) {
	o, err := s.order(r.Context(), `WHERE o.number = ?`, r.PathValue("number"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "admin_order", http.StatusOK, view{Title: "Order #" + o.Number, Data: map[string]any{"O": o, "Statuses": OrderStatuses}})
}

func (s *Server) adminOrderStatus(w http.ResponseWriter, r *http.Request) {
	n, status := r.PathValue("number"), r.FormValue("status")
	if !slices.Contains(OrderStatuses, status) {
		flash(w, r, "/admin/orders/"+n, "Unknown status "+status+".")
		return
	}
	if _, err := s.db.ExecContext(r.Context(), `UPDATE orders SET status = ? WHERE number = ?`, status, n); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/admin/orders/"+n, "Order #"+n+" is now "+status+".")
}

func (s *Server) adminOrderCancel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	n := r.PathValue("number")
	o, err := s.order(ctx, `WHERE o.number = ?`, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if o.Status == "shipped" || o.Status == "complete" || o.Status == "canceled" {
		flash(w, r, "/admin/orders/"+n, "Order #"+n+" is "+o.Status+" and cannot be canceled.")
		return
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE orders SET status = 'canceled' WHERE id = ?`, o.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	// Canceled items go back into stock.
	if _, err := tx.ExecContext(ctx, `UPDATE products SET stock = stock + (SELECT SUM(qty) FROM order_items i WHERE i.order_id = ? AND i.product_id = products.id)
	  WHERE id IN (SELECT product_id FROM order_items WHERE order_id = ?)`, o.ID, o.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := tx.Commit(); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/admin/orders/"+n, "Order #"+n+" was canceled.")
}

func (s *Server) adminCustomers(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	like := "%" + strings.ToLower(q) + "%"
	cond := `WHERE lower(email) LIKE ? OR lower(first_name || ' ' || last_name) LIKE ?`
	total := s.count(r, `SELECT COUNT(*) FROM customers `+cond, like, like)
	pg := paged{Query: q}
	var off int
	pg.Page, pg.Pages, off = pageOf(r, total)
	rows, err := s.db.QueryContext(r.Context(), `SELECT id FROM customers `+cond+` ORDER BY id LIMIT 20 OFFSET ?`, like, like, off)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var ids []int64
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	var cs []Customer
	for _, id := range ids {
		c, err := s.customer(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		cs = append(cs, c)
	}
	pg.Items = cs
	pg.links(r)
	s.render(w, r, "admin_customers", http.StatusOK, view{Title: "Customers", Data: pg})
}

func (s *Server) adminCustomer(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	c, err := s.customer(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	orders, err := s.orders(r.Context(), `WHERE o.customer_id = ? ORDER BY o.created_at DESC, o.id DESC`, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "admin_customer", http.StatusOK, view{Title: c.Name(), Data: map[string]any{"C": c, "Orders": orders}})
}

func (s *Server) adminReviews(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	if status != "approved" && status != "rejected" && status != "all" {
		status = "pending"
	}
	cond, args := `WHERE r.status = ?`, []any{status}
	if status == "all" {
		cond, args = `WHERE 1`, nil
	}
	total := s.count(r, `SELECT COUNT(*) FROM reviews r `+cond, args...)
	pg := paged{Status: status}
	var off int
	pg.Page, pg.Pages, off = pageOf(r, total)
	items, err := s.reviews(r.Context(), cond+` ORDER BY r.created_at DESC, r.id DESC LIMIT 20 OFFSET ?`, append(args, off)...)
	pg.Items = items
	s.renderPaged(w, r, "admin_reviews", "Reviews", &pg, err)
}

func (s *Server) adminReviewAction(w http.ResponseWriter, r *http.Request) {
	to := map[string]string{"approve": "approved", "reject": "rejected"}[r.PathValue("action")]
	if to == "" {
		s.notFound(w, r)
		return
	}
	res, err := s.db.ExecContext(r.Context(), `UPDATE reviews SET status = ? WHERE id = ?`, to, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		s.notFound(w, r)
		return
	}
	flash(w, r, safeNext(r.FormValue("next"), "/admin/reviews"), "The review was "+to+".")
}

type contentPage struct {
	Slug, Title, Body, Updated string
	Published                  bool
}

func (s *Server) adminPages(w http.ResponseWriter, r *http.Request) {
	rows, err := s.db.QueryContext(r.Context(), `SELECT slug, title, body, published, updated_at FROM pages ORDER BY id`)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer rows.Close()
	var ps []contentPage
	for rows.Next() {
		var p contentPage
		if err := rows.Scan(&p.Slug, &p.Title, &p.Body, &p.Published, &p.Updated); err != nil {
			s.fail(w, r, err)
			return
		}
		ps = append(ps, p)
	}
	s.render(w, r, "admin_pages", http.StatusOK, view{Title: "Content pages", Data: ps})
}

func (s *Server) adminPageForm(w http.ResponseWriter, r *http.Request) {
	var p contentPage
	err := s.db.QueryRowContext(r.Context(), `SELECT slug, title, body, published, updated_at FROM pages WHERE slug = ?`, r.PathValue("slug")).
		Scan(&p.Slug, &p.Title, &p.Body, &p.Published, &p.Updated)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "admin_page", http.StatusOK, view{Title: "Edit " + p.Title, Data: p})
}

func (s *Server) adminPageSave(w http.ResponseWriter, r *http.Request) {
	title, body := strings.TrimSpace(r.FormValue("title")), strings.TrimSpace(r.FormValue("body"))
	if title == "" || body == "" {
		flash(w, r, "/admin/pages/"+r.PathValue("slug"), "A page needs a title and a body.")
		return
	}
	pub := 0
	if r.FormValue("published") != "" {
		pub = 1
	}
	res, err := s.db.ExecContext(r.Context(), `UPDATE pages SET title = ?, body = ?, published = ?, updated_at = ? WHERE slug = ?`, title, body, pub, now(), r.PathValue("slug"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		s.notFound(w, r)
		return
	}
	flash(w, r, "/admin/pages", "You saved the page "+title+".")
}

// renderPaged renders an admin list page (or the error that loading its
// items ended with).
func (s *Server) renderPaged(w http.ResponseWriter, r *http.Request, name, title string, pg *paged, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pg.links(r)
	s.render(w, r, name, http.StatusOK, view{Title: title, Data: *pg})
}
