package shop

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: static binaries
)

// DBFile is the database's name inside a data directory.
const DBFile = "shop.db"

const schema = `
CREATE TABLE categories (id INTEGER PRIMARY KEY, slug TEXT UNIQUE NOT NULL, name TEXT NOT NULL, parent_id INTEGER REFERENCES categories(id));
CREATE TABLE products (
  id INTEGER PRIMARY KEY, sku TEXT UNIQUE NOT NULL, name TEXT NOT NULL, slug TEXT UNIQUE NOT NULL,
  category_id INTEGER NOT NULL REFERENCES categories(id), price_cents INTEGER NOT NULL, stock INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'enabled', description TEXT NOT NULL, sizes TEXT NOT NULL DEFAULT '',
  colours TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL);
CREATE INDEX products_category ON products(category_id);
CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL,
  first_name TEXT NOT NULL, last_name TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE addresses (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
  name TEXT NOT NULL, street TEXT NOT NULL, city TEXT NOT NULL, zip TEXT NOT NULL, country TEXT NOT NULL, phone TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, number TEXT UNIQUE NOT NULL, customer_id INTEGER REFERENCES customers(id),
  email TEXT NOT NULL, status TEXT NOT NULL, total_cents INTEGER NOT NULL, shipping_cents INTEGER NOT NULL,
  ship_name TEXT NOT NULL, street TEXT NOT NULL, city TEXT NOT NULL, zip TEXT NOT NULL, country TEXT NOT NULL,
  shipping_method TEXT NOT NULL, payment TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX orders_customer ON orders(customer_id);
CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders(id),
  product_id INTEGER NOT NULL REFERENCES products(id), sku TEXT NOT NULL, name TEXT NOT NULL,
  size TEXT NOT NULL DEFAULT '', colour TEXT NOT NULL DEFAULT '', qty INTEGER NOT NULL, price_cents INTEGER NOT NULL);
CREATE INDEX order_items_order ON order_items(order_id);
CREATE TABLE reviews (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id),
  customer_id INTEGER REFERENCES customers(id), nickname TEXT NOT NULL, rating INTEGER NOT NULL,
  title TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX reviews_product ON reviews(product_id);
CREATE TABLE wishlist (customer_id INTEGER NOT NULL, product_id INTEGER NOT NULL, added_at TEXT NOT NULL,
  PRIMARY KEY (customer_id, product_id));
CREATE TABLE admins (id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL);
CREATE TABLE sessions (id TEXT PRIMARY KEY, customer_id INTEGER, admin_id INTEGER, checkout TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL);
CREATE TABLE cart_items (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, product_id INTEGER NOT NULL,
  size TEXT NOT NULL DEFAULT '', colour TEXT NOT NULL DEFAULT '', qty INTEGER NOT NULL);
CREATE TABLE pages (id INTEGER PRIMARY KEY, slug TEXT UNIQUE NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
  published INTEGER NOT NULL DEFAULT 1, updated_at TEXT NOT NULL);
CREATE TABLE tokens (token TEXT PRIMARY KEY, admin_id INTEGER NOT NULL);
`

