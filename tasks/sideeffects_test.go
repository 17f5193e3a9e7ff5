package tasks

import (
	"context"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
)

// A change no check reads and no rule names is a side effect, whatever
// its table: another order canceled beside the one checked, another
// cart line beside the one asked for, a row deleted, a table created.
// The checked rows, the rows may_change names (with only the columns it
// allows) and the site's bookkeeping are not.
func TestSideEffectsAreTheChangesNothingAskedFor(t *testing.T) {
	ctx := context.Background()
	db, cur, base := startState(t,
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, number TEXT, status TEXT, note TEXT)",
		"CREATE TABLE cart (id INTEGER PRIMARY KEY, sku TEXT, qty INTEGER)",
		"CREATE TABLE stock (sku TEXT PRIMARY KEY, n INTEGER, price INTEGER) WITHOUT ROWID",
		"CREATE TABLE sessions (id TEXT PRIMARY KEY, data TEXT)",
		"INSERT INTO orders (number, status) VALUES ('0001', 'pending'), ('0003', 'pending'), ('0005', 'pending')",
		"INSERT INTO stock VALUES ('A', 5, 10), ('B', 5, 10)",
	)
	execAll(t, db,
		"UPDATE orders SET status = 'canceled' WHERE number IN ('0001', '0003')",
		"DELETE FROM orders WHERE number = '0005'",
		"INSERT INTO cart (sku, qty) VALUES ('B', 1), ('A', 2)",
		"UPDATE stock SET n = 4 WHERE sku = 'A'",
		"UPDATE stock SET n = 4, price = 1 WHERE sku = 'B'",
		"INSERT INTO sessions VALUES ('s1', '{}')",
		"CREATE TABLE extra (x)",
	)
	scope := ChangeScope{
		Checks: []StateQuery{
			{SQL: "SELECT status FROM orders WHERE number = ?", Args: []any{"0003"}},
			{SQL: "SELECT COALESCE(SUM(qty), 0) FROM cart WHERE sku = ?", Args: []any{"A"}},
		},
		Rows: []hosting.StateRows{
			{Table: "stock", Where: map[string]any{"sku": "A"}, Columns: []string{"n"}},
			{Table: "stock", Where: map[string]any{"sku": "B"}, Columns: []string{"n"}},
			{Table: "sessions"},
		},
	}
	se, err := SideEffectsOf(ctx, cur, base, t.TempDir(), scope)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range se.Changes {
		key := ""
		for _, k := range []string{"number", "sku"} {
			if v, ok := c.Row[k]; ok {
				key = hosting.ValueText(v)
			}
		}
		got = append(got, c.Table+" "+c.Op+" "+key)
	}
	want := "cart insert B, orders update 0001, orders delete 0005, stock update B, extra schema "
	if strings.Join(got, ", ") != want || se.Total != 5 || se.Unread {
		t.Errorf("side effects = %q (total %d, unread %v), want %q", strings.Join(got, ", "), se.Total, se.Unread, want)
	}
	if c := se.Changes[1]; c.Old["status"] != "pending" || c.Row["status"] != "canceled" {
		t.Errorf("the other order's change = %v, want its status from pending to canceled", c)
	}

	// Nothing named: every change is one.
	se, err = SideEffectsOf(ctx, cur, base, t.TempDir(), ChangeScope{})
	if err != nil || se.Total != 9 {
		t.Errorf("with nothing allowed: %v, %v; want 9 side effects", se, err)
	}
}

// Modes are report, fail and off; anything else is refused by name.
func TestSideEffectModes(t *testing.T) {
	for _, m := range []string{"", "report", "fail", "off"} {
		if err := CheckSideEffectMode(m); err != nil {
			t.Errorf("%q: %v", m, err)
		}
	}
	if err := CheckSideEffectMode("warn"); err == nil || !strings.Contains(err.Error(), "report, fail, off") {
		t.Errorf("warn: %v", err)
	}
}
