// Package taskgen writes the bundled shop's task sets from the seed-1
// catalog: every answer, URL and state check comes from the generated
// database, so the tasks hold on every machine. `go generate ./sites/shop`
// rewrites sites/shop/tasks/*.json; a test checks they are current.
package taskgen

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	_ "modernc.org/sqlite"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/sites/shop"
)

// Task is one bundled task in the task file schema (docs/tasks.md).
type Task struct {
	ID           int            `json:"task_id"`
	Sites        []string       `json:"sites"`
	Category     string         `json:"category"`
	Intent       string         `json:"intent"`
	StartURL     string         `json:"start_url"`
	RequireLogin bool           `json:"require_login"`
	Login        map[string]any `json:"login,omitempty"`
	Eval         map[string]any `json:"eval"`
	// MayChange names what the task changes beyond the rows its state
	// checks read: the stock an order takes or a cancel puts back.
	MayChange []hosting.StateRows `json:"may_change,omitempty"`
	Oracle    []string            `json:"oracle"`
	Wrong     []string            `json:"wrong"`
}

// Generate builds both task sets from a fresh seed-1 small catalog.
func Generate(ctx context.Context, tmp string) (shopping, cms []Task, err error) {
	dir := filepath.Join(tmp, "catalog")
	if err := shop.Generate(ctx, dir, shop.GenerateOptions{Seed: 1, Scale: shop.ScaleSmall}); err != nil {
		return nil, nil, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, shop.DBFile)+"?mode=ro")
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	g := &gen{db: db}
	shopping = g.storefront()
	cms = g.admin()
	return shopping, cms, g.err
}

