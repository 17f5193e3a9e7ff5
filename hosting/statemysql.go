package hosting

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// readMySQL reads every base table of the database with the mysql client
// in the instance (MySQL's or MariaDB's: both take these options and SQL)
// into a table of the same name and columns, keyed as readPostgres keys
// them. Two runs of the client: the tables and columns, then one JSON line
// of rows per table.
func readMySQL(ctx context.Context, in Execer, my *MySQL, tx *sql.Tx) error {
	run := func(script string) ([]byte, error) {
		cmd := []string{"mysql", "--no-defaults", "--batch", "--raw", "--skip-column-names", "--database", my.Database}
		if my.Socket != "" {
			cmd = append(cmd, "--socket", my.Socket)
		}
		if my.Host != "" {
			cmd = append(cmd, "--host", my.Host)
		}
		if my.Port != 0 {
			cmd = append(cmd, "--port", fmt.Sprint(my.Port))
		}
		if my.User != "" {
			cmd = append(cmd, "--user", my.User)
		}
		res, err := in.Exec(ctx, ExecRequest{Command: cmd, Stdin: []byte(script), Timeout: 60 * time.Second, MaxOutput: stateMaxArchive})
		if err != nil {
			return nil, err
		}
		if res.ExitCode != 0 {
			return nil, fmt.Errorf("mysql exited %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
		}
		return res.Stdout, nil
	}
	out, err := run(mysqlColumns)
	if err != nil {
		return err
	}
	var tables []dbTable
	byName := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), stateMaxText)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			return fmt.Errorf("mysql's columns: unexpected line %q", sc.Text())
		}
		pk, _ := strconv.Atoi(f[3])
		i, ok := byName[f[0]]
		if !ok {
			i = len(tables)
			byName[f[0]] = i
			tables = append(tables, dbTable{Table: f[0]})
		}
		tables[i].Columns = append(tables[i].Columns, dbColumn{Name: f[1], Type: f[2], PK: pk})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("mysql's columns: %w", err)
	}
	if len(tables) == 0 {
		return nil
	}
	var script strings.Builder
	// JSON_ARRAYAGG is bounded by group_concat_max_len on MariaDB.
	script.WriteString("SET SESSION group_concat_max_len = 67108864;\n")
	for _, t := range tables {
		if err := createMirror(ctx, tx, t); err != nil {
			return fmt.Errorf("table %s: %w", t.Table, err)
		}
		var obj []string
		for _, c := range t.Columns {
			obj = append(obj, mysqlString(c.Name), mysqlIdent(c.Name))
		}
		fmt.Fprintf(&script, "SELECT JSON_OBJECT('table', %s, 'rows', COALESCE(JSON_ARRAYAGG(JSON_OBJECT(%s)), JSON_ARRAY())) FROM %s;\n",
			mysqlString(t.Table), strings.Join(obj, ", "), mysqlIdent(t.Table))
	}
	out, err = run(script.String())
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var data struct {
			Table string           `json:"table"`
			Rows  []map[string]any `json:"rows"`
		}
		if err := dec.Decode(&data); err != nil {
			return fmt.Errorf("mysql's rows: %w", err)
		}
		i, ok := byName[data.Table]
		if !ok {
			continue
		}
		if err := fillMirror(ctx, tx, tables[i], data.Rows); err != nil {
			return fmt.Errorf("table %s: %w", data.Table, err)
		}
	}
	return nil
}

// mysqlColumns lists the database's base tables' columns: table, column,
// data_type and the column's place in the primary key (0: not in it).
const mysqlColumns = `SELECT c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, COALESCE(k.ORDINAL_POSITION, 0)
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME AND t.TABLE_TYPE = 'BASE TABLE'
LEFT JOIN information_schema.KEY_COLUMN_USAGE k ON k.CONSTRAINT_NAME = 'PRIMARY' AND k.TABLE_SCHEMA = c.TABLE_SCHEMA
  AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME
WHERE c.TABLE_SCHEMA = DATABASE()
ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION;
`

func mysqlIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func mysqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
