package tasks

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// startState makes a SQLite file with the statements start, copies it as
// the start state, and returns the file's database (to change it) and both
// paths.
func startState(t *testing.T, start ...string) (db *sql.DB, cur, base string) {
	t.Helper()
	dir := t.TempDir()
	cur, base = filepath.Join(dir, "app.db"), filepath.Join(dir, "base.db")
	db, err := sql.Open("sqlite", "file:"+cur+"?_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	execAll(t, db, start...)
	if err := copyDBFile(context.Background(), cur, base); err != nil {
		t.Fatal(err)
	}
	return db, cur, base
}

// A diff names the rows inserted, updated and deleted since the copy, by
// table, with the columns a check needs (the rowid alias marked), and
// leaves out full-text indexes; queries run on both states.
func TestDiffFilesSeesInsertsUpdatesDeletes(t *testing.T) {
	ctx := context.Background()
	db, cur, base := startState(t,
		"CREATE TABLE items (id INTEGER PRIMARY KEY, sku TEXT, qty INTEGER, note TEXT)",
		"CREATE TABLE tags (a TEXT, b TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID",
		"CREATE VIRTUAL TABLE docs USING fts5(body)",
		"INSERT INTO items (sku, qty) VALUES ('A', 1), ('B', 2), ('C', 3)",
		"INSERT INTO tags VALUES ('x', 'y')",
		"INSERT INTO docs VALUES ('hello')",
	)
	execAll(t, db,
		"INSERT INTO items (sku, qty) VALUES ('D', 4)",
		"UPDATE items SET qty = 20 WHERE sku = 'B'",
		"DELETE FROM items WHERE sku = 'C'",
		"INSERT INTO tags VALUES ('x', 'z')",
		"INSERT INTO docs VALUES ('world')",
	)
	q := []StateQuery{{SQL: "SELECT COUNT(*) FROM items WHERE sku = ?", Args: []any{"D"}}, {SQL: "SELECT nope FROM items"}}
	d, vals, err := DiffFiles(ctx, cur, base, q, DiffLimits{MaxRows: 100, MaxBytes: 1 << 20, MaxValue: 1024})
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ table, op string }
	seen := map[key]map[string]any{}
	for _, c := range d.Changes {
		seen[key{c.Table, c.Op}] = c.Row
		if c.Op == "update" && (len(c.Old) != 1 || c.Old["qty"] != int64(2)) {
			t.Errorf("update's old values = %v, want only qty 2", c.Old)
		}
	}
	if d.Total != 4 || len(d.Changes) != 4 || d.Truncated {
		t.Fatalf("changes = %+v (total %d), want 4: an insert, an update, a delete in items and an insert in tags", d.Changes, d.Total)
	}
	if r := seen[key{"items", "insert"}]; r["sku"] != "D" || r["qty"] != int64(4) {
		t.Errorf("insert = %v", r)
	}
	if r := seen[key{"items", "update"}]; r["sku"] != "B" || r["qty"] != int64(20) {
		t.Errorf("update = %v", r)
	}
	if r := seen[key{"items", "delete"}]; r["sku"] != "C" {
		t.Errorf("delete = %v", r)
	}
	if r := seen[key{"tags", "insert"}]; r["b"] != "z" {
		t.Errorf("WITHOUT ROWID insert = %v", r)
	}
	for table := range d.Columns {
		if strings.HasPrefix(table, "docs") {
			t.Errorf("the full-text index %s is in the diff", table)
		}
	}
	if c := d.Columns["items"][0]; c.Name != "id" || c.PK != 1 || c.Type != "INTEGER" {
		t.Errorf("items' first column = %+v, want the INTEGER primary key", c)
	}
	if vals[0] != (QueryValues{Base: "0", Now: "1"}) {
		t.Errorf("query values = %+v, want base 0, now 1", vals[0])
	}
	if !strings.Contains(vals[1].Error, "nope") {
		t.Errorf("a bad query's error = %q", vals[1].Error)
	}
	// The limits cut the reply and say so.
	d, _, err = DiffFiles(ctx, cur, base, nil, DiffLimits{MaxRows: 2, MaxBytes: 1 << 20, MaxValue: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 2 || d.Total != 4 || !d.Truncated {
		t.Errorf("with max 2 rows: %d changes of %d, truncated %v", len(d.Changes), d.Total, d.Truncated)
	}
}

// A table the episode rewrote wholesale is counted whole, but only the
// rows the reply can carry are read with their values: the first ones in
// reply order, updates with their old values, then deletes.
func TestDiffOfAWholesaleRewriteReadsOnlyWhatTheReplyCarries(t *testing.T) {
	ctx := context.Background()
	db, cur, base := startState(t,
		"CREATE TABLE log (id INTEGER PRIMARY KEY, body TEXT)",
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) INSERT INTO log (id, body) SELECT i, 'was ' || i FROM n",
	)
	execAll(t, db,
		"UPDATE log SET body = 'now ' || id WHERE id <= 2000",
		"DELETE FROM log WHERE id > 2000",
		"WITH RECURSIVE n(i) AS (SELECT 5001 UNION ALL SELECT i + 1 FROM n WHERE i < 9000) INSERT INTO log (id, body) SELECT i, 'new' FROM n",
	)
	lim := DiffLimits{MaxRows: 5, MaxBytes: 1 << 20, MaxValue: 1024}
	d, _, err := DiffFiles(ctx, cur, base, nil, lim)
	if err != nil {
		t.Fatal(err)
	}
	if d.Total != 2000+1000+4000 || len(d.Changes) != 5 || !d.Truncated {
		t.Fatalf("total %d (want 7000), %d changes (want 5), truncated %v", d.Total, len(d.Changes), d.Truncated)
	}
	for _, c := range d.Changes {
		if c.Op != "update" || c.Old["body"] != "was "+strings.TrimPrefix(c.Row["body"].(string), "now ") {
			t.Errorf("change %+v: want an update with its old body", c)
		}
	}
	// With room for everything, every change is there, each kind counted.
	d, _, err = DiffFiles(ctx, cur, base, nil, DiffLimits{MaxRows: 10000, MaxBytes: 64 << 20, MaxValue: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, c := range d.Changes {
		ops[c.Op]++
	}
	if d.Total != 7000 || len(d.Changes) != 7000 || d.Truncated || ops["update"] != 2000 || ops["delete"] != 1000 || ops["insert"] != 4000 {
		t.Fatalf("total %d, changes %v, truncated %v", d.Total, ops, d.Truncated)
	}
}
