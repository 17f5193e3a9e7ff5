package tasks

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/webserv-rl/webserv/hosting"
)

// What changed in a site's SQLite state between two copies of it: the
// rows inserted, updated and deleted in each table, for a trainer that
// derives state checks from what a demonstration did (the server's
// state_diff op, docs/explore.md). Rows are matched by rowid (by the
// primary key in WITHOUT ROWID tables); virtual tables and their shadow
// tables (full-text indexes) and SQLite's own tables are left out.

// DiffLimits bound a diff: at most MaxRows changes and about MaxBytes of
// values; each text value is cut to MaxValue bytes.
type DiffLimits struct {
	MaxRows  int
	MaxBytes int
	MaxValue int
}

// RowChange is one row that changed.
type RowChange struct {
	Table string `json:"table"`
	// Op is "insert", "update" or "delete".
	Op string `json:"op"`
	// Row is the row now (insert, update) or as it was (delete), by
	// column.
	Row map[string]any `json:"row"`
	// Old has an update's changed columns as they were.
	Old map[string]any `json:"old,omitempty"`

	key []any // the row's rowid, or its primary key in a WITHOUT ROWID table
}

// Column describes a column of a table with changes.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// PK is the column's position in the primary key (1, 2, ...), 0 when
	// it is not in it. An INTEGER column alone in the primary key is the
	// rowid: numbered by SQLite, never the same across runs by design.
	PK int `json:"pk"`
	// Default is the column's default as SQL text (like '{}' or 0), nil
	// for none: a new row holding only defaults says little.
	Default any `json:"default"`
}

// StateDiff is what changed.
type StateDiff struct {
	DB      string      `json:"db"`
	Changes []RowChange `json:"changes"`
	// Columns are the columns of each table in Changes.
	Columns map[string][]Column `json:"columns"`
	// Total counts the changes found; Truncated says Changes holds fewer
	// (a limit was reached).
	Total     int  `json:"total"`
	Truncated bool `json:"truncated"`
	// SchemaChanged names tables created, dropped or altered: their rows
	// are not compared.
	SchemaChanged []string `json:"schema_changed,omitempty"`
}

// StateQuery is a query to run on both copies (a candidate state check).
type StateQuery struct {
	SQL  string `json:"sql"`
	Args []any  `json:"args,omitempty"`
}

// QueryValues is a query's first value on each copy, as a state check
// reads it ("" for no rows or NULL).
type QueryValues struct {
	Base  string `json:"base"`
	Now   string `json:"now"`
	Error string `json:"error,omitempty"`
}

// CopyDB saves a consistent copy of the instance's SQLite file at dst
// (VACUUM INTO: one file, whatever the source's journal), the start state
// a later DiffDB compares with.
func CopyDB(ctx context.Context, in hosting.Execer, file, dst string) error {
	dir, err := os.MkdirTemp(filepath.Dir(dst), "fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, err := fetchDB(ctx, in, file, dir)
	if err != nil {
		return fmt.Errorf("db %s: %w", file, err)
	}
	if err := copyDBFile(ctx, path, dst); err != nil {
		return fmt.Errorf("db %s: %w", file, err)
	}
	return nil
}

// copyDBFile writes a consistent copy of the SQLite file path to dst.
func copyDBFile(ctx context.Context, path, dst string) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return nil
}

// DiffDB compares the instance's SQLite file now with base (a CopyDB
// copy) and runs queries on both.
func DiffDB(ctx context.Context, in hosting.Execer, file, base string, queries []StateQuery, lim DiffLimits) (*StateDiff, []QueryValues, error) {
	dir, err := os.MkdirTemp(filepath.Dir(base), "fetch-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	path, err := fetchDB(ctx, in, file, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("db %s: %w", file, err)
	}
	d, vals, err := DiffFiles(ctx, path, base, queries, lim)
	if err != nil {
		return nil, nil, fmt.Errorf("db %s: %w", file, err)
	}
	d.DB = file
	return d, vals, nil
}

