package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites text before it is split (tokenizer.json's normalizer).
type normalizer func(string) string

type typed struct {
	Type string `json:"type"`
}

func parseNormalizer(raw json.RawMessage) ([]normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch t.Type {
	case "Sequence":
		var seq struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("normalizer: %w", err)
		}
		var out []normalizer
		for _, r := range seq.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			out = append(out, n...)
		}
		return out, nil
	case "NFC":
		return []normalizer{norm.NFC.String}, nil
	case "NFD":
		return []normalizer{norm.NFD.String}, nil
	case "NFKC":
		return []normalizer{norm.NFKC.String}, nil
	case "NFKD":
		return []normalizer{norm.NFKD.String}, nil
	case "Lowercase":
		return []normalizer{lowercase}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Sequence)", t.Type)
}

// lowercase maps each character to its lowercase as Rust's char::to_lowercase
// does: one character at a time (no final sigma), and U+0130 to "i̇".
func lowercase(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 'İ' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// preTokenizer cuts a text into the words the model encodes separately.
type preTokenizer func(string) []string

func parsePreTokenizer(raw json.RawMessage) ([]preTokenizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch t.Type {
	case "Sequence":
		var seq struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
		var out []preTokenizer
		for _, r := range seq.PreTokenizers {
			p, err := parsePreTokenizer(r)
			if err != nil {
				return nil, err
			}
			out = append(out, p...)
		}
		return out, nil
	case "ByteLevel":
		var bl struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &bl); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
		useRegex := bl.UseRegex == nil || *bl.UseRegex
		return []preTokenizer{func(s string) []string {
			if bl.AddPrefixSpace && !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			var words []string
			if useRegex {
				words = gpt2Split(s)
			} else {
				words = []string{s}
			}
			for i, w := range words {
				words[i] = byteLevel(w)
			}
			return words
		}}, nil
	case "Whitespace":
		return []preTokenizer{whitespaceSplit}, nil
	case "WhitespaceSplit":
		return []preTokenizer{strings.Fields}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer %q is not supported (supported: ByteLevel, Whitespace, WhitespaceSplit, Sequence)", t.Type)
}

// isSpace is Unicode's White_Space, which is \s in the Rust library's
// regular expressions and char::is_whitespace.
func isSpace(r rune) bool { return unicode.IsSpace(r) }

func isL(r rune) bool { return unicode.IsLetter(r) }
func isN(r rune) bool { return unicode.IsNumber(r) }

// class of a character in GPT-2's pattern.
const (
	clsSpace = iota
	clsLetter
	clsNumber
	clsOther
)

func class(r rune) int {
	switch {
	case isSpace(r):
		return clsSpace
	case isL(r):
		return clsLetter
	case isN(r):
		return clsNumber
	}
	return clsOther
}

// gpt2Split splits s as the byte-level pre-tokenizer's regular expression
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// does: at each place the first alternative that matches, each as long as
// it can be.
func gpt2Split(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		n := gpt2Match(s[i:])
		out = append(out, s[i:i+n])
		i += n
	}
	return out
}

// gpt2Match is the length of the match at the start of s (never 0).
func gpt2Match(s string) int {
	if s[0] == '\'' {
		for _, c := range []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"} {
			if strings.HasPrefix(s, c) {
				return len(c)
			}
		}
	}
	r, size := utf8.DecodeRuneInString(s)
	start := 0
	cls := class(r)
	if r == ' ' && size < len(s) {
		if r2, _ := utf8.DecodeRuneInString(s[size:]); class(r2) != clsSpace {
			start, cls = size, class(r2) // " ?" then a run of r2's class
		}
	}
	if cls != clsSpace {
		i := start
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if class(r) != cls {
				break
			}
			i += n
		}
		return i
	}
	// \s+(?!\S): a run of whitespace up to the end, or all of it but its
	// last character when something else follows; else \s+ takes one.
	i, last := 0, 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isSpace(r) {
			break
		}
		last = n
		i += n
	}
	if i == len(s) || i-last == 0 {
		if i == len(s) {
			return i
		}
		return size
	}
	return i - last
}

// isWord is \w in the Rust regex crate: Alphabetic, marks, decimal digits,
// connector punctuation and the joiners.
func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) ||
		unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) || r == 0x200C || r == 0x200D
}

// whitespaceSplit is the Whitespace pre-tokenizer: \w+|[^\w\s]+, whitespace
// dropped.
func whitespaceSplit(s string) []string {
	var out []string
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if isSpace(r) {
			i += n
			continue
		}
		w := isWord(r)
		j := i + n
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if isSpace(r2) || isWord(r2) != w {
				break
			}
			j += n2
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// byteChars maps each byte to the character GPT-2's byte-level alphabet
// shows it as: printable Latin-1 as itself, the others from U+0100 on.
var byteChars = func() [256]rune {
	var m [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}()

func byteLevel(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteChars[s[i]])
	}
	return b.String()
}

func firstRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }
func lastRune(s string) (rune, int)  { return utf8.DecodeLastRuneInString(s) }
