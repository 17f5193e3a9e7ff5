package tasks

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"unicode"
)

// WebArena's grading, restated from its published semantics. A task's
// score is the product of its evaluators' scores; each is 0 or 1.

// clean normalises an answer: trimmed, one layer of matching quotes
// removed, lowercased.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'' || s[0] == '"' && s[len(s)-1] == '"') {
		s = s[1 : len(s)-1]
	}
	return strings.ToLower(s)
}

// ExactMatch: the cleaned prediction equals the cleaned reference.
func ExactMatch(ref, pred string) float64 {
	if clean(pred) == clean(ref) {
		return 1
	}
	return 0
}

// MustInclude: the cleaned reference is a substring of the cleaned
// prediction. With tokenize (WebArena sets it when a task has a single
// must_include item), a one-character reference must match a whole word
// token, so "1" does not match "10".
func MustInclude(ref, pred string, tokenize bool) float64 {
	r, p := clean(ref), clean(pred)
	if tokenize && len([]rune(r)) == 1 && len(words(r)) == 1 {
		for _, w := range words(p) {
			if w == r {
				return 1
			}
		}
		return 0
	}
	if strings.Contains(p, r) {
		return 1
	}
	return 0
}

// words splits like a word tokenizer does for this purpose: runs of
// letters and digits are words, every other non-space rune its own token.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			out = append(out, string(r))
		}
	}
	flush()
	return out
}

// alternatives splits "a |OR| b" (WebArena-Lite's alternatives).
func alternatives(s string) []string {
	if !strings.Contains(s, "|OR|") {
		return []string{s}
	}
	parts := strings.Split(s, "|OR|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// ErrNoJudge: a fuzzy_match reference needs a judge and none is set.
var ErrNoJudge = errors.New("this task's fuzzy_match reference needs an LLM judge: start the server with --judge-url (an OpenAI-compatible endpoint)")

// Judge decides fuzzy_match references (an LLM judge in WebArena). nil
// means no judge: grading a fuzzy reference (other than an exact "N/A")
// is then an error, never a silent 0.
type Judge interface {
	FuzzyMatch(ctx context.Context, intent, ref, pred string) (bool, error)
	Unachievable(ctx context.Context, intent, reason, pred string) (bool, error)
}

// StringMatch scores an answer against string_match references.
func StringMatch(ctx context.Context, refs *ReferenceAnswers, pred string, judge Judge, intent, stringNote string) (float64, error) {
	if refs == nil {
		return 0, nil
	}
	score := 1.0
	if refs.ExactMatch != nil {
		score *= ExactMatch(*refs.ExactMatch, pred)
	}
	for _, must := range refs.MustInclude {
		best := 0.0
		for _, alt := range alternatives(must) {
			best = max(best, MustInclude(alt, pred, len(refs.MustInclude) == 1))
		}
		score *= best
	}
	if len(refs.FuzzyMatch) == 1 && refs.FuzzyMatch[0] == "N/A" {
		// Unachievable task: "N/A" itself, or (with a judge) a reason
		// that matches the annotated one.
		if ExactMatch("N/A", pred) == 1 {
			return score, nil
		}
		if judge == nil {
			return 0, ErrNoJudge
		}
		ok, err := judge.Unachievable(ctx, intent, stringNote, pred)
		if err != nil || !ok {
			return 0, err
		}
		return score, nil
	}
	for _, ref := range refs.FuzzyMatch {
		if judge == nil {
			return 0, ErrNoJudge
		}
		ok, err := judge.FuzzyMatch(ctx, intent, ref, pred)
		if err != nil {
			return 0, err
		}
		if !ok {
			score = 0
		}
	}
	return score, nil
}

// URLMatch scores the final page URL. "GOLD in PRED" (the default): some
// reference's host+path is a substring of the prediction's, and every
// query parameter of the references has one of its values in the
// prediction. As in WebArena, the query parameters are merged over all
// " |OR| " alternatives, so a parameter of one alternative is required of
// every prediction. "EXACT": the prediction equals a reference (trailing
// slashes aside).
func URLMatch(reference, note, pred string) float64 {
	trim := func(u string) string { return strings.TrimRight(strings.TrimSpace(u), "/") }
	refs := alternatives(reference)
	for i := range refs {
		refs[i] = trim(refs[i])
	}
	pred = trim(pred)
	if note == "EXACT" {
		for _, r := range refs {
			if r == pred {
				return 1
			}
		}
		return 0
	}
	predBase, predQuery := splitURL(pred)
	base := 0.0
	queries := map[string]map[string]bool{}
	for _, r := range refs {
		b, q := splitURL(r)
		if strings.Contains(predBase, b) {
			base = 1
		}
		for k, vs := range q {
			if queries[k] == nil {
				queries[k] = map[string]bool{}
			}
			for _, v := range vs {
				queries[k][v] = true
			}
		}
	}
	for k, want := range queries {
		found := false
		for _, v := range predQuery[k] {
			if want[v] {
				found = true
			}
		}
		if !found {
			return 0
		}
	}
	return base
}

func splitURL(u string) (string, url.Values) {
	p, err := url.Parse(u)
	if err != nil {
		return u, url.Values{}
	}
	return p.Host + p.Path, p.Query()
}
