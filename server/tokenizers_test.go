package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A budget's tokenizer is a path or a name in the server's directory; a
// misspelt name is refused with the nearest and the names there.
func TestTokenizersByPathAndName(t *testing.T) {
	src, err := os.ReadFile("../tokenizer/testdata/byte_bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "qwen-small.json"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "llama"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "llama", "tokenizer.json"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	tk := newTokenizers(dir)
	a, err := tk.get("qwen-small")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := tk.get("qwen-small"); err != nil || b != a {
		t.Fatalf("a second get loaded the file again (%v)", err)
	}
	if _, err := tk.get("llama"); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.get("../tokenizer/testdata/word_bpe.json"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"qwen-smal":          `did you mean "qwen-small"? Tokenizers there: llama, qwen-small`,
		"":                   "needs observe.tokenizer",
		"/no/such/file.json": "no such file",
	} {
		_, err := tk.get(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", name, err, want)
		}
	}
	if _, err := newTokenizers("").get("llama"); err == nil || !strings.Contains(err.Error(), "--tokenizers DIR") {
		t.Errorf("a name without a directory: %v", err)
	}
}
