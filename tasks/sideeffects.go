package tasks

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/webserv-rl/webserv/hosting"
)

// Side effects: the changes an episode made to its site's state that its
// task did not ask for (docs/tasks.md "Side effects"). A task names what
// it may change in two ways: the rows its state checks read (a change the
// value of one of its checks depends on: undoing it alone changes the
// check's value, like the order a cancel task checks or the cart line of
// the product it asks for), and its may_change. A site names the
// bookkeeping every path touches (sessions). Everything else that changed
// is a side effect, found in the state diff of the episode (DiffFiles)
// and reported with the step that ends it.

// The side-effect modes: a task's side_effects and make's.
const (
	// SideEffectsReport lists side effects in info; the reward stands.
	SideEffectsReport = "report"
	// SideEffectsFail scores an episode with side effects 0.
	SideEffectsFail = "fail"
	// SideEffectsOff looks for none (no copy of the start state is kept).
	SideEffectsOff = "off"
)

// SideEffectModes are the modes, the default first.
var SideEffectModes = []string{SideEffectsReport, SideEffectsFail, SideEffectsOff}

// CheckSideEffectMode refuses a mode that is not one of SideEffectModes
// ("" is the default).
func CheckSideEffectMode(m string) error {
	if m != "" && !slices.Contains(SideEffectModes, m) {
		return fmt.Errorf("%q is not a side-effect mode; want one of %s", m, strings.Join(SideEffectModes, ", "))
	}
	return nil
}

// ChangeScope is what an episode may change in its site's state.
type ChangeScope struct {
	// Checks are the task's state checks on the site's state: the rows
	// they read may change.
	Checks []StateQuery
	// Rows are named explicitly: the task's may_change and the site's
	// bookkeeping.
	Rows []hosting.StateRows
}

// ScopeOf is what task t may change: its state checks on the state of
// the site serving roles (a check of another site, or of a SQLite file
// other than db, the site's state database, says nothing of it; a check
// without a db reads the bundled shop's, its state database), its
// may_change and the site's bookkeeping. ok is false when the task says
// nothing and is graded by a program of its own (a check verifier, a
// WebArena-Verified evaluator), which may ask for any change: its side
// effects are not looked for until it names what it may change (or says
// with ScopeNamed that its empty checks and may_change name it).
func ScopeOf(t *Task, roles []string, db string, bookkeeping []hosting.StateRows) (sc ChangeScope, ok bool) {
	for _, c := range t.Eval.State {
		site := c.Site
		if site == "" && len(t.Sites) > 0 {
			site = t.Sites[0]
		}
		if (site == "" || slices.Contains(roles, site)) && (c.DB == "" || c.DB == db) {
			sc.Checks = append(sc.Checks, StateQuery{SQL: c.SQL, Args: c.Args})
		}
	}
	if len(sc.Checks) == 0 && len(t.MayChange) == 0 && !t.ScopeNamed && (slices.Contains(t.Eval.Types, "check") || slices.Contains(t.Eval.Types, "verified")) {
		return sc, false
	}
	sc.Rows = append(append(sc.Rows, t.MayChange...), bookkeeping...)
	return sc, true
}

// SideEffects are the changes found that the task did not ask for.
type SideEffects struct {
	// Changes are the side effects, at most MaxListedSideEffects of them
	// (a table created, dropped or altered is a change of op "schema").
	Changes []RowChange
	// Total counts them all.
	Total int
	// Unread says the state changed in more rows than were read
	// (sideEffectRows): there may be more.
	Unread bool
}

// Bounds of a side-effect search.
const (
	// MaxListedSideEffects bounds the changes listed in info.
	MaxListedSideEffects = 50
	// sideEffectRows bounds the changed rows read; sideEffectTries the
	// ones tried against the task's checks.
	sideEffectRows  = 5000
	sideEffectTries = 500
	sideEffectValue = 256
)