// DiffFiles compares the SQLite file cur with base and runs queries on
// both.
func DiffFiles(ctx context.Context, cur, base string, queries []StateQuery, lim DiffLimits) (*StateDiff, []QueryValues, error) {
	db, err := openReadOnly(cur)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	// One connection: the attached base belongs to it.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "ATTACH DATABASE ? AS base", "file:"+(&url.URL{Path: base}).EscapedPath()+"?mode=ro"); err != nil {
		return nil, nil, fmt.Errorf("attach the start state: %w", err)
	}
	d := &StateDiff{Changes: []RowChange{}, Columns: map[string][]Column{}}
	if err := diffTables(ctx, db, d, lim); err != nil {
		return nil, nil, err
	}
	vals := make([]QueryValues, len(queries))
	if len(queries) == 0 {
		return d, vals, nil
	}
	b, err := openReadOnly(base)
	if err != nil {
		return nil, nil, err
	}
	defer b.Close()
	for i, q := range queries {
		if vals[i].Now, err = firstValue(ctx, db, q.SQL, q.Args); err == nil {
			vals[i].Base, err = firstValue(ctx, b, q.SQL, q.Args)
		}
		if err != nil {
			vals[i].Error = err.Error()
		}
	}
	return d, vals, nil
}

// querier is a database or one connection of it.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tableInfo is what diffTables needs of a table in one schema.
type tableInfo struct {
	cols    []Column
	rowid   bool
	virtual bool
}

func tables(ctx context.Context, db querier, schema string) (map[string]tableInfo, error) {
	rows, err := db.QueryContext(ctx, "SELECT name, COALESCE(sql, '') FROM "+schema+".sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		return nil, err
	}
	out := map[string]tableInfo{}
	var virtual []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return nil, err
		}
		up := strings.ToUpper(def)
		t := tableInfo{rowid: !strings.Contains(up, "WITHOUT ROWID"), virtual: strings.HasPrefix(up, "CREATE VIRTUAL")}
		if t.virtual {
			virtual = append(virtual, name)
		}
		out[name] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for name, t := range out {
		for _, v := range virtual {
			if name != v && strings.HasPrefix(name, v+"_") {
				t.virtual = true // a virtual table's shadow table
			}
		}
		if !t.virtual {
			if t.cols, err = columns(ctx, db, schema, name); err != nil {
				return nil, err
			}
		}
		out[name] = t
	}
	return out, nil
}

