package budget_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore/budget"
	"github.com/webserv-rl/webserv/tokenizer"
)

// page is an axtree text view as parser_views.js writes it, with its
// lines' places: a nav and a form on the screen, a long paragraph, and a
// 300-row table of links below the screen.
func page() (string, string) { return pageOf(false, 300) }

// pageOf is page, its rows alternately of two shapes when alternate (then
// no run of rows folds).
func pageOf(alternate bool, rows int) (string, string) {
	var lines []string
	var places []byte
	add := func(place byte, depth int, s string) {
		lines = append(lines, strings.Repeat("\t", depth)+s)
		places = append(places, place)
	}
	add('0', 0, `RootWebArea "Catalog"`)
	add('0', 1, `navigation "Main"`)
	for _, n := range []string{"home", "deals", "account", "cart"} {
		add('0', 2, fmt.Sprintf(`[nav.%s] link %q url="/%s"`, n, n, n))
	}
	add('0', 1, `heading "Catalog" level=1`)
	add('0', 1, `form "Search"`)
	add('0', 2, `[search.q] searchbox "Search" value=""`)
	add('0', 2, `[search.go] button "Go"`)
	add('0', 1, `StaticText `+fmt.Sprintf("%q", strings.Repeat("All our goods ship within two days. ", 40)))
	add('b', 1, `heading "Everything" level=2`)
	add('b', 1, `table`)
	for i := range rows {
		add('b', 2, `row`)
		add('b', 3, fmt.Sprintf(`cell "Item %d"`, i))
		add('b', 3, `cell`)
		add('b', 4, fmt.Sprintf(`[item-%d] link "Open %d" url="/item/%d"`, i, i, i))
		if alternate && i%2 == 1 {
			add('b', 3, `cell "-"`)
		}
	}
	add('b', 1, `StaticText "The end of the catalog."`)
	return strings.Join(lines, "\n"), string(places)
}

// fit prunes an axtree text view (with its lines' places) to max tokens:
// the text, its count and whether it was pruned.
func fit(text, places string, max int, c budget.Counter) (string, int, bool) {
	r := budget.Fit(text, places, max, c, "", budget.AXTree)
	return r.Text, r.Tokens, r.Truncated
}

// fitExpanded is fit with the fold expand names shown first; it also
// returns the ids of the folds the text shows.
func fitExpanded(text, places string, max int, c budget.Counter, expand string) (string, int, []string) {
	r := budget.Fit(text, places, max, c, expand, budget.AXTree)
	return r.Text, r.Tokens, r.Folds
}

