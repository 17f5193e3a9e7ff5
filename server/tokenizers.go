package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/webserv-rl/webserv/tokenizer"
)

// tokenizers loads the tokenizer.json files observation budgets name
// (observe.tokenizer), once each: a path, or a name in Config.TokenizerDir
// (NAME.json or NAME/tokenizer.json there).
type tokenizers struct {
	dir    string
	mu     sync.Mutex
	loaded map[string]*tokenizer.Tokenizer
}

func newTokenizers(dir string) *tokenizers {
	return &tokenizers{dir: dir, loaded: map[string]*tokenizer.Tokenizer{}}
}

// get returns the tokenizer name stands for.
func (t *tokenizers) get(name string) (*tokenizer.Tokenizer, error) {
	path, err := t.path(name)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok, ok := t.loaded[path]; ok {
		return tok, nil
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, badArgs(fmt.Sprintf("observe.tokenizer %q: %v", name, err))
	}
	t.loaded[path] = tok
	return tok, nil
}

// path is the file name stands for: a path (it has a slash or ends in
// .json), else a name in the tokenizer directory.
func (t *tokenizers) path(name string) (string, error) {
	if name == "" {
		return "", badArgs("observe.max_tokens needs observe.tokenizer: a tokenizer.json path, or a name in the server's --tokenizers directory")
	}
	if strings.ContainsRune(name, '/') || strings.HasSuffix(name, ".json") {
		if _, err := os.Stat(name); err != nil {
			return "", badArgs(fmt.Sprintf("observe.tokenizer %q: %v", name, err))
		}
		return name, nil
	}
	if t.dir == "" {
		return "", badArgs(fmt.Sprintf("observe.tokenizer %q is a name, but the server has no tokenizer directory: start it with --tokenizers DIR, or give a path to a tokenizer.json", name))
	}
	for _, p := range []string{filepath.Join(t.dir, name+".json"), filepath.Join(t.dir, name, "tokenizer.json")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	names := t.names()
	msg := fmt.Sprintf("observe.tokenizer %q is not in %s", name, t.dir)
	if near := nearest(name, names); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return "", badArgs(msg + fmt.Sprintf(" Tokenizers there: %s", strings.Join(names, ", ")))
}

// names are the tokenizers of the directory.
func (t *tokenizers) names() []string {
	var out []string
	entries, err := os.ReadDir(t.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, e := range entries {
		switch {
		case e.IsDir():
			if _, err := os.Stat(filepath.Join(t.dir, e.Name(), "tokenizer.json")); err == nil {
				out = append(out, e.Name())
			}
		case strings.HasSuffix(e.Name(), ".json"):
			out = append(out, strings.TrimSuffix(e.Name(), ".json"))
		}
	}
	sort.Strings(out)
	return out
}
