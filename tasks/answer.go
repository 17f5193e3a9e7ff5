package tasks

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Typed answers. WebArena's must_include pays an answer that lists many
// candidates: the reference is found inside "0 1 2 ... 1000". A task of
// the project's own formats says instead what type its answer is
// (eval.answer_type); the grader reads every value of that type out of
// the answer and compares them with the reference's: one value for a
// scalar type, the same set for a list. An answer holding other values of
// the type beside the right one ("42 or 43", two prices) earns 0, with a
// note saying so. The names follow WebArena-Verified's result types
// (number, currency, date, string, string_list).

// AnswerTypes are the answer types a task may give, in the order docs
// and errors list them.
var AnswerTypes = func() []string {
	out := make([]string, len(answerTypes))
	for i, t := range answerTypes {
		out[i] = t.name
	}
	return out
}()

// answerType is one type of the vocabulary: how its values are read out
// of a text, and whether an answer is one value or a set of them.
type answerType struct {
	name string
	// what names a value of the type in notes ("a number").
	what string
	// list: the answer is a set of values (the references are its items).
	list bool
	// values reads every value of the type in text, normalised so that
	// equal values are equal strings.
	values func(text string) []string
}

// answerTypes is the vocabulary (AnswerTypes lists its names).
var answerTypes = []answerType{
	{name: "number", what: "number", values: numbers(false)},
	{name: "currency", what: "price", values: numbers(true)},
	{name: "date", what: "date", values: dates},
	{name: "string", what: "text", values: func(s string) []string { return nonEmpty(normText(s)) }},
	{name: "string_list", what: "item", list: true, values: listItems},
}

func answerTypeOf(name string) (answerType, bool) {
	i := slices.IndexFunc(answerTypes, func(t answerType) bool { return t.name == name })
	if i < 0 {
		return answerType{}, false
	}
	return answerTypes[i], true
}

// AnswerGrade is how a task graded the agent's answer: the step reply's
// info.grader.
type AnswerGrade struct {
	// Semantics names the comparison: typed.<answer_type> (this
	// project's typed answers), or WebArena's webarena.exact_match,
	// webarena.must_include, webarena.fuzzy_match.
	Semantics string `json:"semantics"`
	// HackableByListing says an answer that lists many candidates can be
	// paid: true of WebArena's must_include (the reference is looked for
	// inside the answer) and fuzzy_match (a judge, which nothing stops
	// from accepting a list).
	HackableByListing bool `json:"hackable_by_listing"`
	// Note says why a typed answer earned 0 (none when it earned 1, or
	// under WebArena's semantics).
	Note string `json:"note,omitempty"`
}

// typedRefs are the references of a typed answer: exact_match, else the
// must_include items (each may hold " |OR| " alternatives).
func typedRefs(r *ReferenceAnswers) []string {
	if r == nil {
		return nil
	}
	if r.ExactMatch != nil {
		return []string{*r.ExactMatch}
	}
	return r.MustInclude
}

// validateAnswerType checks a typed task's references: a known type,
// one reference holding one value of it (a list: items, one value each),
// no fuzzy_match.
func validateAnswerType(name string, r *ReferenceAnswers) error {
	at, ok := answerTypeOf(name)
	if !ok {
		return fmt.Errorf("eval.answer_type: %q; want one of %s", name, strings.Join(AnswerTypes, ", "))
	}
	if r == nil {
		return fmt.Errorf("eval.reference_answers: answer_type %s needs the reference", name)
	}
	if len(r.FuzzyMatch) > 0 {
		return fmt.Errorf("eval.reference_answers.fuzzy_match: a typed answer is compared as a value, not by a judge: give exact_match (or must_include items for string_list)")
	}
	if r.ExactMatch != nil && len(r.MustInclude) > 0 {
		return fmt.Errorf("eval.reference_answers: answer_type %s takes exact_match or must_include, not both", name)
	}
	refs := typedRefs(r)
	switch {
	case len(refs) == 0:
		return fmt.Errorf("eval.reference_answers: answer_type %s needs exact_match", name)
	case !at.list && len(refs) > 1:
		return fmt.Errorf("eval.reference_answers: answer_type %s is one value; give it as exact_match (a list of values is string_list)", name)
	}
	for _, ref := range refs {
		for _, alt := range alternatives(ref) {
			if v := at.values(alt); len(v) != 1 {
				return fmt.Errorf("eval.reference_answers: %q holds %d %s value(s); each reference of answer_type %s is one", alt, len(v), at.what, name)
			}
		}
	}
	return nil
}

// typedMatch grades answer as a value of type name against the task's
// references: 1, or 0 and a note saying why.
func typedMatch(name string, r *ReferenceAnswers, answer string) (float64, string) {
	at, _ := answerTypeOf(name)
	got := distinct(at.values(answer))
	refs := typedRefs(r)
	if at.list {
		// Each reference item (its alternatives) must be in the answer,
		// and each item of the answer must be a reference item.
		var extra []string
		matched := make([]bool, len(refs))
		for _, v := range got {
			hit := false
			for i, ref := range refs {
				if slices.ContainsFunc(alternatives(ref), func(alt string) bool { return first(at.values(alt)) == v }) {
					matched[i], hit = true, true
				}
			}
			if !hit {
				extra = append(extra, v)
			}
		}
		missing := 0
		for _, m := range matched {
			if !m {
				missing++
			}
		}
		switch {
		case len(extra) > 0:
			return 0, fmt.Sprintf("the answer lists %d item(s) that are not asked for (%s): a list is compared as a set, and more than what was asked earns 0", len(extra), sample(extra))
		case missing > 0:
			return 0, fmt.Sprintf("the answer misses %d of the %d item(s) asked for", missing, len(refs))
		}
		return 1, ""
	}
	switch {
	case len(got) == 0:
		return 0, fmt.Sprintf("the answer holds no %s; the task asks for one", at.what)
	case len(got) > 1:
		return 0, fmt.Sprintf("the answer holds %d different %s values (%s); the task asks for one: an answer listing candidates earns 0", len(got), at.what, sample(got))
	}
	for _, ref := range refs {
		for _, alt := range alternatives(ref) {
			if first(at.values(alt)) == got[0] {
				return 1, ""
			}
		}
	}
	return 0, fmt.Sprintf("the answer's %s (%s) is not the reference", at.what, shorten(got[0], 80))
}

