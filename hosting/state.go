package hosting

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // the tables a site's declared state is read into
)

// A site's state, wherever it keeps it, read into one SQLite file of
// tables: the files of its data directories (table "files") and the rows
// of its PostgreSQL or MySQL/MariaDB database (a table each). One path then diffs any
// site's state (the state_diff op compares two such files) and grades
// state checks on it (a check whose db is StateTables). Everything is
// read by commands run inside the instance (Execer), so the local backend
// and Incus containers are read the same way.

// State declares where a site keeps its state (a definition's state:).
type State struct {
	// Files are files or directories, relative to the instance's data
	// directory (local: its copy of data_dir; Incus: $DATA_DIR of the site
	// or image, else the image's working directory, as a state check's
	// db), whose contents are the site's state.
	Files []string `json:"files,omitempty"`
	// Postgres is a PostgreSQL database read with psql inside the
	// instance.
	Postgres *Postgres `json:"postgres,omitempty"`
	// MySQL is a MySQL or MariaDB database read with the mysql client
	// inside the instance.
	MySQL *MySQL `json:"mysql,omitempty"`
}

// MySQL is how the mysql client (MySQL's or MariaDB's) reaches the site's
// database from inside its instance: a Unix socket ({port} and {data} are
// the local instance's), else a host and port.
type MySQL struct {
	Database string `json:"database"`
	Socket   string `json:"socket,omitempty"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	User     string `json:"user,omitempty"`
}

// Postgres is how psql reaches the site's database from inside its
// instance. Host may be a socket directory ({data} is the local
// instance's data directory).
type Postgres struct {
	Database string `json:"database"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	User     string `json:"user,omitempty"`
	// Schema is the schema whose tables are read (default public).
	Schema string `json:"schema,omitempty"`
}

// StateTables is the db of a state check (and the state_diff's db) that
// reads the site's declared state as tables rather than a SQLite file.
const StateTables = "@state"

// StateReader is an instance whose site declares its state: ReadState
// writes the state as it is now to the SQLite file dst.
type StateReader interface {
	ReadState(ctx context.Context, dst string) error
}

// Bounds of a state read: the archive of the files, and one text value.
const (
	stateMaxArchive = 64 << 20
	stateMaxText    = 1 << 20
)

func (st *State) validate() error {
	if len(st.Files) == 0 && st.Postgres == nil && st.MySQL == nil {
		return errors.New("state: give files (directories of the site's data), postgres or mysql (its database)")
	}
	for i, f := range st.Files {
		p := filepath.Clean(f)
		if f == "" || filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "-") {
			return fmt.Errorf("state.files[%d] %q: give a path inside the instance's data directory, like notes", i, f)
		}
	}
	if pg := st.Postgres; pg != nil {
		if pg.Database == "" {
			return errors.New("state.postgres.database: empty (the database psql connects to)")
		}
		if pg.Port < 0 || pg.Port > 65535 {
			return fmt.Errorf("state.postgres.port: %d is not 1-65535", pg.Port)
		}
		if pg.Schema == "" {
			pg.Schema = "public"
		}
	}
	if my := st.MySQL; my != nil {
		if my.Database == "" {
			return errors.New("state.mysql.database: empty (the database the mysql client reads)")
		}
		if my.Port < 0 || my.Port > 65535 {
			return fmt.Errorf("state.mysql.port: %d is not 1-65535", my.Port)
		}
	}
	return nil
}

// ReadState writes the state st declares, read in instance in, to the
// SQLite file dst (which must not exist).
func ReadState(ctx context.Context, in Execer, st *State, dst string) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: dst}).EscapedPath())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if len(st.Files) > 0 {
		if err := readFiles(ctx, in, st.Files, tx); err != nil {
			return fmt.Errorf("state files: %w", err)
		}
	}
	if st.Postgres != nil {
		if err := readPostgres(ctx, in, st.Postgres, tx); err != nil {
			return fmt.Errorf("state postgres %s: %w", st.Postgres.Database, err)
		}
	}
	if st.MySQL != nil {
		if err := readMySQL(ctx, in, st.MySQL, tx); err != nil {
			return fmt.Errorf("state mysql %s: %w", st.MySQL.Database, err)
		}
	}
	return tx.Commit()
}

