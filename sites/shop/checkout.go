package shop

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

func (s *Server) checkoutRoutes() {
	m := s.mux
	m.HandleFunc("GET /cart", s.withSession(true, s.cartPage))
	m.HandleFunc("POST /cart/add", s.withSession(true, s.cartAddForm))
	m.HandleFunc("POST /cart/update", s.withSession(true, s.cartUpdate))
	m.HandleFunc("POST /cart/remove", s.withSession(true, s.cartRemove))
	m.HandleFunc("GET /checkout", s.withSession(true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/checkout/shipping", http.StatusSeeOther)
	}))
	m.HandleFunc("GET /checkout/shipping", s.withSession(true, s.shippingPage))
	m.HandleFunc("POST /checkout/shipping", s.withSession(true, s.shippingPost))
	m.HandleFunc("GET /checkout/payment", s.withSession(true, s.paymentPage))
	m.HandleFunc("POST /checkout/payment", s.withSession(true, s.paymentPost))
	m.HandleFunc("GET /checkout/review", s.withSession(true, s.reviewPage))
	m.HandleFunc("POST /checkout/place", s.withSession(true, s.placeOrder))
	m.HandleFunc("GET /checkout/success/{number}", s.withSession(true, s.successPage))
}

// CartLine is a line of the cart.
type CartLine struct {
	ID      int64
	Product Product
	Size    string
	Colour  string
	Qty     int64
}

// Subtotal is the line's price times its quantity.
func (l CartLine) Subtotal() int64 { return l.Product.Price * l.Qty }

type cart struct {
	Lines    []CartLine
	Subtotal int64
}

func (s *Server) cart(ctx context.Context, sid string) (cart, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, product_id, size, colour, qty FROM cart_items WHERE session_id = ? ORDER BY id`, sid)
	if err != nil {
		return cart{}, err
	}
	type raw struct {
		id, pid, qty int64
		size, colour string
	}
	var rs []raw
	for rows.Next() {
		var x raw
		if err := rows.Scan(&x.id, &x.pid, &x.size, &x.colour, &x.qty); err != nil {
			rows.Close()
			return cart{}, err
		}
		rs = append(rs, x)
	}
	rows.Close()
	var c cart
	for _, x := range rs {
		p, err := s.product(ctx, `WHERE p.id = ?`, x.pid)
		if err != nil {
			return c, err
		}
		l := CartLine{ID: x.id, Product: p, Size: x.size, Colour: x.colour, Qty: x.qty}
		c.Lines = append(c.Lines, l)
		c.Subtotal += l.Subtotal()
	}
	return c, nil
}

// addToCart validates and adds a line; the error is the message to show.
func (s *Server) addToCart(ctx context.Context, sid string, pid int64, size, colour string, qty int64) (Product, error) {
	p, err := s.product(ctx, `WHERE p.id = ? AND p.status = 'enabled'`, pid)
	if err != nil {
		return p, errors.New("that product is not available")
	}
	switch {
	case len(p.Sizes) > 0 && !slices.Contains(p.Sizes, size):
		return p, errors.New("please choose a size")
	case len(p.Colours) > 0 && !slices.Contains(p.Colours, colour):
		return p, errors.New("please choose a colour")
	case qty < 1 || qty > 10:
		return p, errors.New("quantity must be between 1 and 10")
	case p.Stock < qty:
		return p, fmt.Errorf("only %d left in stock", p.Stock)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE cart_items SET qty = qty + ? WHERE session_id = ? AND product_id = ? AND size = ? AND colour = ?`, qty, sid, pid, size, colour)
	if err != nil {
		return p, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		_, err = s.db.ExecContext(ctx, `INSERT INTO cart_items (session_id, product_id, size, colour, qty) VALUES (?, ?, ?, ?, ?)`, sid, pid, size, colour, qty)
	}
	return p, err
}

func (s *Server) cartAddForm(w http.ResponseWriter, r *http.Request) {
	pid, _ := strconv.ParseInt(r.FormValue("product_id"), 10, 64)
	qty, _ := strconv.ParseInt(r.FormValue("qty"), 10, 64)
	p, err := s.addToCart(r.Context(), sessionOf(r).id, pid, r.FormValue("size"), r.FormValue("colour"), qty)
	if err != nil {
		flash(w, r, "/product/"+p.Slug, "Could not add to cart: "+err.Error()+".")
		return
	}
	flash(w, r, "/cart", "You added "+p.Name+" to your cart.")
}

func (s *Server) cartPage(w http.ResponseWriter, r *http.Request) {
	c, err := s.cart(r.Context(), sessionOf(r).id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "cart", http.StatusOK, view{Title: "Shopping cart", Data: c})
}

