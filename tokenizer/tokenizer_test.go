package tokenizer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/tokenizer"
)

// The fixtures are written by scripts/tokenizer_fixtures.py with Hugging
// Face's tokenizers package: two tokenizers trained on docs/ and the ids
// the package gives each text.
func TestEncodeAgreesWithTheTokenizersPackage(t *testing.T) {
	for _, name := range []string{"byte_bpe", "word_bpe", "llama3_split", "qwen2_split"} {
		t.Run(name, func(t *testing.T) {
			tok, err := tokenizer.Load(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join("testdata", name+".cases.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cases []struct {
				Text string `json:"text"`
				IDs  []int  `json:"ids"`
			}
			if err := json.Unmarshal(b, &cases); err != nil {
				t.Fatal(err)
			}
			if len(cases) < 50 {
				t.Fatalf("only %d cases", len(cases))
			}
			for _, c := range cases {
				got := tok.Encode(c.Text)
				if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
					t.Errorf("%.60q: ids %v, the tokenizers package %v", c.Text, head(got), head(c.IDs))
					continue
				}
				if n := tok.Count(c.Text); n != len(c.IDs) {
					t.Errorf("%.60q: count %d, want %d", c.Text, n, len(c.IDs))
				}
			}
		})
	}
}

func head(ids []int) []int {
	if len(ids) > 20 {
		return ids[:20]
	}
	return ids
}

func TestLoadRefusesWhatItCannotCountByName(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"model":{"type":"WordPiece","vocab":{}}}`, `model "WordPiece" is not supported`},
		{`{"model":{"type":"Unigram","vocab":[]}}`, `model "Unigram" is not supported`},
		{`{"pre_tokenizer":{"type":"Metaspace"},"model":{"type":"BPE","vocab":{},"merges":[]}}`, `pre_tokenizer "Metaspace" is not supported`},
		{`{"normalizer":{"type":"BertNormalizer"},"model":{"type":"BPE","vocab":{},"merges":[]}}`, `normalizer "BertNormalizer" is not supported`},
		{`{"model":{"type":"BPE","dropout":0.1,"vocab":{},"merges":[]}}`, `dropout`},
		{`{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\d+"},"behavior":"Isolated","invert":false},"model":{"type":"BPE","vocab":{},"merges":[]}}`, `Split with the regex "\\d+" is not supported`},
		{`{"added_tokens":[{"id":0,"content":"x","single_word":true}],"model":{"type":"BPE","vocab":{},"merges":[]}}`, `single_word`},
	} {
		_, err := tokenizer.Parse([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.json, err, c.want)
		}
	}
}
