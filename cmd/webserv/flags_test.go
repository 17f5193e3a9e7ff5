package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/trajectory"
)

// Flags may stand before, between or after positional arguments; "--" ends
// the flags; an unknown flag is refused by name wherever it stands.
func TestParseArgsTakesFlagsAnywhere(t *testing.T) {
	newFS := func() (*flag.FlagSet, *string, *bool) {
		fs := flag.NewFlagSet("export", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return fs, fs.String("format", "sft", ""), fs.Bool("all", false, "")
	}
	for _, c := range []struct {
		args   []string
		format string
		all    bool
		pos    []string
	}{
		{[]string{"a", "--format", "transitions"}, "transitions", false, []string{"a"}},
		{[]string{"a", "-all", "b", "--format=har"}, "har", true, []string{"a", "b"}},
		{[]string{"--all", "a", "--", "--format", "-"}, "sft", true, []string{"a", "--format", "-"}},
		{[]string{"-", "a"}, "sft", false, []string{"-", "a"}},
	} {
		fs, format, all := newFS()
		if err := parseArgs(fs, c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if *format != c.format || *all != c.all || !reflect.DeepEqual(fs.Args(), c.pos) {
			t.Errorf("%q: format %q all %v args %q; want %q %v %q", c.args, *format, *all, fs.Args(), c.format, c.all, c.pos)
		}
	}
	fs, _, _ := newFS()
	err := parseArgs(fs, []string{"dir", "--fromat", "transitions"})
	if err == nil || !strings.Contains(err.Error(), "fromat") {
		t.Errorf("an unknown flag after a path: %v, want an error naming -fromat", err)
	}
}

// `webserv export DIR --format transitions` exports transitions from DIR,
// as a user who puts the flags last expects (it used to read "--format"
// as a path).
func TestExportTakesFlagsAfterTheDirectory(t *testing.T) {
	dir := t.TempDir()
	writeShopEpisode(t, filepath.Join(dir, "env-1", "0001"+trajectory.Ext))
	path := filepath.Join(t.TempDir(), "t.jsonl")
	var out strings.Builder
	if err := exportCmd(context.Background(), zap.NewNop(), []string{dir, "--format", "transitions", "-o", path}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if rows := readRows(t, path); len(rows) != 3 {
		t.Fatalf("exported %d transition rows, want the episode's 3 (output %q)", len(rows), out.String())
	}
}

// --log-level sets the level of the command's logger and refuses a level
// it does not know, naming the ones it does.
func TestLogLevelFlag(t *testing.T) {
	defer logLevel.SetLevel(logLevel.Level())
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	logLevelFlag(fs)
	if err := parseArgs(fs, []string{"--log-level", "warn"}); err != nil || logLevel.Level() != zap.WarnLevel {
		t.Fatalf("--log-level warn: %v, level %s", err, logLevel.Level())
	}
	err := parseArgs(fs, []string{"--log-level=verbose"})
	if err == nil || !strings.Contains(err.Error(), "debug, info, warn or error") {
		t.Errorf("--log-level=verbose: %v", err)
	}
}

// --upload-dir gives environments their upload directory; a path that is
// not a directory is refused when the flags are read, not at an agent's
// first upload.
func TestUploadDirFlag(t *testing.T) {
	dir := t.TempDir()
	var ef envFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef.register(fs)
	if err := parseArgs(fs, []string{"--upload-dir", dir}); err != nil || ef.cfg.UploadDir != dir {
		t.Fatalf("--upload-dir %s: %v, UploadDir %q", dir, err, ef.cfg.UploadDir)
	}
	file := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), file} {
		if err := parseArgs(fs, []string{"--upload-dir", bad}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
			t.Errorf("--upload-dir %s: %v, want it refused as not a directory", bad, err)
		}
	}
}