func (s *Server) cartUpdate(w http.ResponseWriter, r *http.Request) {
	qty, err := strconv.ParseInt(r.FormValue("qty"), 10, 64)
	if err != nil || qty < 0 || qty > 10 {
		flash(w, r, "/cart", "Quantity must be between 0 and 10.")
		return
	}
	q := `UPDATE cart_items SET qty = ? WHERE id = ? AND session_id = ?`
	args := []any{qty, r.FormValue("line"), sessionOf(r).id}
	if qty == 0 {
		q, args = `DELETE FROM cart_items WHERE id = ? AND session_id = ?`, args[1:]
	}
	if _, err := s.db.ExecContext(r.Context(), q, args...); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/cart", "Your cart was updated.")
}

func (s *Server) cartRemove(w http.ResponseWriter, r *http.Request) {
	if _, err := s.db.ExecContext(r.Context(), `DELETE FROM cart_items WHERE id = ? AND session_id = ?`, r.FormValue("line"), sessionOf(r).id); err != nil {
		s.fail(w, r, err)
		return
	}
	flash(w, r, "/cart", "The item was removed from your cart.")
}

// checkoutState is what the checkout steps collected so far.
type checkoutState struct {
	Address map[string]string `json:"address,omitempty"`
	Method  string            `json:"method,omitempty"`
	Payment string            `json:"payment,omitempty"`
	Card    string            `json:"card,omitempty"`
}

func (s *Server) checkoutState(ctx context.Context, sid string) checkoutState {
	var raw string
	var st checkoutState
	if s.db.QueryRowContext(ctx, `SELECT checkout FROM sessions WHERE id = ?`, sid).Scan(&raw) == nil {
		_ = json.Unmarshal([]byte(raw), &st)
	}
	return st
}

func (s *Server) saveCheckout(ctx context.Context, sid string, st checkoutState) error {
	b, _ := json.Marshal(st)
	_, err := s.db.ExecContext(ctx, `UPDATE sessions SET checkout = ? WHERE id = ?`, string(b), sid)
	return err
}

// Countries the shop ships to.
var Countries = []string{"United States", "Canada", "United Kingdom", "Germany", "France", "Spain"}

// shipping costs by method.
var shippingCost = map[string]int64{"Standard": 500, "Express": 1500}

// needCart sends an empty cart back to the cart page.
func (s *Server) needCart(w http.ResponseWriter, r *http.Request) (cart, bool) {
	c, err := s.cart(r.Context(), sessionOf(r).id)
	if err != nil {
		s.fail(w, r, err)
		return c, false
	}
	if len(c.Lines) == 0 {
		flash(w, r, "/cart", "Your cart is empty; add something before checking out.")
		return c, false
	}
	return c, true
}