// Write generates and writes the task files into dir.
func Write(ctx context.Context, dir string) error {
	tmp, err := os.MkdirTemp("", "taskgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	shopping, cms, err := Generate(ctx, tmp)
	if err != nil {
		return err
	}
	for name, ts := range map[string][]Task{"shopping.json": shopping, "cms.json": cms} {
		b, err := Marshal(ts)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Marshal writes tasks as the committed files hold them.
func Marshal(ts []Task) ([]byte, error) {
	b, err := json.MarshalIndent(ts, "", "  ")
	return append(b, '\n'), err
}

type gen struct {
	db  *sql.DB
	err error
}

type product struct {
	id                    int64
	sku, name, slug       string
	price, stock          int64
	sizes, colours        []string
	reviews               int
	cat, catSlug, topSlug string
}

func (g *gen) products(where string, args ...any) []product {
	if g.err != nil {
		return nil
	}
	rows, err := g.db.Query(`SELECT p.id, p.sku, p.name, p.slug, p.price_cents, p.stock, p.sizes, p.colours,
	  (SELECT COUNT(*) FROM reviews r WHERE r.product_id = p.id AND r.status = 'approved'), c.name, c.slug, t.slug
	  FROM products p JOIN categories c ON c.id = p.category_id JOIN categories t ON t.id = c.parent_id `+where, args...)
	if err != nil {
		g.err = err
		return nil
	}
	defer rows.Close()
	var out []product
	for rows.Next() {
		var p product
		var sz, cl string
		if err := rows.Scan(&p.id, &p.sku, &p.name, &p.slug, &p.price, &p.stock, &sz, &cl, &p.reviews, &p.cat, &p.catSlug, &p.topSlug); err != nil {
			g.err = err
			return nil
		}
		if sz != "" {
			p.sizes = strings.Split(sz, ",")
		}
		if cl != "" {
			p.colours = strings.Split(cl, ",")
		}
		out = append(out, p)
	}
	return out
}

func (g *gen) value(q string, args ...any) string {
	var v sql.NullString
	if g.err == nil {
		if err := g.db.QueryRow(q, args...).Scan(&v); err != nil {
			g.err = fmt.Errorf("%s: %w", q, err)
		}
	}
	return v.String
}

// ID is the semantic id the observation gives an element named name
// (inject/parser.js: slug of the name, at most 32 characters on a word
// boundary), under scope.
func ID(scope, name string) string {
	var words []string
	var cur strings.Builder
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			cur.WriteRune(r)
		} else if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	out := ""
	for _, w := range words {
		next := w
		if out != "" {
			next = out + "-" + w
		}
		if len(next) > 32 && out != "" {
			break
		}
		out = next
		if len(out) > 32 {
			out = out[:32]
		}
	}
	if scope != "" {
		return scope + "." + out
	}
	return out
}

// stockOf lets a task change the stock of the products skus.
func stockOf(skus ...string) []hosting.StateRows {
	var out []hosting.StateRows
	for _, sku := range skus {
		out = append(out, hosting.StateRows{Table: "products", Where: map[string]any{"sku": sku}, Columns: []string{"stock"}})
	}
	return out
}

// orderSKUs are the products of order number, whose stock its cancel puts
// back.
func (g *gen) orderSKUs(number string) []string {
	return g.column(`SELECT DISTINCT i.sku FROM order_items i JOIN orders o ON o.id = i.order_id WHERE o.number = ? ORDER BY i.sku`, number)
}

// column is the first column of query's rows, as text (nil once g has
// failed; a failure is kept in g.err).
func (g *gen) column(query string, args ...any) []string {
	if g.err != nil {
		return nil
	}
	rows, err := g.db.Query(query, args...)
	if err != nil {
		g.err = err
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			g.err = err
			return nil
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		g.err = err
	}
	return out
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func click(id string) string          { return "click(" + q(id) + ")" }
func fill(id, text string) string     { return "fill(" + q(id) + ", " + q(text) + ")" }
func selectOpt(id, opt string) string { return "select_option(" + q(id) + ", " + q(opt) + ")" }
func hover(id string) string          { return "hover(" + q(id) + ")" }
func press(id, key string) string     { return "press(" + q(id) + ", " + q(key) + ")" }
func stop(answer string) string       { return "stop(" + q(answer) + ")" }

// answer is an answer task's eval: the answer is a value of type typ
// (tasks.AnswerTypes), compared with ref as a value, so an answer listing
// candidates earns 0.
func answer(typ, ref string) map[string]any {
	return map[string]any{"eval_types": []string{"string_match"}, "answer_type": typ, "reference_answers": map[string]any{"exact_match": ref}}
}
func urlMatch(u string) map[string]any {
	return map[string]any{"eval_types": []string{"url_match"}, "reference_url": u, "url_note": "GOLD in PRED"}
}
func state(sql, expect string, args ...any) map[string]any {
	sql = strings.Join(strings.Fields(sql), " ")
	return map[string]any{"eval_types": []string{"state"}, "state": []map[string]any{{"sql": sql, "args": args, "expect": expect}}}
}

// search finds a product by name from any storefront page and opens it.
func search(p product) []string {
	return []string{fill("search.search-products", p.name), click("search.search"), click(ID("", p.name))}
}

func (g *gen) customers(n int) []string {
	return g.column(`SELECT email FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) ORDER BY id LIMIT ?`, n)
}

const (
	S  = "__SHOPPING__"
	SA = "__SHOPPING_ADMIN__"
)

func (g *gen) storefront() []Task {
	var ts []Task
	add := func(t Task) {
		t.ID = len(ts)
		t.Sites = []string{"shopping"}
		if t.StartURL == "" {
			t.StartURL = S + "/"
		}
		t.RequireLogin = t.Login != nil
		ts = append(ts, t)
	}
	// Names unique enough to find by search: no other product contains them.
	pick := func(where string, n, skip int) []product {
		all := g.products(`WHERE p.status = 'enabled' AND `+where+` AND (SELECT COUNT(*) FROM products o WHERE instr(o.name, p.name) > 0) = 1 ORDER BY p.id LIMIT ? OFFSET ?`, n, skip)
		return all
	}
	for _, p := range pick("1", 5, 0) {
		add(Task{Category: "information", Intent: "What is the price of the " + p.name + "?", Eval: answer("currency", shop.Money(p.price)),
			Oracle: append(search(p), stop(shop.Money(p.price))), Wrong: append(search(p), stop(shop.Money(p.price+100)))})
	}
	for _, p := range pick("(SELECT COUNT(*) FROM reviews r WHERE r.product_id = p.id AND r.status = 'approved') BETWEEN 2 AND 9", 5, 0) {
		n := strconv.Itoa(p.reviews)
		add(Task{Category: "information", Intent: "How many reviews does the " + p.name + " have?", Eval: answer("number", n),
			Oracle: append(search(p), stop(n)), Wrong: append(search(p), stop(strconv.Itoa(p.reviews+1)))})
	}
	for _, p := range pick("1", 5, 20) {
		add(Task{Category: "information", Intent: "What is the SKU of the " + p.name + "?", Eval: answer("string", p.sku),
			Oracle: append(search(p), stop(p.sku)), Wrong: append(search(p), stop("SKU-0000"))})
	}
	for _, email := range g.customers(5) {
		total := g.value(`SELECT o.total_cents FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.email = ? ORDER BY o.created_at DESC, o.id DESC LIMIT 1`, email)
		cents, _ := strconv.ParseInt(total, 10, 64)
		add(Task{Category: "information", Intent: "What is the grand total of my most recent order?", Login: map[string]any{"as": "customer", "email": email},
			Eval: answer("currency", shop.Money(cents)), Oracle: []string{click("my-account"), stop(shop.Money(cents))}, Wrong: []string{click("my-account"), stop("$0.00")}})
	}
	type leaf struct{ top, topName, slug, name string }
	leaves := []leaf{{"clothing", "Clothing", "t-shirts", "T-Shirts"}, {"shoes", "Shoes", "boots", "Boots"}, {"home-kitchen", "Home & Kitchen", "cookware", "Cookware"},
		{"electronics", "Electronics", "headphones", "Headphones"}, {"outdoor", "Outdoor", "camping", "Camping"}}
	for _, l := range leaves {
		add(Task{Category: "navigation", Intent: "Show the " + l.name + " category sorted by price from low to high.", Eval: urlMatch(S + "/category/" + l.slug + "?sort=price_asc"),
			Oracle: []string{hover("categories." + l.top), click("categories." + l.slug), selectOpt("filter.sort-by", "Price: low to high"), click("filter.apply"), stop("")},
			Wrong:  []string{hover("categories." + l.top), click("categories." + l.slug), stop("")}})
	}
	for _, term := range []string{"alpine", "kestrel", "summit", "tidal", "granite"} {
		add(Task{Category: "navigation", Intent: "Search the shop for \"" + term + "\".", Eval: urlMatch(S + "/search?q=" + term),
			Oracle: []string{fill("search.search-products", term), press("search.search-products", "Enter"), stop("")},
			Wrong:  []string{fill("search.search-products", term+"s"), press("search.search-products", "Enter"), stop("")}})
	}
	for _, l := range leaves {
		add(Task{Category: "navigation", Intent: "Open the second page of the " + l.topName + " category.", Eval: urlMatch(S + "/category/" + l.top + "?page=2"),
			Oracle: []string{click("categories." + l.top + "-2"), click("pages.2"), stop("")},
			Wrong:  []string{click("categories." + l.top + "-2"), stop("")}})
	}
	sized := pick("p.sizes != '' AND p.colours != '' AND p.stock >= 3", 10, 0)
	for i, p := range sized {
		size, colour := p.sizes[(i+1)%len(p.sizes)], p.colours[i%len(p.colours)]
		qty := 1 + i%2
		steps := append(search(p), selectOpt("add-to-cart.size", size), selectOpt("add-to-cart.colour", colour))
		intent := fmt.Sprintf("Add the %s in size %s and colour %s to the cart.", p.name, size, colour)
		if qty > 1 {
			intent = fmt.Sprintf("Add %d of the %s in size %s and colour %s to the cart.", qty, p.name, size, colour)
			steps = append(steps, fill("add-to-cart.quantity", strconv.Itoa(qty)))
		}
		add(Task{Category: "state", Intent: intent,
			Eval: state(`SELECT COALESCE(SUM(ci.qty), 0) FROM cart_items ci JOIN products p ON p.id = ci.product_id WHERE p.sku = ? AND ci.size = ? AND ci.colour = ?`,
				strconv.Itoa(qty), p.sku, size, colour),
			Oracle: append(steps, click("add-to-cart.add-to-cart"), stop("")),
			Wrong:  append(append(search(p), selectOpt("add-to-cart.size", p.sizes[(i+2)%len(p.sizes)]), selectOpt("add-to-cart.colour", colour)), click("add-to-cart.add-to-cart"), stop(""))})
	}
	custs := g.customers(15)
	for i, p := range pick("1", 5, 40) {
		email := custs[i]
		add(Task{Category: "state", Intent: "Add the " + p.name + " to my wishlist.", Login: map[string]any{"as": "customer", "email": email},
			Eval:   state(`SELECT COUNT(*) FROM wishlist w JOIN customers c ON c.id = w.customer_id JOIN products p ON p.id = w.product_id WHERE c.email = ? AND p.sku = ?`, "1", email, p.sku),
			Oracle: append(search(p), click("wishlist.add-to-wishlist"), stop("")), Wrong: append(search(p), stop(""))})
	}
	titles := []string{"Great fit", "Broke quickly", "Just okay", "Worth every penny", "Not for me"}
	for i, p := range pick("1", 5, 60) {
		email, rating, title := custs[5+i], 5-i, titles[i]
		body := "My honest opinion after a month of use."
		f := "write-review.write-a-review"
		stars := strconv.Itoa(rating) + " stars"
		if rating == 1 {
			stars = "1 star"
		}
		add(Task{Category: "state", Intent: fmt.Sprintf("Write a %d-star review of the %s titled \"%s\" with the text \"%s\"", rating, p.name, title, body),
			Login: map[string]any{"as": "customer", "email": email},
			Eval: state(`SELECT COUNT(*) FROM reviews r JOIN customers c ON c.id = r.customer_id JOIN products p ON p.id = r.product_id
			  WHERE c.email = ? AND p.sku = ? AND r.rating = ? AND r.title = ? AND r.body = ?`, "1", email, p.sku, rating, title, body),
			Oracle: append(search(p), selectOpt(f+".rating", stars), fill(f+".title", title), fill(f+".review", body), click(f+".submit-review"), stop("")),
			Wrong:  append(search(p), selectOpt(f+".rating", stars), fill(f+".title", title), stop(""))})
	}
	for i, p := range pick("p.sizes != '' AND p.colours != '' AND p.stock >= 3", 5, 10) {
		email := custs[10+i]
		size, colour := p.sizes[0], p.colours[len(p.colours)-1]
		add(Task{Category: "state", Intent: fmt.Sprintf("Buy one %s in size %s and colour %s, with express shipping, paid with PayPal, shipped to my saved address.", p.name, size, colour),
			Login: map[string]any{"as": "customer", "email": email},
			Eval: state(`SELECT COUNT(*) FROM orders o JOIN order_items i ON i.order_id = o.id JOIN customers c ON c.id = o.customer_id
			  WHERE c.email = ? AND i.sku = ? AND i.size = ? AND i.colour = ? AND i.qty = 1 AND o.shipping_method = 'Express' AND o.payment = 'PayPal'`, "1", email, p.sku, size, colour),
			MayChange: stockOf(p.sku),
			Oracle: append(search(p), selectOpt("add-to-cart.size", size), selectOpt("add-to-cart.colour", colour), click("add-to-cart.add-to-cart"),
				click("cart"), click("proceed-to-checkout"), click("shipping-address.continue-to-payment"),
				click("payment.shipping-method.express-15-00-1-2-days"), click("payment.payment-method.paypal"), click("payment.continue-to-review"),
				click("place-order.place-order"), stop("")),
			Wrong: append(search(p), selectOpt("add-to-cart.size", size), selectOpt("add-to-cart.colour", colour), click("add-to-cart.add-to-cart"),
				click("cart"), click("proceed-to-checkout"), click("shipping-address.continue-to-payment"), click("payment.payment-method.paypal"),
				click("payment.continue-to-review"), click("place-order.place-order"), stop(""))})
	}
	return ts
}

func (g *gen) admin() []Task {
	var ts []Task
	add := func(t Task) {
		t.ID = len(ts)
		t.Sites = []string{"shopping_admin"}
		t.StartURL = SA + "/admin"
		t.Login = map[string]any{"as": "admin"}
		t.RequireLogin = true
		ts = append(ts, t)
	}
	find := func(sku string) []string {
		return []string{click("admin.products"), fill("find-products.search-by-name-or-sku", sku), click("find-products.search")}
	}
	edit := func(sku string) []string { return append(find(sku), click(ID("", "Edit "+sku))) }
	ps := g.products(`WHERE p.id % 7 = 3 ORDER BY p.id LIMIT 25`)
	if len(ps) < 25 {
		g.err = fmt.Errorf("taskgen: want 25 products, got %d", len(ps))
		return nil
	}
	for _, p := range ps[:5] {
		n := strconv.FormatInt(p.stock, 10)
		add(Task{Category: "information", Intent: "How many units of SKU " + p.sku + " are in stock?", Eval: answer("number", n),
			Oracle: append(find(p.sku), stop(n)), Wrong: append(find(p.sku), stop(strconv.FormatInt(p.stock+7, 10)))})
	}
	type order struct{ number, name, status string }
	orders := func(status string, n int) []order {
		rows, err := g.db.Query(`SELECT o.number, c.first_name || ' ' || c.last_name, o.status FROM orders o JOIN customers c ON c.id = o.customer_id
		  WHERE o.status = ? OR ? = '' ORDER BY o.id LIMIT ?`, status, status, n)
		if err != nil {
			g.err = err
			return nil
		}
		defer rows.Close()
		var out []order
		for rows.Next() {
			var o order
			_ = rows.Scan(&o.number, &o.name, &o.status)
			out = append(out, o)
		}
		return out
	}
	view := func(number string) []string {
		return []string{click("admin.orders"), fill("find-orders.order-number-name-or-email", number), click("find-orders.filter"), click("view-order-" + number)}
	}
	for _, o := range orders("complete", 5) {
		add(Task{Category: "information", Intent: "Who placed order #" + o.number + "?", Eval: answer("string", o.name),
			Oracle: append(view(o.number), stop(o.name)), Wrong: append(view(o.number), stop("Nobody"))})
	}
	for _, st := range shop.OrderStatuses {
		n := g.value(`SELECT COUNT(*) FROM orders WHERE status = ?`, st)
		label := strings.ToUpper(st[:1]) + st[1:]
		add(Task{Category: "information", Intent: "How many orders have the status " + st + "?", Eval: answer("number", n),
			Oracle: []string{click("admin.orders"), selectOpt("find-orders.status", label), click("find-orders.filter"), stop(n)},
			Wrong:  []string{click("admin.orders"), stop("1000")}})
	}
	for i, p := range ps[5:10] {
		price := fmt.Sprintf("%d.99", p.price/100+5+int64(i))
		cents := strconv.FormatInt((p.price/100+5+int64(i))*100+99, 10)
		add(Task{Category: "state", Intent: fmt.Sprintf("Change the price of %s (SKU %s) to $%s.", p.name, p.sku, price),
			Eval:   state(`SELECT price_cents FROM products WHERE sku = ?`, cents, p.sku),
			Oracle: append(edit(p.sku), fill("product.price", price), click("product.save-product"), stop("")),
			Wrong:  append(edit(p.sku), fill("product.price", price), stop(""))})
	}
	for i, p := range ps[10:15] {
		n := strconv.Itoa(200 + 10*i)
		add(Task{Category: "state", Intent: fmt.Sprintf("Set the stock of SKU %s to %s units.", p.sku, n),
			Eval:   state(`SELECT stock FROM products WHERE sku = ?`, n, p.sku),
			Oracle: append(edit(p.sku), fill("product.stock", n), click("product.save-product"), stop("")),
			Wrong:  append(edit(p.sku), fill("product.stock", n+"0"), click("product.save-product"), stop(""))})
	}
	enabled := g.products(`WHERE p.status = 'enabled' AND p.id % 7 = 5 ORDER BY p.id LIMIT 5`)
	for _, p := range enabled {
		add(Task{Category: "state", Intent: "Disable the product " + p.name + " so it is no longer sold.",
			Eval:   state(`SELECT status FROM products WHERE sku = ?`, "disabled", p.sku),
			Oracle: append(edit(p.sku), selectOpt("product.status", "Disabled"), click("product.save-product"), stop("")),
			Wrong:  append(edit(p.sku), click("product.save-product"), stop(""))})
	}
	for _, o := range orders("processing", 5) {
		add(Task{Category: "state", Intent: "Mark order #" + o.number + " as shipped.",
			Eval:   state(`SELECT status FROM orders WHERE number = ?`, "shipped", o.number),
			Oracle: append(view(o.number), selectOpt("order-status.status", "Shipped"), click("order-status.update-status"), stop("")),
			Wrong:  append(view(o.number), selectOpt("order-status.status", "Complete"), click("order-status.update-status"), stop(""))})
	}
	for _, o := range orders("pending", 2) {
		add(Task{Category: "state", Intent: "Cancel order #" + o.number + ".",
			Eval:      state(`SELECT status FROM orders WHERE number = ?`, "canceled", o.number),
			MayChange: stockOf(g.orderSKUs(o.number)...),
			Oracle:    append(view(o.number), click("cancel-order.cancel-order"), stop("")),
			Wrong:     append(view(o.number), stop(""))})
	}
	rows, err := g.db.Query(`SELECT r.id, r.title, r.nickname, p.name FROM reviews r JOIN products p ON p.id = r.product_id WHERE r.status = 'pending' ORDER BY r.created_at DESC, r.id DESC LIMIT 3`)
	if err != nil {
		g.err = err
		return nil
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var title, nick, name string
		_ = rows.Scan(&id, &title, &nick, &name)
		rid := strconv.FormatInt(id, 10)
		add(Task{Category: "state", Intent: fmt.Sprintf("Approve the pending review \"%s\" that %s wrote about the %s.", title, nick, name),
			Eval:   state(`SELECT status FROM reviews WHERE id = ?`, "approved", id),
			Oracle: []string{click("admin.reviews"), click("review-" + rid + ".approve"), stop("")},
			Wrong:  []string{click("admin.reviews"), click("review-" + rid + ".reject"), stop("")}})
	}
	return ts
}
