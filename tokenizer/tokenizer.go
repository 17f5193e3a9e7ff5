// Package tokenizer counts tokens the way Hugging Face's tokenizers library
// does for a tokenizer.json file, so that an observation budget in tokens
// is the budget the trainer's model sees.
//
// It reads the parts of tokenizer.json that decide the token ids of a text
// encoded without special tokens (encode(text, add_special_tokens=False)):
// the added tokens, the normalizer, the pre-tokenizer and the model. It
// supports what byte-level and word-level BPE tokenizers use and refuses,
// by name, any other part on Load, rather than count differently:
//
//   - model: BPE (vocab, merges, unk_token, fuse_unk, byte_fallback,
//     continuing_subword_prefix, end_of_word_suffix, ignore_merges; no dropout)
//   - normalizer: none, NFC, NFD, NFKC, NFKD, Lowercase, Sequence of these
//   - pre_tokenizer: ByteLevel (GPT-2's split, add_prefix_space, use_regex),
//     Split with Llama 3's or Qwen 2's regular expression (isolated),
//     Whitespace, WhitespaceSplit, Sequence of these
//   - added tokens: split out before normalizing (normalized: false) or after
//     (normalized: true), with lstrip and rstrip; single_word is refused
//
// The post-processor, decoder, truncation and padding do not change the ids
// of an encoding without special tokens and no length limit; they are not read.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
)

// Tokenizer counts and encodes text as its tokenizer.json says. It is safe
// for concurrent use.
type Tokenizer struct {
	name  string
	added addedTokens
	norm  []normalizer
	pre   []preTokenizer
	bpe   *bpe

	mu    sync.Mutex
	cache map[string][]int // pre-token -> ids, bounded by maxCache
}

const maxCache = 1 << 16

// Name is the path or name the tokenizer was loaded from.
func (t *Tokenizer) Name() string { return t.name }

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	t.name = path
	return t, nil
}

type fileJSON struct {
	AddedTokens  []addedJSON     `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        json.RawMessage `json:"model"`
}

type addedJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
}

// Parse reads the contents of a tokenizer.json file.
func Parse(b []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	t := &Tokenizer{cache: map[string][]int{}}
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.bpe, err = parseBPE(f.Model); err != nil {
		return nil, err
	}
	for _, a := range f.AddedTokens {
		if a.SingleWord {
			return nil, fmt.Errorf("added token %q has single_word: true, which this counter does not support", a.Content)
		}
		if a.Content == "" {
			continue
		}
		tok := addedToken{id: a.ID, content: a.Content, lstrip: a.LStrip, rstrip: a.RStrip}
		if a.Normalized {
			tok.content = t.normalize(a.Content)
			t.added.normalized = append(t.added.normalized, tok)
		} else {
			t.added.raw = append(t.added.raw, tok)
		}
	}
	t.added.sort()
	return t, nil
}

// Count is the number of tokens in text encoded without special tokens:
// len(tokenizer.encode(text, add_special_tokens=False).ids) in Python.
func (t *Tokenizer) Count(text string) int {
	n := 0
	t.each(text, func(ids []int) { n += len(ids) })
	return n
}

// Encode returns the ids of text encoded without special tokens.
func (t *Tokenizer) Encode(text string) []int {
	var out []int
	t.each(text, func(ids []int) { out = append(out, ids...) })
	return out
}

// each calls f with the ids of every piece of text in order.
func (t *Tokenizer) each(text string, f func([]int)) {
	for _, s := range t.added.split(text, t.added.rawIdx) {
		if s.id >= 0 {
			f([]int{s.id})
			continue
		}
		for _, s2 := range t.added.split(t.normalize(s.text), t.added.normIdx) {
			if s2.id >= 0 {
				f([]int{s2.id})
				continue
			}
			for _, w := range t.preTokenize(s2.text) {
				f(t.word(w))
			}
		}
	}
}

func (t *Tokenizer) normalize(s string) string {
	for _, n := range t.norm {
		s = n(s)
	}
	return s
}

func (t *Tokenizer) preTokenize(s string) []string {
	words := []string{s}
	for _, p := range t.pre {
		var next []string
		for _, w := range words {
			next = append(next, p(w)...)
		}
		words = next
	}
	return words
}

// word is the ids of one pre-token, cached.
func (t *Tokenizer) word(w string) []int {
	if w == "" {
		return nil
	}
	t.mu.Lock()
	ids, ok := t.cache[w]
	t.mu.Unlock()
	if ok {
		return ids
	}
	ids = t.bpe.encode(w)
	t.mu.Lock()
	if len(t.cache) >= maxCache {
		t.cache = map[string][]int{}
	}
	t.cache[w] = ids
	t.mu.Unlock()
	return ids
}

// addedToken is a token of added_tokens: matched in the text before the
// model sees it and given its id whole.
type addedToken struct {
	id             int
	content        string
	lstrip, rstrip bool
}

type addedTokens struct {
	raw, normalized []addedToken // longest first
	rawIdx, normIdx byFirst
}

// byFirst indexes tokens by their first byte, longest first.
type byFirst map[byte][]addedToken

func (a *addedTokens) sort() {
	for _, l := range [][]addedToken{a.raw, a.normalized} {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].content) > len(l[j].content) })
	}
	a.rawIdx, a.normIdx = index(a.raw), index(a.normalized)
}

func index(toks []addedToken) byFirst {
	m := byFirst{}
	for _, t := range toks {
		m[t.content[0]] = append(m[t.content[0]], t)
	}
	return m
}

// piece is a part of the text: an added token's id, or text (id -1).
type piece struct {
	id   int
	text string
}

// split cuts s at the leftmost-longest matches of toks (as the Rust
// library's Aho-Corasick search does), widened over whitespace for lstrip
// and rstrip tokens.
func (a *addedTokens) split(s string, first byFirst) []piece {
	if len(first) == 0 || s == "" {
		return []piece{{-1, s}}
	}
	var out []piece
	from := 0 // start of the text not yet emitted
	for i := 0; i < len(s); {
		tok, ok := matchAt(s[i:], first[s[i]])
		if !ok {
			i++
			continue
		}
		start, stop := i, i+len(tok.content)
		if tok.lstrip {
			j := start
			for j > from {
				r, size := lastRune(s[:j])
				if !isSpace(r) {
					break
				}
				j -= size
			}
			start = j
		}
		if tok.rstrip {
			for stop < len(s) {
				r, size := firstRune(s[stop:])
				if !isSpace(r) {
					break
				}
				stop += size
			}
		}
		if from < start {
			out = append(out, piece{-1, s[from:start]})
		}
		out = append(out, piece{tok.id, ""})
		from, i = stop, stop
	}
	if from < len(s) {
		out = append(out, piece{-1, s[from:]})
	}
	return out
}

func matchAt(s string, toks []addedToken) (addedToken, bool) {
	for _, t := range toks {
		if strings.HasPrefix(s, t.content) {
			return t, true
		}
	}
	return addedToken{}, false
}