func (s *Server) shippingPage(w http.ResponseWriter, r *http.Request) {
	c, ok := s.needCart(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	sess := sessionOf(r)
	f := s.checkoutState(ctx, sess.id).Address
	if f == nil && sess.customerID != 0 {
		as, _ := s.addresses(r)
		cu, _ := s.customer(ctx, sess.customerID)
		f = map[string]string{"email": cu.Email}
		if len(as) > 0 {
			a := as[0]
			f["name"], f["street"], f["city"], f["zip"], f["country"], f["phone"] = a.Name, a.Street, a.City, a.Zip, a.Country, a.Ph
		}
	}
	s.render(w, r, "checkout_shipping", http.StatusOK, view{Title: "Checkout: shipping", Form: f, Data: map[string]any{"Cart": c, "Countries": Countries}})
}

func (s *Server) shippingPost(w http.ResponseWriter, r *http.Request) {
	c, ok := s.needCart(w, r)
	if !ok {
		return
	}
	f, errs := addressForm(r)
	f["email"] = strings.TrimSpace(r.FormValue("email"))
	if e := f["email"]; !strings.Contains(e, "@") || strings.HasPrefix(e, "@") || strings.HasSuffix(e, "@") {
		if errs == nil {
			errs = map[string]string{}
		}
		errs["email"] = "Enter a valid email address."
	}
	if f["country"] != "" && !slices.Contains(Countries, f["country"]) {
		if errs == nil {
			errs = map[string]string{}
		}
		errs["country"] = "We do not ship there."
	}
	if errs != nil {
		s.render(w, r, "checkout_shipping", http.StatusUnprocessableEntity, view{Title: "Checkout: shipping", Form: f, Errors: errs,
			Flash: "Please correct the highlighted fields.", Data: map[string]any{"Cart": c, "Countries": Countries}})
		return
	}
	st := s.checkoutState(r.Context(), sessionOf(r).id)
	st.Address = f
	s.saveCheckoutAndGo(w, r, st, "/checkout/payment")
}

func (s *Server) paymentPage(w http.ResponseWriter, r *http.Request) {
	c, ok := s.needCart(w, r)
	if !ok {
		return
	}
	st := s.checkoutState(r.Context(), sessionOf(r).id)
	if st.Address == nil {
		http.Redirect(w, r, "/checkout/shipping", http.StatusSeeOther)
		return
	}
	f := map[string]string{"method": st.Method, "payment": st.Payment}
	if f["method"] == "" {
		f["method"] = "Standard"
	}
	if f["payment"] == "" {
		f["payment"] = "Credit card"
	}
	s.render(w, r, "checkout_payment", http.StatusOK, view{Title: "Checkout: payment", Form: f, Data: map[string]any{"Cart": c}})
}

func (s *Server) paymentPost(w http.ResponseWriter, r *http.Request) {
	c, ok := s.needCart(w, r)
	if !ok {
		return
	}
	f := map[string]string{"method": r.FormValue("method"), "payment": r.FormValue("payment"), "card": strings.ReplaceAll(r.FormValue("card"), " ", "")}
	errs := map[string]string{}
	if _, ok := shippingCost[f["method"]]; !ok {
		errs["method"] = "Choose a shipping method."
	}
	switch f["payment"] {
	case "Credit card":
		if len(f["card"]) != 16 || strings.Trim(f["card"], "0123456789") != "" {
			errs["card"] = "Enter the 16 digits of your card number."
		}
	case "PayPal":
	default:
		errs["payment"] = "Choose a payment method."
	}
	if len(errs) > 0 {
		s.render(w, r, "checkout_payment", http.StatusUnprocessableEntity, view{Title: "Checkout: payment", Form: f, Errors: errs,
			Flash: "Please correct the highlighted fields.", Data: map[string]any{"Cart": c}})
		return
	}
	st := s.checkoutState(r.Context(), sessionOf(r).id)
	st.Method, st.Payment = f["method"], f["payment"]
	if len(f["card"]) == 16 {
		st.Card = f["card"][12:]
	}
	s.saveCheckoutAndGo(w, r, st, "/checkout/review")
}

func (s *Server) reviewPage(w http.ResponseWriter, r *http.Request) {
	c, ok := s.needCart(w, r)
	if !ok {
		return
	}
	st := s.checkoutState(r.Context(), sessionOf(r).id)
	if st.Address == nil || st.Method == "" {
		http.Redirect(w, r, "/checkout/shipping", http.StatusSeeOther)
		return
	}
	ship := shippingCost[st.Method]
	s.render(w, r, "checkout_review", http.StatusOK, view{Title: "Checkout: review", Data: map[string]any{
		"Cart": c, "St": st, "Shipping": ship, "Total": c.Subtotal + ship}})
}

func (s *Server) placeOrder(w http.ResponseWriter, r *http.Request) {
	c, ok := s.needCart(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	sess := sessionOf(r)
	st := s.checkoutState(ctx, sess.id)
	if st.Address == nil || st.Method == "" {
		http.Redirect(w, r, "/checkout/shipping", http.StatusSeeOther)
		return
	}
	number, err := s.createOrder(ctx, sess, c, st)
	if err != nil {
		flash(w, r, "/cart", "Could not place the order: "+err.Error()+".")
		return
	}
	http.Redirect(w, r, "/checkout/success/"+number, http.StatusSeeOther)
}

func (s *Server) createOrder(ctx context.Context, sess *session, c cart, st checkoutState) (string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var last string
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(number), '000100000') FROM orders`).Scan(&last); err != nil {
		return "", err
	}
	n, _ := strconv.Atoi(last)
	number := fmt.Sprintf("%09d", n+1)
	ship := shippingCost[st.Method]
	var cust sql.NullInt64
	if sess.customerID != 0 {
		cust = sql.NullInt64{Int64: sess.customerID, Valid: true}
	}
	a := st.Address
	res, err := tx.ExecContext(ctx, `INSERT INTO orders (number, customer_id, email, status, total_cents, shipping_cents, ship_name, street, city, zip, country, shipping_method, payment, created_at)
	  VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, number, cust, a["email"], c.Subtotal+ship, ship, a["name"], a["street"], a["city"], a["zip"], a["country"], st.Method, st.Payment, now())
	if err != nil {
		return "", err
	}
	oid, _ := res.LastInsertId()
	for _, l := range c.Lines {
		upd, err := tx.ExecContext(ctx, `UPDATE products SET stock = stock - ? WHERE id = ? AND stock >= ?`, l.Qty, l.Product.ID, l.Qty)
		if err != nil {
			return "", err
		}
		if k, _ := upd.RowsAffected(); k == 0 {
			return "", fmt.Errorf("%s is out of stock", l.Product.Name)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO order_items (order_id, product_id, sku, name, size, colour, qty, price_cents) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			oid, l.Product.ID, l.Product.SKU, l.Product.Name, l.Size, l.Colour, l.Qty, l.Product.Price); err != nil {
			return "", err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM cart_items WHERE session_id = ?`, sess.id); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET checkout = '{}' WHERE id = ?`, sess.id); err != nil {
		return "", err
	}
	return number, tx.Commit()
}

func (s *Server) successPage(w http.ResponseWriter, r *http.Request) {
	o, err := s.order(r.Context(), `WHERE o.number = ?`, r.PathValue("number"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "checkout_success", http.StatusOK, view{Title: "Thank you for your order", Data: o})
}

// saveCheckoutAndGo stores the checkout step's state and moves to the next step.
func (s *Server) saveCheckoutAndGo(w http.ResponseWriter, r *http.Request, st checkoutState, next string) {
	if err := s.saveCheckout(r.Context(), sessionOf(r).id, st); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}