// openDB opens the shop database in dir. readOnly opens it for queries
// only (the state evaluator's connection).
func openDB(dir string, readOnly bool) (*sql.DB, error) {
	path := filepath.Join(dir, DBFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no shop database in %s (make one with `webserv shop generate --data %s`): %w", dir, dir, err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	if readOnly {
		dsn = "file:" + path + "?mode=ro&_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !readOnly {
		db.SetMaxOpenConns(1) // one writer; SQLite serialises writes anyway
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// hashPassword is the stored form of a password.
func hashPassword(p string) string {
	sum := sha256.Sum256([]byte("webserv-shop:" + p))
	return hex.EncodeToString(sum[:])
}

// Money formats cents as "$12.34".
func Money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}

// parseMoney reads "12.34", "$12.34" or "12" as cents.
func parseMoney(s string) (int64, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "$")
	if s == "" {
		return 0, errors.New("empty")
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 2 {
		return 0, fmt.Errorf("%q has more than 2 decimals", s)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	var w, f int64
	if _, err := fmt.Sscanf(whole, "%d", &w); err != nil || w < 0 {
		return 0, fmt.Errorf("%q is not an amount", s)
	}
	if _, err := fmt.Sscanf(frac, "%d", &f); err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not an amount", s)
	}
	return w*100 + f, nil
}

// Product is a catalog product.
type Product struct {
	ID          int64
	SKU, Name   string
	Slug        string
	CategoryID  int64
	Category    string
	CatSlug     string
	Price       int64
	Stock       int64
	Status      string
	Description string
	Sizes       []string
	Colours     []string
	Rating      float64
	Reviews     int
}

// PriceText is the product's price as shown.
func (p Product) PriceText() string { return Money(p.Price) }

const productCols = `p.id, p.sku, p.name, p.slug, p.category_id, c.name, c.slug, p.price_cents, p.stock, p.status, p.description, p.sizes, p.colours,
  COALESCE((SELECT AVG(rating) FROM reviews r WHERE r.product_id = p.id AND r.status = 'approved'), 0),
  (SELECT COUNT(*) FROM reviews r WHERE r.product_id = p.id AND r.status = 'approved')`

func scanProduct(row interface{ Scan(...any) error }) (Product, error) {
	var p Product
	var sizes, colours string
	err := row.Scan(&p.ID, &p.SKU, &p.Name, &p.Slug, &p.CategoryID, &p.Category, &p.CatSlug, &p.Price, &p.Stock, &p.Status,
		&p.Description, &sizes, &colours, &p.Rating, &p.Reviews)
	p.Sizes, p.Colours = splitList(sizes), splitList(colours)
	return p, err
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (s *Server) products(ctx context.Context, where string, args ...any) ([]Product, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+productCols+` FROM products p JOIN categories c ON c.id = p.category_id `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Product
	for rows.Next() {
		p, err := scanProduct(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (s *Server) product(ctx context.Context, where string, args ...any) (Product, error) {
	ps, err := s.products(ctx, where+" LIMIT 1", args...)
	if err != nil {
		return Product{}, err
	}
	if len(ps) == 0 {
		return Product{}, sql.ErrNoRows
	}
	return ps[0], nil
}

// Category is a catalog category.
type Category struct {
	ID       int64
	Slug     string
	Name     string
	ParentID int64
	Children []Category
}

func (s *Server) categories(ctx context.Context) ([]Category, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, slug, name, COALESCE(parent_id, 0) FROM categories ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []Category
	for rows.Next() {
		var c Category
		if err := rows.Scan(&c.ID, &c.Slug, &c.Name, &c.ParentID); err != nil {
			return nil, err
		}
		all = append(all, c)
	}
	var top []Category
	for _, c := range all {
		if c.ParentID == 0 {
			for _, k := range all {
				if k.ParentID == c.ID {
					c.Children = append(c.Children, k)
				}
			}
			top = append(top, c)
		}
	}
	return top, rows.Err()
}

// Order is a placed order.
type Order struct {
	ID         int64
	Number     string
	CustomerID int64
	Customer   string
	Email      string
	Status     string
	Total      int64
	Shipping   int64
	ShipName   string
	Street     string
	City       string
	Zip        string
	Country    string
	Method     string
	Payment    string
	Created    string
	Items      []OrderItem
}

// OrderItem is a line of an order.
type OrderItem struct {
	SKU, Name, Size, Colour string
	Qty                     int64
	Price                   int64
}

const orderCols = `o.id, o.number, COALESCE(o.customer_id, 0), COALESCE(cu.first_name || ' ' || cu.last_name, o.ship_name), o.email, o.status,
  o.total_cents, o.shipping_cents, o.ship_name, o.street, o.city, o.zip, o.country, o.shipping_method, o.payment, o.created_at`

func (s *Server) orders(ctx context.Context, where string, args ...any) ([]Order, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+orderCols+` FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Order
	for rows.Next() {
		var o Order
		if err := rows.Scan(&o.ID, &o.Number, &o.CustomerID, &o.Customer, &o.Email, &o.Status, &o.Total, &o.Shipping, &o.ShipName,
			&o.Street, &o.City, &o.Zip, &o.Country, &o.Method, &o.Payment, &o.Created); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

func (s *Server) order(ctx context.Context, where string, args ...any) (Order, error) {
	found, err := s.orders(ctx, where+" LIMIT 1", args...)
	if err != nil {
		return Order{}, err
	}
	if len(found) == 0 {
		return Order{}, sql.ErrNoRows
	}
	o := found[0]
	rows, err := s.db.QueryContext(ctx, `SELECT sku, name, size, colour, qty, price_cents FROM order_items WHERE order_id = ? ORDER BY id`, o.ID)
	if err != nil {
		return o, err
	}
	defer rows.Close()
	for rows.Next() {
		var it OrderItem
		if err := rows.Scan(&it.SKU, &it.Name, &it.Size, &it.Colour, &it.Qty, &it.Price); err != nil {
			return o, err
		}
		o.Items = append(o.Items, it)
	}
	return o, rows.Err()
}

// Review is a product review.
type Review struct {
	ID        int64
	ProductID int64
	Product   string
	SKU       string
	Nickname  string
	Rating    int
	Title     string
	Body      string
	Status    string
	Created   string
}

func (s *Server) reviews(ctx context.Context, where string, args ...any) ([]Review, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, r.product_id, p.name, p.sku, r.nickname, r.rating, r.title, r.body, r.status, r.created_at
	  FROM reviews r JOIN products p ON p.id = r.product_id `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Review
	for rows.Next() {
		var r Review
		if err := rows.Scan(&r.ID, &r.ProductID, &r.Product, &r.SKU, &r.Nickname, &r.Rating, &r.Title, &r.Body, &r.Status, &r.Created); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Customer is a registered customer.
type Customer struct {
	ID                 int64
	Email, First, Last string
	Created            string
	Orders             int
}

// Name is the customer's full name.
func (c Customer) Name() string { return c.First + " " + c.Last }