// inferAnswerType is the type a WebArena reference is graded as under
// strict answers: a lone must_include item of a price, number or date
// shape is that type, any other lone item text, several items a list.
func inferAnswerType(r *ReferenceAnswers) string {
	if len(r.MustInclude) > 1 {
		return "string_list"
	}
	one := r.MustInclude[0]
	for _, name := range []string{"currency", "number", "date"} {
		at, _ := answerTypeOf(name)
		ok := true
		for _, alt := range alternatives(one) {
			// The whole reference is the value: "$12.99", not "12 items".
			v := at.values(alt)
			ok = ok && len(v) == 1 && wholeValue(name, alt)
		}
		if ok {
			return name
		}
	}
	return "string"
}

// wholeValue reports whether s is nothing but one value of type name.
func wholeValue(name, s string) bool {
	s = strings.TrimSpace(s)
	switch name {
	case "currency":
		return moneyRe.MatchString(s) && strings.ContainsAny(s, "$€£")
	case "number":
		return moneyRe.MatchString(s) && !strings.ContainsAny(s, "$€£")
	case "date":
		return dateRe.FindString(s) == s
	}
	return false
}

// moneyRe is a number, with an optional sign and currency symbol,
// thousands separated by commas or not.
var moneyRe = regexp.MustCompile(`^[-+]?[$€£]?[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$`)

// numbers reads the numbers of a text: each whitespace-separated word
// (its surrounding punctuation trimmed) that is a number, or a price
// ("$1,299.00"); a word of comma-separated numbers ("3,4,5") is each of
// them. Words with letters ("SKU-0042", "2-pack") are not numbers. money
// normalises to cents ("12.99"), else to the shortest decimal.
func numbers(money bool) func(string) []string {
	return func(text string) []string {
		var out []string
		for _, w := range strings.Fields(text) {
			w = strings.Trim(w, `.,;:!?()[]{}"'`)
			parts := []string{w}
			if !moneyRe.MatchString(w) {
				parts = strings.Split(w, ",")
			}
			for _, p := range parts {
				if !moneyRe.MatchString(p) {
					continue
				}
				neg := strings.Contains(p, "-")
				p = strings.NewReplacer("$", "", "€", "", "£", "", ",", "", "+", "", "-", "").Replace(p)
				f, err := strconv.ParseFloat(p, 64)
				if err != nil {
					continue
				}
				if neg {
					f = -f
				}
				if money {
					out = append(out, strconv.FormatFloat(f, 'f', 2, 64))
				} else {
					out = append(out, strconv.FormatFloat(f, 'f', -1, 64))
				}
			}
		}
		return out
	}
}

// dateRe finds dates: 2024-03-05, 3/5/2024 (month first), March 5, 2024,
// Mar 5 2024, 5 March 2024.
var dateRe = regexp.MustCompile(`(?i)\b(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{4}|(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(st|nd|rd|th)?,? \d{4}|\d{1,2} (jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{4})\b`)

var ordinalRe = regexp.MustCompile(`(?i)(\d)(st|nd|rd|th)`)

// dates reads the dates of a text, each as YYYY-MM-DD.
func dates(text string) []string {
	var out []string
	for _, m := range dateRe.FindAllString(text, -1) {
		s := ordinalRe.ReplaceAllString(strings.NewReplacer(",", "", ".", "").Replace(m), "$1")
		s = strings.Replace(strings.ToLower(s), "sept ", "sep ", 1)
		for _, layout := range []string{"2006-1-2", "1/2/2006", "January 2 2006", "Jan 2 2006", "2 January 2006", "2 Jan 2006"} {
			if d, err := time.Parse(layout, s); err == nil {
				out = append(out, d.Format("2006-01-02"))
				break
			}
		}
	}
	return out
}

// normText normalises a text answer: trimmed, one layer of matching
// quotes and a final full stop (outside them) removed, spaces collapsed, lowercased.
func normText(s string) string {
	s = clean(strings.TrimSuffix(strings.TrimSpace(s), "."))
	return strings.Join(strings.Fields(s), " ")
}

var listSep = regexp.MustCompile(`[\n,;]+`)

// listItems reads a list answer: items separated by newlines, commas or
// semicolons, a final "and" dropped, each normalised as text.
func listItems(text string) []string {
	var out []string
	for _, it := range listSep.Split(text, -1) {
		it = normText(it)
		it = strings.TrimPrefix(it, "and ")
		if it != "" {
			out = append(out, it)
		}
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func distinct(vs []string) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// sample is a few values, for a note.
func sample(vs []string) string {
	if len(vs) > 3 {
		return strings.Join(vs[:3], ", ") + fmt.Sprintf(" and %d more", len(vs)-3)
	}
	return strings.Join(vs, ", ")
}
