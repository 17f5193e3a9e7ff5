package shop

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func (s *Server) apiRoutes() {
	m := s.mux
	m.HandleFunc("GET /api/suggest", s.suggest)
	m.HandleFunc("POST /api/cart", s.withSession(true, s.apiCartAdd))
	m.HandleFunc("GET /api/cart/count", s.withSession(false, s.apiCartCount))
	m.HandleFunc("GET /admin/api/report/{name}", s.needAdmin(s.report))
	for _, prefix := range []string{"/rest/V1", "/rest/default/V1", "/rest/all/V1"} {
		m.HandleFunc("POST "+prefix+"/integration/admin/token", s.restToken)
		m.HandleFunc("GET "+prefix+"/orders", s.restAuth(s.restOrders))
		m.HandleFunc("GET "+prefix+"/products/{sku}/reviews", s.restAuth(s.restReviews))
	}
	m.HandleFunc("POST /__webserv/query", s.evalQuery)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sleep waits d or until the request is gone.
func sleep(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// suggest answers the search box's as-you-type suggestions.
func (s *Server) suggest(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	sleep(r, s.opts.SuggestDelay)
	type sug struct {
		Name  string `json:"name"`
		URL   string `json:"url"`
		Price string `json:"price"`
	}
	out := []sug{}
	if len(q) >= 2 {
		ps, err := s.products(r.Context(), `WHERE p.status = 'enabled' AND lower(p.name) LIKE ? ORDER BY p.name LIMIT 6`, "%"+q+"%")
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		for _, p := range ps {
			out = append(out, sug{p.Name, "/product/" + p.Slug, Money(p.Price)})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": q, "suggestions": out})
}

func (s *Server) apiCartAdd(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ProductID int64  `json:"product_id"`
		Size      string `json:"size"`
		Colour    string `json:"colour"`
		Qty       int64  `json:"qty"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "send JSON {product_id, size, colour, qty}: " + err.Error()})
		return
	}
	p, err := s.addToCart(r.Context(), sessionOf(r).id, req.ProductID, req.Size, req.Colour, req.Qty)
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
		return
	}
	var n int64
	_ = s.db.QueryRowContext(r.Context(), `SELECT COALESCE(SUM(qty), 0) FROM cart_items WHERE session_id = ?`, sessionOf(r).id).Scan(&n)
	writeJSON(w, http.StatusOK, map[string]any{"count": n, "message": "You added " + p.Name + " to your cart."})
}

func (s *Server) apiCartCount(w http.ResponseWriter, r *http.Request) {
	var n int64
	if sess := sessionOf(r); sess != nil {
		_ = s.db.QueryRowContext(r.Context(), `SELECT COALESCE(SUM(qty), 0) FROM cart_items WHERE session_id = ?`, sess.id).Scan(&n)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": n})
}

// report answers the admin dashboard's widgets, each after ReportDelay.
func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sleep(r, s.opts.ReportDelay)
	switch r.PathValue("name") {
	case "sales":
		var orders, revenue int64
		var pending int64
		_ = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(total_cents), 0) FROM orders WHERE status != 'canceled'`).Scan(&orders, &revenue)
		_ = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM orders WHERE status = 'pending'`).Scan(&pending)
		writeJSON(w, http.StatusOK, map[string]any{"orders": orders, "revenue": Money(revenue), "pending": pending})
	case "bestsellers":
		rows, err := s.db.QueryContext(ctx, `SELECT i.name, SUM(i.qty) AS n FROM order_items i JOIN orders o ON o.id = i.order_id
		  WHERE o.status != 'canceled' GROUP BY i.product_id ORDER BY n DESC, i.name LIMIT 5`)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		defer rows.Close()
		type row struct {
			Name string `json:"name"`
			Qty  int64  `json:"qty"`
		}
		out := []row{}
		for rows.Next() {
			var x row
			_ = rows.Scan(&x.Name, &x.Qty)
			out = append(out, x)
		}
		writeJSON(w, http.StatusOK, map[string]any{"products": out})
	case "recent":
		recent, err := s.orders(ctx, `ORDER BY o.created_at DESC, o.id DESC LIMIT 5`)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		type row struct {
			Number, Customer, Status, Total string
		}
		out := []row{}
		for _, o := range recent {
			out = append(out, row{o.Number, o.Customer, o.Status, Money(o.Total)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"orders": out})
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "unknown report; reports are sales, bestsellers, recent"})
	}
}

// ---- the Magento REST subset WebArena's evaluator helpers use ----------

func (s *Server) restToken(w http.ResponseWriter, r *http.Request) {
	var req struct{ Username, Password string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "send JSON {username, password}"})
		return
	}
	var id int64
	var hash string
	if err := s.db.QueryRowContext(r.Context(), `SELECT id, password_hash FROM admins WHERE username = ?`, req.Username).Scan(&id, &hash); err != nil || hash != hashPassword(req.Password) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "The account sign-in was incorrect or your account is disabled temporarily."})
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	if _, err := s.db.ExecContext(r.Context(), `INSERT INTO tokens (token, admin_id) VALUES (?, ?)`, tok, id); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"message": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, tok)
}

func (s *Server) restAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var n int
		if ok {
			_ = s.db.QueryRowContext(r.Context(), `SELECT COUNT(*) FROM tokens WHERE token = ?`, tok).Scan(&n)
		}
		if n == 0 {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "The consumer isn't authorized to access %resources."})
			return
		}
		h(w, r)
	}
}

// restOrders supports sorting by one field and a page size, as the
// helpers ask: searchCriteria[sortOrders][0][field|direction],
// searchCriteria[pageSize], searchCriteria[currentPage].
func (s *Server) restOrders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	order := "o.id"
	switch q.Get("searchCriteria[sortOrders][0][field]") {
	case "created_at":
		order = "o.created_at"
	case "increment_id":
		order = "o.number"
	case "grand_total":
		order = "o.total_cents"
	}
	if strings.EqualFold(q.Get("searchCriteria[sortOrders][0][direction]"), "DESC") {
		order += " DESC, o.id DESC"
	} else {
		order += ", o.id"
	}
	size, _ := strconv.Atoi(q.Get("searchCriteria[pageSize]"))
	if size <= 0 || size > 1000 {
		size = 1000
	}
	pageN, _ := strconv.Atoi(q.Get("searchCriteria[currentPage]"))
	pageN = max(pageN, 1)
	list, err := s.orders(r.Context(), `ORDER BY `+order+` LIMIT ? OFFSET ?`, size, (pageN-1)*size)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"message": err.Error()})
		return
	}
	var total int
	_ = s.db.QueryRowContext(r.Context(), `SELECT COUNT(*) FROM orders`).Scan(&total)
	items := []map[string]any{}
	for _, o := range list {
		items = append(items, map[string]any{"entity_id": o.ID, "increment_id": o.Number, "status": o.Status, "created_at": o.Created,
			"grand_total": float64(o.Total) / 100, "customer_email": o.Email, "customer_id": o.CustomerID})
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "total_count": total})
}

// restReviews lists a product's reviews oldest first (the latest is last),
// each with one rating whose percent is stars x 20.
func (s *Server) restReviews(w http.ResponseWriter, r *http.Request) {
	rs, err := s.reviews(r.Context(), `WHERE p.sku = ? ORDER BY r.created_at, r.id`, r.PathValue("sku"))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"message": err.Error()})
		return
	}
	out := []map[string]any{}
	for _, x := range rs {
		out = append(out, map[string]any{"id": x.ID, "title": x.Title, "detail": x.Body, "nickname": x.Nickname, "created_at": x.Created,
			"status": x.Status, "ratings": []map[string]any{{"rating_name": "Rating", "percent": x.Rating * 20, "value": x.Rating}}})
	}
	writeJSON(w, http.StatusOK, out)
}

// evalQuery runs one read-only SQL query for the state evaluator.
func (s *Server) evalQuery(w http.ResponseWriter, r *http.Request) {
	tok := r.Header.Get("X-Webserv-Eval")
	if s.opts.EvalToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.EvalToken)) != 1 {
		http.NotFound(w, r)
		return
	}
	var req struct {
		SQL  string `json:"sql"`
		Args []any  `json:"args"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "send JSON {sql, args}: " + err.Error()})
		return
	}
	rows, err := s.ro.QueryContext(r.Context(), req.SQL, req.Args...)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := [][]any{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"columns": cols, "rows": out})
}
