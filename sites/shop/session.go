package shop

// Sessions: a cookie names a row of the sessions table, which holds the
// signed-in customer and admin; handlers that need either redirect to
// sign-in.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

type session struct {
	id         string
	customerID int64
	adminID    int64
}

type sessionKey struct{}

func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(sessionKey{}).(*session)
	return s
}

// withSession loads the request's session (cookie shop_sid), creating one
// when create is true and there is none.
func (s *Server) withSession(create bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var sess *session
		if c, err := r.Cookie("shop_sid"); err == nil {
			x := &session{id: c.Value}
			var cust, adm sql.NullInt64
			if s.db.QueryRowContext(r.Context(), `SELECT customer_id, admin_id FROM sessions WHERE id = ?`, c.Value).Scan(&cust, &adm) == nil {
				x.customerID, x.adminID = cust.Int64, adm.Int64
				sess = x
			}
		}
		if sess == nil && create {
			var b [16]byte
			_, _ = rand.Read(b[:])
			sess = &session{id: hex.EncodeToString(b[:])}
			if _, err := s.db.ExecContext(r.Context(), `INSERT INTO sessions (id, created_at) VALUES (?, ?)`, sess.id, now()); err != nil {
				s.fail(w, r, err)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: "shop_sid", Value: sess.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		if sess != nil {
			r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
		}
		h(w, r)
	}
}

// Login signs a session in as a customer (email) or, with admin set, as the
// admin, and returns the session cookie's value. The task system uses it
// to start episodes signed in.
func (s *Server) login(ctx context.Context, sid string, email, password string, admin bool) error {
	if admin {
		var id int64
		var hash string
		if err := s.db.QueryRowContext(ctx, `SELECT id, password_hash FROM admins WHERE username = ?`, email).Scan(&id, &hash); err != nil || hash != hashPassword(password) {
			return errors.New("wrong username or password")
		}
		_, err := s.db.ExecContext(ctx, `UPDATE sessions SET admin_id = ? WHERE id = ?`, id, sid)
		return err
	}
	var id int64
	var hash string
	if err := s.db.QueryRowContext(ctx, `SELECT id, password_hash FROM customers WHERE email = ?`, strings.ToLower(strings.TrimSpace(email))).Scan(&id, &hash); err != nil || hash != hashPassword(password) {
		return errors.New("the email or password is not right")
	}
	_, err := s.db.ExecContext(ctx, `UPDATE sessions SET customer_id = ? WHERE id = ?`, id, sid)
	return err
}

func (s *Server) customer(ctx context.Context, id int64) (Customer, error) {
	var c Customer
	err := s.db.QueryRowContext(ctx, `SELECT id, email, first_name, last_name, created_at, (SELECT COUNT(*) FROM orders WHERE customer_id = customers.id) FROM customers WHERE id = ?`, id).
		Scan(&c.ID, &c.Email, &c.First, &c.Last, &c.Created, &c.Orders)
	return c, err
}

// needCustomer redirects to sign-in when the session has no customer.
func (s *Server) needCustomer(h http.HandlerFunc) http.HandlerFunc {
	return s.withSession(true, func(w http.ResponseWriter, r *http.Request) {
		if sessionOf(r).customerID == 0 {
			http.Redirect(w, r, "/account/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r)
	})
}

func (s *Server) needAdmin(h http.HandlerFunc) http.HandlerFunc {
	return s.withSession(true, func(w http.ResponseWriter, r *http.Request) {
		if sessionOf(r).adminID == 0 {
			if strings.HasPrefix(r.URL.Path, "/admin/api/") {
				http.Error(w, `{"error":"sign in to the admin first"}`, http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/admin/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r)
	})
}