// archiveScript archives its arguments that exist, relative to the
// instance's data directory ($DATA_DIR: local, its copy of data_dir;
// Incus, the site's or image's, else the working directory), to stdout
// (nothing when none does), with POSIX sh and any tar (GNU, busybox).
const archiveScript = `cd "${DATA_DIR:-.}" || exit 1; for p do shift; [ -e "$p" ] && set -- "$@" "$p"; done; [ $# -gt 0 ] || exit 0; exec tar -cf - "$@"`

// readFiles archives the paths in the instance (tar, missing paths left
// out) and writes table files: path, size, text (the content when it is
// UTF-8 of at most 1 MiB, else "sha256:<hex>") and json (the text when it
// is JSON, else NULL: json_extract reads its fields without an error on
// other files).
func readFiles(ctx context.Context, in Execer, paths []string, tx *sql.Tx) error {
	cmd := append([]string{"sh", "-c", archiveScript, "sh"}, paths...)
	res, err := in.Exec(ctx, ExecRequest{Command: cmd, Timeout: 60 * time.Second, MaxOutput: stateMaxArchive})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("tar exited %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, text TEXT NOT NULL, json TEXT) WITHOUT ROWID`); err != nil {
		return err
	}
	r := tar.NewReader(bytes.NewReader(res.Stdout))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return fmt.Errorf("read the archive: %w", err)
		}
		text := string(b)
		if len(b) > stateMaxText || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			sum := sha256.Sum256(b)
			text = "sha256:" + hex.EncodeToString(sum[:])
		}
		var js any // the text again when it is JSON, for checks on its fields (json_extract)
		if json.Valid(b) && text == string(b) {
			js = text
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)`, path.Clean(h.Name), len(b), text, js); err != nil {
			return err
		}
	}
}

// pgScript prints one JSON line of the schema's tables and their columns,
// then one line {table, rows} per table.
const pgScript = `\set ON_ERROR_STOP 1
SELECT COALESCE(json_agg(json_build_object('table', t.table_name, 'columns',
  (SELECT json_agg(json_build_object('name', c.column_name, 'type', c.data_type, 'pk',
     COALESCE((SELECT k.ordinal_position FROM information_schema.table_constraints tc
       JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name
         AND k.table_schema = tc.table_schema AND k.table_name = tc.table_name
       WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = t.table_schema
         AND tc.table_name = t.table_name AND k.column_name = c.column_name), 0))
     ORDER BY c.ordinal_position)
   FROM information_schema.columns c WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name))
  ORDER BY t.table_name), '[]'::json)
FROM information_schema.tables t WHERE t.table_schema = :'schema' AND t.table_type = 'BASE TABLE';
SELECT format('SELECT json_build_object(''table'', %L, ''rows'', COALESCE(json_agg(x), ''[]''::json)) FROM %I.%I x',
  table_name, table_schema, table_name)
