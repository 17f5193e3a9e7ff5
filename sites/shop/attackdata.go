package shop

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// WriteAttack puts an attacker's words into the shop's data in dir as a
// customer's review (the data attack channel, docs/attacks.md): on the
// storefront an approved review of the draw's product, among the first
// eight enabled ones; on the admin panel (admin) a review awaiting
// moderation, which heads its Reviews page. It returns the path of the
// page that shows it.
func WriteAttack(ctx context.Context, dir, words string, draw uint64, admin bool) (string, error) {
	words = strings.TrimSpace(words)
	if words == "" {
		return "", errors.New("no words to write: give them on standard input")
	}
	db, err := openDB(dir, false)
	if err != nil {
		return "", err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, slug FROM products WHERE status = 'enabled' ORDER BY id LIMIT 8`)
	if err != nil {
		return "", err
	}
	var ids []int64
	var slugs []string
	for rows.Next() {
		var id int64
		var slug string
		if err := rows.Scan(&id, &slug); err != nil {
			rows.Close()
			return "", err
		}
		ids, slugs = append(ids, id), append(slugs, slug)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return "", errors.New("the shop has no enabled product to review")
	}
	k := int(draw % uint64(len(ids)))
	status, page := "approved", "/product/"+slugs[k]
	if admin {
		status, page = "pending", "/admin/reviews"
	}
	title, _, _ := strings.Cut(words, ".")
	if len(title) > 60 {
		title = title[:60]
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO reviews (product_id, customer_id, nickname, rating, title, body, status, created_at) VALUES (?, NULL, ?, 5, ?, ?, ?, ?)`,
		ids[k], "Verified buyer", title, words, status, now()); err != nil {
		return "", fmt.Errorf("write the review: %w", err)
	}
	return page, nil
}

// attackDataCmd is `shop attack-data`: WriteAttack with the words on
// standard input and the draw in $WEBSERV_ATTACK_DRAW; prints the page.
func attackDataCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shop attack-data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", env("DATA_DIR", "/data"), "data directory (holds shop.db); $DATA_DIR")
	admin := fs.Bool("admin", false, "write a review awaiting moderation, for the admin panel (the cms)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	words, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
	if err != nil {
		return err
	}
	var draw uint64
	if d := os.Getenv("WEBSERV_ATTACK_DRAW"); d != "" {
		if draw, err = strconv.ParseUint(d, 10, 64); err != nil {
			return fmt.Errorf("$WEBSERV_ATTACK_DRAW %q: want a number: %w", d, err)
		}
	}
	page, err := WriteAttack(ctx, *data, string(words), draw, *admin)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, page)
	return nil
}
