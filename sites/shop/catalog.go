package shop

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Scale is how big a generated catalog is.
type Scale string

// Scales: small is the default (a few seconds to generate, a few MiB);
// large makes a database of about 1 GiB, the state size of the hosting
// benchmark.
const (
	ScaleSmall  Scale = "small"
	ScaleMedium Scale = "medium"
	ScaleLarge  Scale = "large"
)

// GenerateOptions choose the catalog.
type GenerateOptions struct {
	Seed  uint64
	Scale Scale
}

type scaleSize struct {
	products, customers, orders, reviews int
	descWords                            int // words per product description
}

var sizes = map[Scale]scaleSize{
	ScaleSmall:  {products: 240, customers: 40, orders: 200, reviews: 700, descWords: 40},
	ScaleMedium: {products: 6000, customers: 2000, orders: 20000, reviews: 40000, descWords: 120},
	ScaleLarge:  {products: 220000, customers: 40000, orders: 400000, reviews: 1500000, descWords: 320},
}

// Epoch is the generated catalog's "now": every generated date is before
// it, so content does not depend on when it was generated.
var Epoch = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// Fixed accounts of every generated catalog (documented for task authors).
const (
	AdminUser        = "admin"
	AdminPassword    = "admin1234"
	CustomerPassword = "Password123"
)

// The category tree and the products each leaf sells.
var catalogTree = []struct {
	name   string
	leaves []leaf
}{
	{"Clothing", []leaf{
		{"T-Shirts", []string{"Crew T-Shirt", "V-Neck Tee", "Pocket Tee", "Graphic Tee"}, true, true},
		{"Jackets", []string{"Rain Jacket", "Puffer Jacket", "Denim Jacket", "Softshell Jacket"}, true, true},
		{"Dresses", []string{"Wrap Dress", "Shirt Dress", "Midi Dress", "Slip Dress"}, true, true},
	}},
	{"Shoes", []leaf{
		{"Running Shoes", []string{"Trail Runner", "Road Runner", "Racing Flat", "Tempo Trainer"}, true, true},
		{"Boots", []string{"Chelsea Boot", "Hiking Boot", "Work Boot", "Snow Boot"}, true, true},
	}},
	{"Home & Kitchen", []leaf{
		{"Cookware", []string{"Skillet", "Saucepan", "Dutch Oven", "Stock Pot"}, false, true},
		{"Bedding", []string{"Duvet Cover", "Pillowcase Set", "Fitted Sheet", "Throw Blanket"}, false, true},
		{"Coffee & Tea", []string{"Pour-Over Kettle", "French Press", "Tea Infuser", "Coffee Grinder"}, false, true},
	}},
	{"Electronics", []leaf{
		{"Headphones", []string{"Wireless Earbuds", "Over-Ear Headphones", "Sport Earphones", "Studio Monitors"}, false, true},
		{"Chargers", []string{"USB-C Charger", "Power Bank", "Wireless Charging Pad", "Car Charger"}, false, false},
	}},
	{"Outdoor", []leaf{
		{"Camping", []string{"Dome Tent", "Sleeping Bag", "Camp Stove", "Headlamp"}, false, true},
		{"Backpacks", []string{"Daypack", "Hiking Pack", "Travel Backpack", "Hydration Pack"}, false, true},
	}},
	{"Beauty", []leaf{
		{"Skincare", []string{"Face Serum", "Night Cream", "Gel Cleanser", "Mineral Sunscreen"}, false, false},
		{"Fragrance", []string{"Eau de Parfum", "Body Mist", "Solid Perfume", "Cologne"}, false, false},
	}},
}

type leaf struct {
	name            string
	nouns           []string
	sized, coloured bool
}

