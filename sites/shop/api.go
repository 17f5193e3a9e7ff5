package shop

import (
	"encoding/json"
	"net/http"
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