func columns(ctx context.Context, db querier, schema, table string) ([]Column, error) {
	rows, err := db.QueryContext(ctx, "SELECT name, type, pk, dflt_value FROM pragma_table_info(?, ?) ORDER BY cid", table, schema)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		var def sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &c.PK, &def); err != nil {
			return nil, err
		}
		if def.Valid {
			c.Default = def.String
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func sameColumns(a, b []Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// diffTables adds every table's changed rows to d, in table then key
// order, until the limits.
func diffTables(ctx context.Context, db *sql.DB, d *StateDiff, lim DiffLimits) error {
	now, err := tables(ctx, db, "main")
	if err != nil {
		return err
	}
	was, err := tables(ctx, db, "base")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(now))
	for n := range now {
		names = append(names, n)
	}
	for n := range was {
		if _, ok := now[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	bytes := 0
	for _, name := range names {
		t, ok := now[name]
		b, okb := was[name]
		if t.virtual || b.virtual {
			continue
		}
		if !ok || !okb || !sameColumns(t.cols, b.cols) {
			d.SchemaChanged = append(d.SchemaChanged, name)
			continue
		}
		total, changes, err := diffTable(ctx, db, name, t, max(lim.MaxRows-len(d.Changes), 0))
		if err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		d.Total += total
		for _, c := range changes {
			if d.Truncated || len(d.Changes) >= lim.MaxRows {
				d.Truncated = true
				break
			}
			n := cutValues(c.Row, lim.MaxValue) + cutValues(c.Old, lim.MaxValue)
			if bytes+n > lim.MaxBytes {
				d.Truncated = true
				break
			}
			bytes += n
			d.Changes = append(d.Changes, c)
			d.Columns[name] = t.cols
		}
		if len(changes) < total {
			d.Truncated = true // rows past MaxRows were not read
		}
	}
	return nil
}

// diffTable is one table's changes: the rows only one side has (by key,
// insert or delete) and those both have with other values (update). It
// returns how many rows changed and, of them, at most keep, in reply order
// (updates and inserts by key order of the current state, then deletes):
// a table rewritten by the episode costs the server the changed rows' keys,
// not their values.
func diffTable(ctx context.Context, db *sql.DB, name string, t tableInfo, keep int) (int, []RowChange, error) {
	key := "rowid"
	nkey := 1
	if !t.rowid {
		var pk []string
		for _, c := range t.cols {
			if c.PK > 0 {
				pk = append(pk, quoteIdent(c.Name))
			}
		}
		key, nkey = strings.Join(pk, ", "), len(pk)
	}
	q := quoteIdent(name)
	// read scans the rows of from that except lacks, keeping every key in
	// order and the values of those want says to keep.
	read := func(from, except string, want func(k string) bool) (map[string][]any, []string, error) {
		rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT %s, * FROM %s.%s EXCEPT SELECT %s, * FROM %s.%s", key, from, q, key, except, q))
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		out := map[string][]any{}
		var order []string
		vals := make([]any, nkey+len(t.cols))
		ptrs := make([]any, len(vals))
		for rows.Next() {
			for i := range vals {
				vals[i] = nil
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return nil, nil, err
			}
			k := fmt.Sprint(vals[:nkey]...)
			order = append(order, k)
			if want(k) {
				out[k] = append([]any(nil), vals...) // the key, then the columns
			}
		}
		return out, order, rows.Err()
	}
	// Only the first keep rows of the current state can be in the reply.
	kept := 0
	added, addOrder, err := read("main", "base", func(string) bool {
		kept++
		return kept <= keep
	})
	if err != nil {
		return 0, nil, err
	}
	kept = 0
	gone, goneOrder, err := read("base", "main", func(k string) bool {
		if _, ok := added[k]; ok {
			return true // an update's old values
		}
		kept++
		return kept <= keep // a delete, if it can be in the reply
	})
	if err != nil {
		return 0, nil, err
	}
	both := map[string]bool{}
	for _, k := range addOrder {
		both[k] = false
	}
	total := len(addOrder)
	for _, k := range goneOrder {
		if _, ok := both[k]; ok {
			both[k] = true
			continue
		}
		total++
	}
	row := func(vals []any) map[string]any {
		vals = vals[nkey:]
		m := make(map[string]any, len(vals))
		for i, c := range t.cols {
			m[c.Name] = value(vals[i])
		}
		return m
	}
	var out []RowChange
	for _, k := range addOrder {
		if len(out) >= keep {
			return total, out, nil
		}
		if both[k] {
			old, now := gone[k][nkey:], added[k][nkey:]
			ch := RowChange{Table: name, Op: "update", Row: row(added[k]), Old: map[string]any{}, key: added[k][:nkey]}
			for i, c := range t.cols {
				if fmt.Sprint(value(old[i])) != fmt.Sprint(value(now[i])) {
					ch.Old[c.Name] = value(old[i])
				}
			}
			out = append(out, ch)
			continue
		}
		out = append(out, RowChange{Table: name, Op: "insert", Row: row(added[k]), key: added[k][:nkey]})
	}
	for _, k := range goneOrder {
		if len(out) >= keep {
			break
		}
		if _, isAdded := both[k]; !isAdded {
			out = append(out, RowChange{Table: name, Op: "delete", Row: row(gone[k]), key: gone[k][:nkey]})
		}
	}
	return total, out, nil
}

// value is a column's value for the wire: text for valid UTF-8 blobs.
func value(v any) any {
	if b, ok := v.([]byte); ok {
		if utf8.Valid(b) {
			return string(b)
		}
		return fmt.Sprintf("(a blob of %d bytes)", len(b))
	}
	return v
}

// cutValues cuts m's text values to max bytes (marking the cut) and
// returns about how many bytes m holds.
func cutValues(m map[string]any, max int) int {
	n := 0
	for k, v := range m {
		n += len(k) + 8
		if s, ok := v.(string); ok {
			if len(s) > max {
				cut := max
				for cut > 0 && !utf8.RuneStart(s[cut]) {
					cut--
				}
				s = s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
				m[k] = s
			}
			n += len(s)
		}
	}
	return n
}