func byteBPE(t testing.TB) *tokenizer.Tokenizer {
	tok, err := tokenizer.Load("../../tokenizer/testdata/byte_bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var idRe = regexp.MustCompile(`\[([^\]\s]+)\] `)

func TestBudgetFitsKeepsTheScreenAndIsStable(t *testing.T) {
	tok := byteBPE(t)
	text, places := page()
	whole := tok.Count(text)
	if same, n, cut := fit(text, places, whole, tok); same != text || n != whole || cut {
		t.Fatalf("a text within its budget changed (%d tokens, cut %v)", n, cut)
	}
	onScreen := []string{"nav.home", "nav.deals", "nav.account", "nav.cart", "search.q", "search.go"}
	for _, max := range []int{128, 256, 1024, 4096} {
		out, n, cut := fit(text, places, max, tok)
		if n != tok.Count(out) || n > max || !cut {
			t.Fatalf("budget %d: %d tokens (counted %d), cut %v", max, n, tok.Count(out), cut)
		}
		again, _, _ := fit(text, places, max, tok)
		if again != out {
			t.Fatalf("budget %d: two prunings of one text differ", max)
		}
		last := out[strings.LastIndex(out, "\n")+1:]
		if !strings.HasPrefix(last, "[observation cut to its token budget:") || !strings.Contains(last, "scroll") {
			t.Fatalf("budget %d: the last line does not say what was left out: %q", max, last)
		}
		kept := map[string]bool{}
		for _, m := range idRe.FindAllStringSubmatch(out, -1) {
			kept[m[1]] = true
		}
		if max >= 1024 {
			for _, id := range onScreen {
				if !kept[id] {
					t.Errorf("budget %d: the on-screen element %s lost its id:\n%s", max, id, out)
				}
			}
			if !strings.Contains(out, `heading "Catalog" level=1`) {
				t.Errorf("budget %d: the on-screen heading is gone", max)
			}
		}
		if max == 4096 {
			// Room for the screen, the outline and the fold of the table's rows.
			for _, want := range []string{`heading "Everything" level=2`, "… 298 more items like this (below the screen: scroll down, or expand(\"fold-", "[item-0] ", "[item-1] ", `(1340 more characters)`} {
				if !strings.Contains(out, want) {
					t.Errorf("budget 4096: %q is missing:\n%s", want, out)
				}
			}
		}
	}
}

var foldRe = regexp.MustCompile(`expand\("(fold-[0-9a-f]{8}-(\d+))"\)`)

// An expand shows a fold's items first, in pages: each observation keeps
// as many of them as the budget holds and folds the rest again under the
// id of the first left out, which the next expand takes; an expand of a
// fold the page does not have changes nothing; the text stays within the
// budget and byte-stable.
func TestBudgetExpandShowsAFoldFirst(t *testing.T) {
	tok := byteBPE(t)
	text, places := page()
	plain, _, folds := fitExpanded(text, places, 1024, tok, "")
	m := foldRe.FindStringSubmatch(plain)
	if m == nil || len(folds) != 1 || folds[0] != m[1] || m[2] != "2" {
		t.Fatalf("no fold line with the id of the fold (folds %v):\n%s", folds, plain)
	}
	id := m[1]
	seen := map[int]bool{}
	for page := 0; page < 3; page++ {
		out, n, folds := fitExpanded(text, places, 1024, tok, id)
		if n > 1024 || n != tok.Count(out) {
			t.Fatalf("expand %s: %d tokens (counted %d)", id, n, tok.Count(out))
		}
		if again, _, _ := fitExpanded(text, places, 1024, tok, id); again != out {
			t.Fatalf("expand %s: two prunings differ", id)
		}
		if !strings.Contains(out, "showing "+id+" first") {
			t.Fatalf("expand %s: the closing line does not say what is shown:\n%s", id, out)
		}
		_, first, _ := strings.Cut(id, "-")
		_, first, _ = strings.Cut(first, "-")
		if !strings.Contains(out, fmt.Sprintf("[item-%s] ", first)) {
			t.Fatalf("expand %s: its first item is not shown:\n%s", id, out)
		}
		rows := 0
		for _, m := range idRe.FindAllStringSubmatch(out, -1) {
			var i int
			if _, err := fmt.Sscanf(m[1], "item-%d", &i); err == nil && i >= 2 {
				if seen[i] {
					t.Fatalf("item %d shown by two pages", i)
				}
				seen[i] = true
				rows++
			}
		}
		if rows < 10 {
			t.Fatalf("expand %s: only %d of its items shown within 1024 tokens:\n%s", id, rows, out)
		}
		next := ""
		for _, f := range folds {
			if f != id && strings.HasPrefix(f, id[:len("fold-12345678")]) {
				next = f
			}
		}
		if next == "" || !strings.Contains(out, `expand("`+next+`")`) {
			t.Fatalf("expand %s: the items left out are not folded again (folds %v):\n%s", id, folds, out)
		}
		id = next
	}
	// A fold the page does not have (the page changed): the text is as
	// without an expand.
	if out, _, _ := fitExpanded(text, places, 1024, tok, "fold-00000000-2"); out != plain {
		t.Fatalf("an expand of no fold of the page changed the text:\n%s", out)
	}
	// The smallest budget: the expanded part goes last, and the text fits.
	for _, max := range []int{budget.MinTokens, 256} {
		if out, n, _ := fitExpanded(text, places, max, tok, m[1]); n > max || n != tok.Count(out) {
			t.Fatalf("budget %d with an expand: %d tokens:\n%s", max, n, out)
		}
	}
}

// A fold inside an item of another fold (a list in each group of a list):
// shown while its group is on the screen, it is expanded after the group
// left the screen (scrolled away), and its group is kept out of the outer
// fold, so its items are shown under their ancestors.
func TestBudgetExpandsAFoldInsideAFold(t *testing.T) {
	tok := byteBPE(t)
	nested := func(onScreen int) (string, string) {
		var lines []string
		var places []byte
		add := func(place byte, depth int, s string) {
			lines = append(lines, strings.Repeat("\t", depth)+s)
			places = append(places, place)
		}
		add('0', 0, `RootWebArea "Nested"`)
		add('0', 1, `list`)
		for i := range 40 {
			p := byte('b')
			if i == onScreen {
				p = '0'
			}
			add(p, 2, fmt.Sprintf(`listitem "Group %d"`, i))
			add(p, 3, `list`)
			for j := range 40 {
				add('b', 4, fmt.Sprintf(`[g%d-%d] link "Entry %d.%d"`, i, j, i, j))
			}
		}
		return strings.Join(lines, "\n"), string(places)
	}
	text, places := nested(5)
	out, _, _ := fitExpanded(text, places, 4096, tok, "")
	_, after, ok := strings.Cut(out, "[g5-1] ")
	m := foldRe.FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatalf("group 5's entries are not folded:\n%s", out)
	}
	text, places = nested(-1) // scrolled away: group 5 is below the screen
	out, n, _ := fitExpanded(text, places, 1024, tok, m[1])
	if n > 1024 || !strings.Contains(out, "[g5-2] ") || !strings.Contains(out, `listitem "Group 5"`) {
		t.Fatalf("expand %s: %d tokens:\n%s", m[1], n, out)
	}
	prev := -1
	for _, l := range strings.Split(out, "\n") {
		d := len(l) - len(strings.TrimLeft(l, "\t"))
		if d > prev+1 {
			t.Fatalf("a line without its parent: %q\n%s", l, out)
		}
		prev = d
	}
}

// Off-screen text goes before off-screen elements, which go before the
// screen's: with room for some of the rows, none of the rows' cell texts
// stays while a row's link is gone, and a line's ancestors stay with it.
func TestBudgetDropsInItsOrder(t *testing.T) {
	tok := byteBPE(t)
	text, places := pageOf(true, 300) // no fold: the rows differ in shape
	out, n, _ := fit(text, places, 2048, tok)
	if n > 2048 {
		t.Fatalf("%d tokens", n)
	}
	lines := strings.Split(out, "\n")
	links, texts := 0, 0
	for i, l := range lines {
		if strings.Contains(l, "] link \"Open") {
			links++
		}
		if strings.HasPrefix(l, "\t\t\tcell \"Item") {
			texts++
		}
		// Every kept line's parent is kept: the line above it at a lower depth.
		depth := len(l) - len(strings.TrimLeft(l, "\t"))
		if i > 0 && depth > 0 {
			prev := lines[i-1]
			if pd := len(prev) - len(strings.TrimLeft(prev, "\t")); pd < depth-1 {
				t.Fatalf("line %d lost its parent: %q after %q", i, l, prev)
			}
		}
	}
	if links == 0 || links == 300 {
		t.Fatalf("%d of the 300 links kept: the budget should hold some", links)
	}
	if texts > 0 {
		t.Fatalf("%d off-screen cell texts kept while off-screen links were dropped:\n%s", texts, out)
	}
}

// A title longer than the whole budget is cut to fit.
func TestBudgetCutsWhatNothingElseFits(t *testing.T) {
	tok := byteBPE(t)
	text := "RootWebArea " + fmt.Sprintf("%q", strings.Repeat("Ω title ", 400)) + "\n\t[a] link \"A\""
	out, n, cut := fit(text, "00", budget.MinTokens, tok)
	if n > budget.MinTokens || !cut || n != tok.Count(out) {
		t.Fatalf("%d tokens, cut %v:\n%s", n, cut, out)
	}
}

// The cost of counting and pruning one observation (the lead runs it on a
// quiet machine): pages of 300 and 5,000 rows over budget, against
// counting alone; rows that differ in shape (no fold) cost the most.
func BenchmarkBudget(b *testing.B) {
	tok := byteBPE(b)
	for _, rows := range []int{300, 5000} {
		for _, alternate := range []bool{false, true} {
			text, places := pageOf(alternate, rows)
			name := fmt.Sprintf("rows-%d-fold-%v", rows, !alternate)
			b.Run(name+"/count", func(b *testing.B) {
				for b.Loop() {
					tok.Count(text)
				}
			})
			for _, max := range []int{256, 4096} {
				b.Run(fmt.Sprintf("%s/prune-%d", name, max), func(b *testing.B) {
					for b.Loop() {
						fit(text, places, max, tok)
					}
				})
			}
		}
	}
}
