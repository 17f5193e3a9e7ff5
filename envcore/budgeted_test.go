package envcore_test

import (
	"regexp"
	"testing"

	"github.com/webserv-rl/webserv/tokenizer"
)

// byteBPE is the tests' byte-level BPE tokenizer, for observations under a
// token budget.
func byteBPE(t testing.TB) *tokenizer.Tokenizer {
	tok, err := tokenizer.Load("../tokenizer/testdata/byte_bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// foldRe matches a fold line's expand call and its fold id.
var foldRe = regexp.MustCompile(`expand\("(fold-[0-9a-f]{8}-(\d+))"\)`)