var (
	brands    = []string{"Alpine", "Northwind", "Harbor", "Cedar", "Lumen", "Summit", "Meadow", "Drift", "Kestrel", "Ember", "Tidal", "Granite", "Willow", "Aurora", "Fjord", "Sierra"}
	adjs      = []string{"Classic", "Lightweight", "Everyday", "Premium", "Organic", "Recycled", "Ultra", "Compact", "Heritage", "Essential", "Pro", "Soft", "Rugged", "Slim", "Deluxe", "Modern"}
	colourSet = []string{"Black", "White", "Navy", "Olive", "Red", "Grey", "Blue", "Sand", "Green", "Pink"}
	clothing  = []string{"XS", "S", "M", "L", "XL"}
	shoeSize  = []string{"7", "8", "9", "10", "11", "12"}
	firsts    = []string{"Emma", "Liam", "Olivia", "Noah", "Ava", "Elijah", "Sophia", "Lucas", "Mia", "Mateo", "Amelia", "Levi", "Harper", "Ezra", "Evelyn", "Leo", "Luna", "Kai", "Nora", "Theo", "Zoe", "Omar", "Ines", "Ravi", "Yuki", "Chen", "Aisha", "Jonas", "Priya", "Diego"}
	lasts     = []string{"Smith", "Garcia", "Kim", "Nguyen", "Müller", "Rossi", "Okafor", "Silva", "Cohen", "Patel", "Larsen", "Novak", "Dubois", "Tanaka", "Walsh", "Moreno", "Haddad", "Berg", "Costa", "Ivanova"}
	cities    = []string{"Portland|97201|United States", "Austin|78701|United States", "Toronto|M5H 2N2|Canada", "Berlin|10115|Germany", "Lyon|69001|France", "Madrid|28001|Spain", "Leeds|LS1 1UR|United Kingdom", "Denver|80202|United States"}
	streets   = []string{"Oak Street", "Maple Avenue", "Harbor Road", "Elm Lane", "Station Road", "Hill Street", "Park Avenue", "River Walk"}
	words     = strings.Fields("soft durable breathable warm light sturdy easy clean fit travel daily comfort weather water resistant stitched seams pockets adjustable strap zip cotton wool steel ceramic bamboo recycled blend tested quiet fast charge battery long lasting gentle skin scent fresh design classic modern ideal gift")
	praise    = []string{"Love it", "Great value", "Exactly as described", "Runs small", "Would buy again", "Not what I expected", "Perfect for travel", "Solid quality", "Disappointed", "Five stars"}
	statuses  = []string{"complete", "complete", "complete", "shipped", "processing", "pending", "canceled"}
	methods   = []string{"Standard", "Express"}
	payments  = []string{"Credit card", "PayPal"}
)

// Generate writes a new data directory: dir/shop.db with the seeded catalog.
// dir must not hold a database already.
func Generate(ctx context.Context, dir string, opts GenerateOptions) error {
	if opts.Scale == "" {
		opts.Scale = ScaleSmall
	}
	size, ok := sizes[opts.Scale]
	if !ok {
		return fmt.Errorf("unknown scale %q: use small, medium or large", opts.Scale)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	path := filepath.Join(dir, DBFile)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("generate: %s exists; give an empty directory", path)
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	db, err := sql.Open("sqlite", "file:"+tmp+"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)")
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("generate: schema: %w", err)
	}
	g := &gen{rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)), size: size}
	if err := g.run(ctx, db); err != nil {
		return fmt.Errorf("generate %s catalog: %w", opts.Scale, err)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	return os.Rename(tmp, path)
}

type gen struct {
	rng  *rand.Rand
	size scaleSize
	tx   *sql.Tx
}

func (g *gen) pick(list []string) string { return list[g.rng.IntN(len(list))] }

// date is a deterministic time before Epoch, up to days back.
func (g *gen) date(days int) string {
	return Epoch.Add(-time.Duration(g.rng.IntN(days*24*3600)) * time.Second).Format(time.DateTime)
}