// FindSideEffects compares the state of the instance's SQLite file (or
// hosting.StateTables) with base (a CopyDB copy of the episode's start)
// and returns the changes scope does not allow.
func FindSideEffects(ctx context.Context, in hosting.Execer, file, base string, scope ChangeScope) (*SideEffects, error) {
	dir, err := os.MkdirTemp(filepath.Dir(base), "effects-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cur, err := fetchDB(ctx, in, file, dir)
	if err != nil {
		return nil, fmt.Errorf("db %s: %w", file, err)
	}
	out, err := SideEffectsOf(ctx, cur, base, dir, scope)
	if err != nil {
		return nil, fmt.Errorf("db %s: %w", file, err)
	}
	return out, nil
}

// SideEffectsOf compares the SQLite file cur with base and returns the
// changes scope does not allow; dir holds its scratch files.
func SideEffectsOf(ctx context.Context, cur, base, dir string, scope ChangeScope) (*SideEffects, error) {
	d, _, err := DiffFiles(ctx, cur, base, nil, DiffLimits{MaxRows: sideEffectRows, MaxBytes: 64 << 20, MaxValue: sideEffectValue})
	if err != nil {
		return nil, err
	}
	var left []RowChange
	for _, c := range d.Changes {
		if !covered(scope.Rows, c) {
			left = append(left, c)
		}
	}
	if len(left) > 0 && len(scope.Checks) > 0 {
		if left, err = notChecked(ctx, cur, base, dir, left, scope.Checks); err != nil {
			return nil, err
		}
	}
	for _, t := range d.SchemaChanged {
		if !covered(scope.Rows, RowChange{Table: t, Op: "schema"}) {
			left = append(left, RowChange{Table: t, Op: "schema"})
		}
	}
	out := &SideEffects{Total: len(left), Unread: d.Truncated}
	out.Changes = left[:min(len(left), MaxListedSideEffects)]
	return out, nil
}

// covered says whether one of rows names c (a schema change only by a
// rule for its whole table).
func covered(rows []hosting.StateRows, c RowChange) bool {
	for _, r := range rows {
		if c.Op == "schema" {
			if r.Table == c.Table && len(r.Where) == 0 && len(r.Columns) == 0 {
				return true
			}
			continue
		}
		if r.Covers(c.Table, c.Op, c.Row, c.Old) {
			return true
		}
	}
	return false
}

// notChecked keeps the changes no check depends on: in a writable copy of
// cur, each change is undone alone (its row put back as base has it) and
// the checks run again; a change that moves a check's value is one the
// task asked for. The first sideEffectTries changes are tried; the rest
// are kept.
func notChecked(ctx context.Context, cur, base, dir string, changes []RowChange, checks []StateQuery) ([]RowChange, error) {
	work := filepath.Join(dir, "undo.db")
	if err := copyDBFile(ctx, cur, work); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: work}).EscapedPath()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS base", "file:"+(&url.URL{Path: base}).EscapedPath()+"?mode=ro"); err != nil {
		return nil, fmt.Errorf("attach the start state: %w", err)
	}
	info, err := tables(ctx, conn, "main")
	if err != nil {
		return nil, err
	}
	values := func() []string {
		out := make([]string, len(checks))
		for i, q := range checks {
			v, err := firstValue(ctx, conn, q.SQL, q.Args)
			if err != nil {
				v = "error: " + err.Error()
			}
			out[i] = strings.TrimSpace(v)
		}
		return out
	}
	now := values()
	var kept []RowChange
	for i, c := range changes {
		if i >= sideEffectTries {
			kept = append(kept, changes[i:]...)
			break
		}
		if _, err := conn.ExecContext(ctx, "SAVEPOINT undo"); err != nil {
			return nil, err
		}
		moved := false
		if err := undo(ctx, conn, c, info[c.Table]); err == nil {
			moved = !slices.Equal(values(), now)
		}
		if _, err := conn.ExecContext(ctx, "ROLLBACK TO undo"); err != nil {
			return nil, err
		}
		if _, err := conn.ExecContext(ctx, "RELEASE undo"); err != nil {
			return nil, err
		}
		if !moved {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// undo puts c's row back as the start state (schema base) has it.
func undo(ctx context.Context, conn *sql.Conn, c RowChange, t tableInfo) error {
	if len(c.key) == 0 || len(t.cols) == 0 {
		return fmt.Errorf("table %s: no key to undo a change by", c.Table)
	}
	var where []string
	var cols []string
	if t.rowid {
		where, cols = []string{"rowid = ?"}, []string{"rowid"}
	} else {
		for _, col := range t.cols {
			if col.PK > 0 {
				where = append(where, quoteIdent(col.Name)+" = ?")
			}
		}
	}
	if len(where) != len(c.key) {
		return fmt.Errorf("table %s: the key has %d values for %d columns", c.Table, len(c.key), len(where))
	}
	for _, col := range t.cols {
		cols = append(cols, quoteIdent(col.Name))
	}
	q, w, list := quoteIdent(c.Table), strings.Join(where, " AND "), strings.Join(cols, ", ")
	if c.Op != "delete" {
		if _, err := conn.ExecContext(ctx, "DELETE FROM main."+q+" WHERE "+w, c.key...); err != nil {
			return err
		}
	}
	if c.Op != "insert" {
		if _, err := conn.ExecContext(ctx, "INSERT INTO main."+q+" ("+list+") SELECT "+list+" FROM base."+q+" WHERE "+w, c.key...); err != nil {
			return err
		}
	}
	return nil
}
