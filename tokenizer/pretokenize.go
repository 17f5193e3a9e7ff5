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
	case "Split":
		var sp struct {
			Pattern struct {
				Regex  *string `json:"Regex"`
				String *string `json:"String"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		if err := json.Unmarshal(raw, &sp); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
		if sp.Pattern.Regex == nil || sp.Behavior != "Isolated" || sp.Invert {
			return nil, fmt.Errorf("pre_tokenizer Split is supported with an isolated regex of Llama 3's or Qwen 2's only")
		}
		match, ok := splitPatterns[*sp.Pattern.Regex]
		if !ok {
			return nil, fmt.Errorf("pre_tokenizer Split with the regex %q is not supported (supported: Llama 3's and Qwen 2's)", *sp.Pattern.Regex)
		}
		return []preTokenizer{func(s string) []string {
			var out []string
			for i := 0; i < len(s); {
				n := match(s[i:])
				out = append(out, s[i:i+n])
				i += n
			}
			return out
		}}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer %q is not supported (supported: ByteLevel, Whitespace, WhitespaceSplit, Split of Llama 3 or Qwen 2, Sequence)", t.Type)
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

// splitPatterns are the Split regular expressions of Llama 3 (numbers in
// threes) and Qwen 2 (digits one by one), matched by hand: Go's regexp has
// no lookahead.
var splitPatterns = map[string]func(string) int{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: func(s string) int { return llamaMatch(s, 3) },
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      func(s string) int { return llamaMatch(s, 1) },
}

// llamaMatch is the length of the match at the start of s (never 0) of
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+: the first
// alternative that matches, each as long as it can be.
func llamaMatch(s string, digits int) int {
	if s[0] == '\'' && len(s) > 1 {
		low := strings.ToLower(s[:min(len(s), 3)])
		for _, c := range []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"} {
			if strings.HasPrefix(low, c) && strings.EqualFold(s[:len(c)], c) {
				return len(c)
			}
		}
	}
	r, size := utf8.DecodeRuneInString(s)
	run := func(from int, in func(rune) bool) int {
		i := from
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !in(r) {
				break
			}
			i += n
		}
		return i
	}
	crlf := func(r rune) bool { return r == '\r' || r == '\n' }
	other := func(r rune) bool { return class(r) == clsOther }
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(r) {
		return run(0, isL)
	}
	if !crlf(r) && !isN(r) && size < len(s) {
		if r2, _ := utf8.DecodeRuneInString(s[size:]); isL(r2) {
			return run(size, isL)
		}
	}
	// \p{N}{1,digits}
	if isN(r) {
		i := 0
		for k := 0; k < digits && i < len(s); k++ {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isN(r) {
				break
			}
			i += n
		}
		return i
	}
	// ?[^\s\p{L}\p{N}]+[\r\n]*
	start := 0
	if r == ' ' && size < len(s) {
		if r2, _ := utf8.DecodeRuneInString(s[size:]); other(r2) {
			start = size
		}
	}
	if other(r) || start > 0 {
		return run(run(start, other), crlf)
	}
	// \s*[\r\n]+: the whitespace run up to its last CR or LF
	end := run(0, isSpace)
	last := -1
	for i := 0; i < end; {
		r, n := utf8.DecodeRuneInString(s[i:])
		if crlf(r) {
			last = i + n
		}
		i += n
	}
	if last > 0 {
		return last
	}
	// \s+(?!\S) and \s+, as in GPT-2's
	if end == len(s) {
		return end
	}
	_, lastSize := utf8.DecodeLastRuneInString(s[:end])
	if end-lastSize > 0 {
		return end - lastSize
	}
	return size
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