func (g *gen) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := g.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func (g *gen) run(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	g.tx = tx
	type leafRef struct {
		id int64
		l  leaf
		cs string
	}
	var leaves []leafRef
	for _, top := range catalogTree {
		tid, err := g.exec(ctx, `INSERT INTO categories (slug, name) VALUES (?, ?)`, slugify(top.name), top.name)
		if err != nil {
			return err
		}
		for _, l := range top.leaves {
			id, err := g.exec(ctx, `INSERT INTO categories (slug, name, parent_id) VALUES (?, ?, ?)`, slugify(l.name), l.name, tid)
			if err != nil {
				return err
			}
			leaves = append(leaves, leafRef{id, l, top.name})
		}
	}
	// Products: names are unique; at large scales a model number keeps them so.
	seen := map[string]bool{}
	type prod struct {
		id     int64
		name   string
		price  int64
		sizes  []string
		colour []string
	}
	prods := make([]prod, 0, g.size.products)
	for i := 0; i < g.size.products; i++ {
		lr := leaves[i%len(leaves)]
		var name string
		for try := 0; ; try++ {
			name = g.pick(brands) + " " + g.pick(adjs) + " " + g.pick(lr.l.nouns)
			if try > 20 {
				name += fmt.Sprintf(" %d", 100+i)
			}
			if !seen[name] {
				break
			}
		}
		seen[name] = true
		price := int64(500+g.rng.IntN(30000)) / 5 * 5 // cents, multiples of 5
		price = price - price%100 + 99                // shop prices end in .99
		var sz, cl []string
		if lr.l.sized {
			if lr.cs == "Shoes" {
				sz = shoeSize
			} else {
				sz = clothing
			}
		}
		if lr.l.coloured {
			start := g.rng.IntN(len(colourSet))
			for k := 0; k < 3; k++ {
				cl = append(cl, colourSet[(start+k*3)%len(colourSet)])
			}
		}
		desc := make([]string, g.size.descWords)
		for k := range desc {
			desc[k] = g.pick(words)
		}
		d := strings.Join(desc, " ")
		d = strings.ToUpper(d[:1]) + d[1:] + "."
		sku := fmt.Sprintf("%s-%04d", skuPrefix(lr.l.name), 1000+i)
		status := "enabled"
		if g.rng.IntN(25) == 0 {
			status = "disabled"
		}
		id, err := g.exec(ctx, `INSERT INTO products (sku, name, slug, category_id, price_cents, stock, status, description, sizes, colours, created_at)
		  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, sku, name, slugify(name)+"-"+strings.ToLower(sku), lr.id, price,
			g.rng.IntN(120), status, d, strings.Join(sz, ","), strings.Join(cl, ","), g.date(700))
		if err != nil {
			return err
		}
		prods = append(prods, prod{id, name, price, sz, cl})
	}
	if _, err := g.exec(ctx, `INSERT INTO admins (username, password_hash) VALUES (?, ?)`, AdminUser, hashPassword(AdminPassword)); err != nil {
		return err
	}
	type cust struct {
		id          int64
		first, last string
		city        []string
		street      string
	}
	custs := make([]cust, 0, g.size.customers)
	emails := map[string]bool{}
	for i := 0; i < g.size.customers; i++ {
		f, l := g.pick(firsts), g.pick(lasts)
		email := strings.ToLower(slugify(f) + "." + slugify(l) + "@example.com")
		for k := 2; emails[email]; k++ {
			email = strings.ToLower(fmt.Sprintf("%s.%s%d@example.com", slugify(f), slugify(l), k))
		}
		emails[email] = true
		id, err := g.exec(ctx, `INSERT INTO customers (email, password_hash, first_name, last_name, created_at) VALUES (?, ?, ?, ?, ?)`,
			email, hashPassword(CustomerPassword), f, l, g.date(900))
		if err != nil {
			return err
		}
		c := cust{id, f, l, strings.Split(g.pick(cities), "|"), fmt.Sprintf("%d %s", 1+g.rng.IntN(400), g.pick(streets))}
		if _, err := g.exec(ctx, `INSERT INTO addresses (customer_id, name, street, city, zip, country, phone) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, f+" "+l, c.street, c.city[0], c.city[1], c.city[2], fmt.Sprintf("555-%04d", g.rng.IntN(10000))); err != nil {
			return err
		}
		custs = append(custs, c)
	}
	// Orders, numbered in date order like a real shop's increment ids.
	dates := make([]string, g.size.orders)
	for i := range dates {
		dates[i] = g.date(500)
	}
	slices.Sort(dates)
	for i := 0; i < g.size.orders; i++ {
		c := custs[g.rng.IntN(len(custs))]
		n := 1 + g.rng.IntN(3)
		var total int64
		type line struct {
			p         prod
			qty       int
			size, col string
		}
		lines := make([]line, n)
		for k := range lines {
			p := prods[g.rng.IntN(len(prods))]
			ln := line{p: p, qty: 1 + g.rng.IntN(2)}
			if len(p.sizes) > 0 {
				ln.size = g.pick(p.sizes)
			}
			if len(p.colour) > 0 {
				ln.col = g.pick(p.colour)
			}
			lines[k] = ln
			total += p.price * int64(ln.qty)
		}
		method := g.pick(methods)
		ship := int64(500)
		if method == "Express" {
			ship = 1500
		}
		oid, err := g.exec(ctx, `INSERT INTO orders (number, customer_id, email, status, total_cents, shipping_cents, ship_name, street, city, zip, country, shipping_method, payment, created_at)
		  SELECT ?, ?, email, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM customers WHERE id = ?`,
			fmt.Sprintf("%09d", 100001+i), c.id, g.pick(statuses), total+ship, ship, c.first+" "+c.last, c.street, c.city[0], c.city[1], c.city[2],
			method, g.pick(payments), dates[i], c.id)
		if err != nil {
			return err
		}
		for _, ln := range lines {
			if _, err := g.exec(ctx, `INSERT INTO order_items (order_id, product_id, sku, name, size, colour, qty, price_cents)
			  SELECT ?, id, sku, name, ?, ?, ?, price_cents FROM products WHERE id = ?`, oid, ln.size, ln.col, ln.qty, ln.p.id); err != nil {
				return err
			}
		}
	}
	rdates := make([]string, g.size.reviews)
	for i := range rdates {
		rdates[i] = g.date(600)
	}
	slices.Sort(rdates)
	for i := 0; i < g.size.reviews; i++ {
		p := prods[g.rng.IntN(len(prods))]
		c := custs[g.rng.IntN(len(custs))]
		rating := 1 + g.rng.IntN(5)
		if g.rng.IntN(3) > 0 && rating < 4 {
			rating += 2 // reviews lean positive, as real ones do
		}
		status := "approved"
		if g.rng.IntN(12) == 0 {
			status = "pending"
		}
		body := make([]string, 8+g.rng.IntN(16))
		for k := range body {
			body[k] = g.pick(words)
		}
		if _, err := g.exec(ctx, `INSERT INTO reviews (product_id, customer_id, nickname, rating, title, body, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			p.id, c.id, c.first, rating, g.pick(praise), strings.Join(body, " ")+".", status, rdates[i]); err != nil {
			return err
		}
	}
	for _, pg := range []struct{ slug, title, body string }{
		{"about-us", "About us", "We are a small independent shop selling everyday goods since 2019."},
		{"shipping", "Shipping policy", "Standard shipping costs $5.00 and takes 3-5 business days. Express shipping costs $15.00 and takes 1-2 business days."},
		{"returns", "Returns", "Unworn items can be returned within 30 days of delivery for a full refund."},
	} {
		if _, err := g.exec(ctx, `INSERT INTO pages (slug, title, body, published, updated_at) VALUES (?, ?, ?, 1, ?)`, pg.slug, pg.title, pg.body, Epoch.Format(time.DateTime)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// slugify turns a name into a URL slug.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case r == 'ü':
			b.WriteString("u")
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// skuPrefix is the first three letters of a category name, upper case.
func skuPrefix(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' && b.Len() < 3 {
			b.WriteRune(r)
		}
	}
	return b.String()
}