FROM information_schema.tables WHERE table_schema = :'schema' AND table_type = 'BASE TABLE' ORDER BY table_name
\gexec
`

// dbTable is a database table's name and columns (pk: the column's place
// in the primary key, 0 when not in it).
type dbTable struct {
	Table   string     `json:"table"`
	Columns []dbColumn `json:"columns"`
}

type dbColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
	PK   int    `json:"pk"`
}

// readPostgres reads every table of the database's schema with psql in
// the instance into a table of the same name and columns (keyed by the
// primary key; a table without one by its whole row, column _row).
func readPostgres(ctx context.Context, in Execer, pg *Postgres, tx *sql.Tx) error {
	cmd := []string{"psql", "-X", "-q", "-A", "-t", "-d", pg.Database, "-v", "schema=" + pg.Schema}
	if pg.Host != "" {
		cmd = append(cmd, "-h", pg.Host)
	}
	if pg.Port != 0 {
		cmd = append(cmd, "-p", fmt.Sprint(pg.Port))
	}
	if pg.User != "" {
		cmd = append(cmd, "-U", pg.User)
	}
	res, err := in.Exec(ctx, ExecRequest{Command: cmd, Stdin: []byte(pgScript), Timeout: 60 * time.Second, MaxOutput: stateMaxArchive})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("psql exited %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	// One JSON value of the tables, then one per table (json_agg breaks lines between elements).
	dec := json.NewDecoder(bytes.NewReader(res.Stdout))
	var tables []dbTable
	if err := dec.Decode(&tables); err != nil {
		return fmt.Errorf("psql's tables: %w", err)
	}
	cols := map[string]dbTable{}
	for _, t := range tables {
		cols[t.Table] = t
		if err := createMirror(ctx, tx, t); err != nil {
			return fmt.Errorf("table %s: %w", t.Table, err)
		}
	}
	for dec.More() {
		var data struct {
			Table string           `json:"table"`
			Rows  []map[string]any `json:"rows"`
		}
		if err := dec.Decode(&data); err != nil {
			return fmt.Errorf("psql's rows: %w", err)
		}
		t, ok := cols[data.Table]
		if !ok {
			continue
		}
		if err := fillMirror(ctx, tx, t, data.Rows); err != nil {
			return fmt.Errorf("table %s: %w", t.Table, err)
		}
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sqliteTypes are the SQLite types of PostgreSQL's and MySQL's data_type
// names (information_schema.columns); any other is TEXT.
var sqliteTypes = map[string]string{
	"smallint": "INTEGER", "integer": "INTEGER", "bigint": "INTEGER", "boolean": "INTEGER",
	"tinyint": "INTEGER", "mediumint": "INTEGER", "int": "INTEGER", "bit": "INTEGER",
	"real": "REAL", "double precision": "REAL", "numeric": "REAL",
	"float": "REAL", "double": "REAL", "decimal": "REAL",
}

// sqliteType is the SQLite type of a database's data_type.
func sqliteType(t string) string {
	if s, ok := sqliteTypes[strings.ToLower(t)]; ok {
		return s
	}
	return "TEXT"
}

func keyed(t dbTable) bool {
	for _, c := range t.Columns {
		if c.PK > 0 {
			return true
		}
	}
	return false
}

func createMirror(ctx context.Context, tx *sql.Tx, t dbTable) error {
	var defs, pk []string
	type kc struct {
		pos  int
		name string
	}
	var keys []kc
	for _, c := range t.Columns {
		defs = append(defs, quoteIdent(c.Name)+" "+sqliteType(c.Type))
		if c.PK > 0 {
			keys = append(keys, kc{c.PK, quoteIdent(c.Name)})
		}
	}
	if len(keys) == 0 {
		defs = append(defs, `"_row" TEXT`)
		keys = append(keys, kc{1, `"_row"`})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].pos < keys[j].pos })
	for _, k := range keys {
		pk = append(pk, k.name)
	}
	_, err := tx.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s (%s, PRIMARY KEY (%s)) WITHOUT ROWID", quoteIdent(t.Table), strings.Join(defs, ", "), strings.Join(pk, ", ")))
	return err
}

func fillMirror(ctx context.Context, tx *sql.Tx, t dbTable, rows []map[string]any) error {
	names := make([]string, 0, len(t.Columns)+1)
	for _, c := range t.Columns {
		names = append(names, quoteIdent(c.Name))
	}
	whole := !keyed(t)
	if whole {
		names = append(names, `"_row"`)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ")
	stmt, err := tx.PrepareContext(ctx, fmt.Sprintf("INSERT OR REPLACE INTO %s (%s) VALUES (%s)", quoteIdent(t.Table), strings.Join(names, ", "), marks))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range rows {
		vals := make([]any, 0, len(names))
		for _, c := range t.Columns {
			vals = append(vals, sqlValue(r[c.Name]))
		}
		if whole {
			b, _ := json.Marshal(r)
			vals = append(vals, string(b))
		}
		if _, err := stmt.ExecContext(ctx, vals...); err != nil {
			return err
		}
	}
	return nil
}

// sqlValue is a JSON value as SQLite stores it: booleans as 0 and 1,
// arrays and objects as their JSON text.
func sqlValue(v any) any {
	switch x := v.(type) {
	case bool:
		if x {
			return 1
		}
		return 0
	case []any, map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return v
}

// WithState is in, able to read st (a StateReader) when st is not nil.
func WithState(in Execer, st *State) Execer {
	if in == nil || st == nil {
		return in
	}
	return stateExecer{in, st}
}

type stateExecer struct {
	Execer
	st *State
}

func (s stateExecer) ReadState(ctx context.Context, dst string) error {
	return ReadState(ctx, s.Execer, s.st, dst)
}
