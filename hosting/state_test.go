package hosting_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

// ReadState reads a local instance's declared files into table files:
// each file's path, size, text, and its JSON when it is JSON; paths that
// do not exist are left out; a directory gives its files.
func TestReadStateOfFiles(t *testing.T) {
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	s := hostingtest.LocalSite(t)
	in, err := b.Start(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	ex := in.(hosting.Execer)
	prog := s.Local.Command[0]
	for name, body := range map[string]string{"note.json": `{"title": "hiker"}`, "plain.txt": "two\nlines"} {
		if res, err := ex.Exec(t.Context(), hosting.ExecRequest{Command: []string{prog, "exec-write", name, body}}); err != nil || res.ExitCode != 0 {
			t.Fatalf("write %s: %+v %v", name, res, err)
		}
	}
	dst := filepath.Join(t.TempDir(), "state.db")
	r := hosting.WithState(ex, &hosting.State{Files: []string{"state", "note.json", "plain.txt", "nosuch"}}).(hosting.StateReader)
	if err := r.ReadState(t.Context(), dst); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT path, size, text, COALESCE(json, '(null)') FROM files ORDER BY path")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got [][4]any
	for rows.Next() {
		var p, text, js string
		var size int
		if err := rows.Scan(&p, &size, &text, &js); err != nil {
			t.Fatal(err)
		}
		got = append(got, [4]any{p, size, text, js})
	}
	want := [][4]any{
		{"note.json", 18, `{"title": "hiker"}`, `{"title": "hiker"}`},
		{"plain.txt", 9, "two\nlines", "(null)"},
		{"state", 4, "base", "(null)"},
	}
	if len(got) != len(want) {
		t.Fatalf("files = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %v, want %v", i, got[i], want[i])
		}
	}
}
