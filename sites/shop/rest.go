package shop

// The endpoints graders call: the subset of Magento's REST API that
// WebArena's evaluator helpers use (an admin token, orders, reviews) and
// the state evaluator's read-only SQL query.

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

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
