package budget

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Counter counts the tokens of a text as the trainer's tokenizer does
// (tokenizer.Tokenizer, loaded from a Hugging Face tokenizer.json).
type Counter interface {
	Count(text string) int
}

// MinTokens is the smallest budget: the page's title line and the line
// that says what was left out need room.
const MinTokens = 128

// The pruning of an observation over its budget (docs/envcore.md, "Token
// budget"). Steps 1 and 2 apply to every text over its budget; step 3 runs
// only while the text is still over, and drops lines from the bottom of the
// page up; a line goes only once it has no line left under it, so every
// kept line keeps its ancestors, and every kept element its id.
//
//  1. long texts (StaticText over textKeep characters, the title) are cut,
//     with a marker saying how much was cut;
//  2. runs of like siblings (the same role and shape, collapseRun or more)
//     off the screen are collapsed: the first collapseKeep stay, the others
//     become one line "… N more items like this", with the fold's id
//     (foldID) that the expand action takes;
//  3. then whole lines are dropped, class by class: off-screen text and
//     decoration, off-screen elements with ids, off-screen headings and
//     landmarks, on-screen text, on-screen elements with ids, on-screen
//     headings and landmarks (and the lines of step 2), and last the
//     children an expand asked for, whole, from the last up (those dropped
//     are folded again, with the id of the first of them);
//  4. a last line says what was left out and how to see it (scroll, expand).
//
// An expand (Expansion) names a fold: the children of the fold's parent
// from its first item on are not collapsed and are kept before anything
// else.
const (
	textKeep     = 100
	textCutOver  = 120
	collapseRun  = 4
	collapseKeep = 2
)

// pruneClass is the order in which lines are dropped, first to last.
type pruneClass int

const (
	offText pruneClass = iota
	offElement
	offStructure
	onText
	onElement
	onStructure
	expanded // the children an expand asked for, and their lines
	classes
)

// structural roles stay longest: they are the page's outline.
var structural = map[string]bool{
	"heading": true, "navigation": true, "main": true, "banner": true, "contentinfo": true,
	"complementary": true, "region": true, "search": true, "form": true, "dialog": true,
}

// axLine is one line of a budgeted text view (the axtree, or the HTML
// outline).
type axLine struct {
	text     string
	indent   string // the tabs text starts with
	close    string // the line that ends this element, when the view needs one (HTML)
	depth    int
	role     string
	hasID    bool
	place    byte // '0' on the screen, 'a' above, 'b' below or beside
	parent   int
	cost     int // tokens of "\n"+text (the first line: of text)
	kept     bool
	children int    // kept lines whose parent this is
	collapse int    // > 0: this line stands for so many collapsed siblings
	key      uint32 // the line's place in the tree (its path of roles): folds name their parent by it
	exp      bool   // under an expanded fold
	pin      bool   // the expanded fold's parent or an ancestor of it: never folded
}

// Result is a budgeted text view.
type Result struct {
	Text string
	// Tokens is Text's count, as the Counter counts the whole text.
	Tokens int
	// Truncated is whether the text was over its budget and pruned.
	Truncated bool
	// Folds are the ids of the fold lines Text shows, sorted: the ids an
	// expand may name.
	Folds []string
}

// A fold's id names the parent whose children it collapsed (by the path of
// roles from the page's root, hashed) and the first child it stands for:
// "fold-1a2b3c4d-40". It depends only on the page's tree, so it stays the
// same while the page does, scrolled or not.
const foldPrefix = "fold-"

func foldID(parent uint32, first int) string {
	return fmt.Sprintf("%s%08x-%d", foldPrefix, parent, first)
}

// IsFoldID is whether id is written as a fold's id ("fold-1a2b3c4d-40"),
// the argument the expand action takes.
func IsFoldID(id string) bool {
	_, _, ok := parseFoldID(id)
	return ok
}

// parseFoldID reads a fold id back.
func parseFoldID(id string) (parent uint32, first int, ok bool) {
	rest, found := strings.CutPrefix(id, foldPrefix)
	h, n, found2 := strings.Cut(rest, "-")
	if !found || !found2 || len(h) != 8 {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return 0, 0, false
	}
	f, err := strconv.Atoi(n)
	if err != nil || f < 0 || strconv.Itoa(f) != n {
		return 0, 0, false
	}
	return uint32(v), f, true
}

// View is the format of a text view: what a line is, what of it may be
// shortened, how the pruner writes its own lines.
type View int

const (
	// AXTree is the accessibility-tree text view (parser_views.js,
	// axtreeText): one node a line, indented by depth with tabs.
	AXTree View = iota
	// HTML is the HTML outline (parser_views.js, htmlOutlineText): one
	// element or text a line, end tags on lines of their own.
	HTML
)

func (v View) textView() textView {
	if v == HTML {
		return htmlView
	}
	return axtreeView
}

// Title is the text view of a page that has no lines but its title.
func (v View) Title(title string) string { return v.textView().title(title) }

// textView is what the pruner knows of a text view's format.
type textView struct {
	// parse reads the text's lines and their places.
	parse func(text, places string) []axLine
	// cuttable splits line i into the text that may be shortened and what
	// stands before and after it (ok false: nothing to shorten).
	cuttable func(l axLine, i int) (before, text, after string, ok bool)
	// quote writes a shortened text back as the view writes texts.
	quote func(s string) string
	// note writes a line of the pruner's own (a fold, the closing line).
	note func(s string) string
	// title is the text of a page the view has no lines for.
	title func(title string) string
}

// axtreeView is the axtree text view (parser_views.js, axtreeText).
var axtreeView = textView{parse: parseAXLines, cuttable: axCuttable, quote: jsQuote,
	note:  func(s string) string { return s },
	title: func(title string) string { return "RootWebArea " + jsQuote(title) }}

// axCuttable: StaticText lines and the title line.
func axCuttable(l axLine, i int) (string, string, string, bool) {
	prefix := l.indent + "StaticText "
	if i == 0 {
		prefix = "RootWebArea "
	} else if l.role != "StaticText" || l.hasID {
		return "", "", "", false
	}
	var s string
	if json.Unmarshal([]byte(strings.TrimPrefix(l.text, prefix)), &s) != nil {
		return "", "", "", false
	}
	return prefix, s, "", true
}

// Fit prunes text, written in view v (with its lines' places, one byte a
// line: '0' on the screen, 'a' above it, 'b' below or beside it), to at
// most max tokens as c counts them, the fold expand names (a fold id, or
// "") shown first. The same text, places and expand always give the same
// result.
func Fit(text, places string, max int, c Counter, expand string, v View) Result {
	view := v.textView()
	if n := c.Count(text); n <= max {
		return Result{Text: text, Tokens: n}
	}
	lines := view.parse(text, places)
	p := &pruner{lines: lines, c: c, kids: make([][]int, len(lines)), view: view}
	p.tree()
	if k, first, ok := parseFoldID(expand); ok {
		p.expand(k, first)
	}
	p.shorten()
	p.collapse()
	p.cost() // of the lines left: a fold spares counting what it stands for
	// The closing line is counted at its longest (no count exceeds the
	// number of lines), so that it always fits.
	n := len(lines)
	reserve := c.Count("\n" + view.note(summaryLine(n, n, n, n, n, p.expanded)))
	target := max - reserve
	for {
		for k := pruneClass(0); k < classes && p.total() > target; k++ {
			if k == expanded {
				p.dropExpanded(target)
			} else {
				p.drop(k, target)
			}
		}
		out := p.render()
		n := c.Count(out)
		if n <= max {
			return Result{Text: out, Tokens: n, Truncated: true, Folds: p.foldIDs()}
		}
		if p.kept() <= 1 {
			// Nothing left to drop but the title: cut the text itself.
			out = cutToFit(out, max, c)
			return Result{Text: out, Tokens: c.Count(out), Truncated: true}
		}
		target = max0(target-(n-max), 0) // lines' costs do not add up exactly: aim lower
	}
}

type pruner struct {
	view                          textView
	lines                         []axLine
	kids                          [][]int // each line's children, in order
	c                             Counter
	shortened                     int
	above, below, onScreen, folds int
	// expanded is the fold an expand asked for ("" when none applies), and
	// exp the children it shows (line indices), in order; tail is the
	// first of them folded again (len(exp) when none is).
	expanded  string
	expParent int
	expFirst  int
	exp       []int
	tail      int
}

// tree lists the lines' children and gives every line its key: its
// parent's key, its role and its rank among its parent's children of that
// role, hashed.
func (p *pruner) tree() {
	for i, l := range p.lines {
		if l.parent >= 0 {
			p.kids[l.parent] = append(p.kids[l.parent], i)
		}
	}
	var b [4]byte
	for i := range p.lines {
		if i == 0 || p.lines[i].parent < 0 {
			h := fnv.New32a()
			h.Write([]byte(p.lines[i].role))
			p.lines[i].key = h.Sum32()
		}
		rank := map[string]int{}
		for _, k := range p.kids[i] {
			h := fnv.New32a()
			binary.LittleEndian.PutUint32(b[:], p.lines[i].key)
			h.Write(b[:])
			h.Write([]byte(p.lines[k].role))
			fmt.Fprintf(h, "#%d", rank[p.lines[k].role])
			rank[p.lines[k].role]++
			p.lines[k].key = h.Sum32()
		}
	}
}

// expand marks the children of the line keyed parent from its first-th on,
// and their lines, as shown first. A key no line has changes nothing (the
// page changed since the fold was shown).
func (p *pruner) expand(parent uint32, first int) {
	for i, l := range p.lines {
		if l.key != parent || first >= len(p.kids[i]) {
			continue
		}
		p.expanded, p.expParent, p.expFirst = foldID(parent, first), i, first
		for a := i; a >= 0; a = p.lines[a].parent {
			p.lines[a].pin = true
		}
		for _, k := range p.kids[i][first:] {
			p.exp = append(p.exp, k)
			for j := k; j < len(p.lines) && (j == k || p.lines[j].depth > p.lines[k].depth); j++ {
				p.lines[j].exp = true
			}
		}
		p.tail = len(p.exp)
		return
	}
}

// parseAXLines reads the lines' depth (tabs), id and role.
func parseAXLines(text, places string) []axLine {
	raw := strings.Split(text, "\n")
	lines := make([]axLine, 0, len(raw))
	var stack []int
	for i, s := range raw {
		l := axLine{text: s, kept: true, parent: -1, place: '0'}
		if i < len(places) {
			l.place = places[i]
		}
		for l.depth < len(s) && s[l.depth] == '\t' {
			l.depth++
		}
		l.indent = s[:l.depth]
		rest := s[l.depth:]
		if strings.HasPrefix(rest, "[") {
			if j := strings.Index(rest, "] "); j > 0 {
				l.hasID, rest = true, rest[j+2:]
			}
		}
		l.role, _, _ = strings.Cut(rest, " ")
		lines, stack = appendLine(lines, stack, l)
	}
	return lines
}

// appendLine adds l to lines as a child of the last line before it of a
// smaller depth; stack holds the last line at each depth so far.
func appendLine(lines []axLine, stack []int, l axLine) ([]axLine, []int) {
	for len(stack) > 0 && lines[stack[len(stack)-1]].depth >= l.depth {
		stack = stack[:len(stack)-1]
	}
	if len(stack) > 0 {
		l.parent = stack[len(stack)-1]
		lines[l.parent].children++
	}
	return append(lines, l), append(stack, len(lines))
}

func (p *pruner) cost() {
	for i := range p.lines {
		if p.lines[i].kept && p.lines[i].collapse == 0 {
			p.lines[i].cost = p.lineCost(i)
		}
	}
}

func (p *pruner) lineCost(i int) int {
	l := p.lines[i]
	n := 0
	if l.close != "" {
		n = p.c.Count("\n" + l.close)
	}
	if i == 0 {
		return n + p.c.Count(l.text)
	}
	return n + p.c.Count("\n"+l.text)
}

func (p *pruner) kept() int {
	n := 0
	for _, l := range p.lines {
		if l.kept {
			n++
		}
	}
	return n
}

func max0(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func (p *pruner) total() int {
	n := 0
	for _, l := range p.lines {
		if l.kept {
			n += l.cost
		}
	}
	return n
}

// shorten cuts long texts (the view's cuttable ones: texts and the title).
func (p *pruner) shorten() {
	for i := range p.lines {
		l := &p.lines[i]
		before, s, after, ok := p.view.cuttable(*l, i)
		if !ok || utf8.RuneCountInString(s) <= textCutOver {
			continue
		}
		r := []rune(s)
		l.text = before + p.view.quote(string(r[:textKeep])+"…") + fmt.Sprintf(" (%d more characters)", len(r)-textKeep) + after
		p.shortened++
	}
}

// jsQuote is JSON.stringify's string, as parser_views.js writes them.
func jsQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// shapes are the lines' roles with the roles under them, ids and texts
// aside, hashed: like siblings (the rows of a table, the items of a list)
// share theirs.
func (p *pruner) shapes(kids [][]int) []uint64 {
	out := make([]uint64, len(p.lines))
	for i := len(p.lines) - 1; i >= 0; i-- { // children before their parent
		l := p.lines[i]
		h := fnv.New64a()
		h.Write([]byte(l.role))
		if l.hasID {
			h.Write([]byte{'#'})
		}
		var b [8]byte
		for _, k := range kids[i] {
			binary.LittleEndian.PutUint64(b[:], out[k])
			h.Write(b[:])
		}
		out[i] = h.Sum64()
	}
	return out
}

// collapse folds runs of like siblings off the screen (not the children
// an expand shows).
func (p *pruner) collapse() {
	shapes := p.shapes(p.kids)
	for parent, ch := range p.kids {
		if len(p.exp) > 0 && parent == p.expParent {
			ch = ch[:p.expFirst]
		}
		for a := 0; a < len(ch); {
			b := a + 1
			for b < len(ch) && shapes[ch[b]] == shapes[ch[a]] {
				b++
			}
			if b-a >= collapseRun {
				p.fold(ch, a+collapseKeep, b)
			}
			a = b
		}
	}
}

// fold replaces the off-screen lines of the run ch[from:to] (siblings) by
// one line per stretch of them.
func (p *pruner) fold(ch []int, from, to int) {
	for a := from; a < to; {
		if p.lines[ch[a]].place == '0' || p.lines[ch[a]].pin {
			a++
			continue
		}
		b := a
		for b < to && p.lines[ch[b]].place == p.lines[ch[a]].place && !p.lines[ch[b]].pin {
			b++
		}
		for _, i := range ch[a:b] {
			p.dropTree(i)
		}
		p.foldLine(ch[a], a, b-a)
		p.folds += b - a
		a = b
	}
}

// foldLine makes line i, the rank-th child of its parent, the line of a
// fold of n siblings from it on.
func (p *pruner) foldLine(i, rank, n int) {
	l := &p.lines[i]
	l.kept, l.collapse, l.children, l.close = true, n, 0, ""
	if l.parent >= 0 {
		p.lines[l.parent].children++
	}
	// The action's argument, quoted: a fold id has nothing to escape.
	id := `"` + foldID(p.lines[l.parent].key, rank) + `"`
	where := "below the screen: scroll down, or expand(" + id + "), to see them"
	switch l.place {
	case 'a':
		where = "above the screen: scroll up, or expand(" + id + "), to see them"
	case '0':
		where = "expand(" + id + ") to see them"
	}
	l.text = l.indent + p.view.note(fmt.Sprintf("… %d more items like this (%s)", n, where))
	l.role, l.hasID = "", false
	l.cost = p.lineCost(i)
}

// dropExpanded drops the children an expand shows, whole, from the last
// up, until the total is within target; those dropped are folded again
// into one line, named by the first of them. When all are folded and it is
// still over, that line goes too.
func (p *pruner) dropExpanded(target int) {
	total := p.total()
	for p.tail > 0 && total > target {
		j := p.tail - 1
		i := p.exp[j]
		if p.tail < len(p.exp) { // the fold so far: it moves up to i
			old := p.exp[p.tail]
			total -= p.lines[old].cost
			p.lines[old].kept = false
			p.lines[p.lines[old].parent].children--
		}
		for k := i; k < len(p.lines) && (k == i || p.lines[k].depth > p.lines[i].depth); k++ {
			if p.lines[k].kept {
				total -= p.lines[k].cost
			}
		}
		p.dropTree(i)
		p.foldLine(i, p.expFirst+j, len(p.exp)-j)
		total += p.lines[i].cost
		p.tail = j
	}
	if p.tail == 0 && len(p.exp) > 0 && total > target {
		if l := &p.lines[p.exp[0]]; l.kept {
			l.kept = false
			p.lines[l.parent].children--
			p.count(l.place, len(p.exp))
		}
	}
}

// foldIDs are the ids of the kept fold lines, sorted.
func (p *pruner) foldIDs() []string {
	var out []string
	for i, l := range p.lines {
		if l.kept && l.collapse > 0 {
			rank := slices.Index(p.kids[l.parent], i)
			out = append(out, foldID(p.lines[l.parent].key, rank))
		}
	}
	slices.Sort(out)
	return out
}

// count adds n lines left out at place to the closing line's counts.
func (p *pruner) count(place byte, n int) {
	switch place {
	case 'a':
		p.above += n
	case '0':
		p.onScreen += n
	default:
		p.below += n
	}
}

// dropTree drops line i and every line under it.
func (p *pruner) dropTree(i int) {
	d := p.lines[i].depth
	for j := i + 1; j < len(p.lines) && p.lines[j].depth > d; j++ {
		p.lines[j].kept = false
	}
	p.lines[i].kept = false
	p.lines[i].children = 0
	if pa := p.lines[i].parent; pa >= 0 {
		p.lines[pa].children--
	}
}

func (p *pruner) class(l axLine) pruneClass {
	if l.exp {
		return expanded
	}
	if l.collapse > 0 {
		// A fold says what is where and is the agent's way to it
		// (expand): it stays as long as the screen's outline.
		return onStructure
	}
	k := offText
	switch {
	case structural[l.role]:
		k = offStructure
	case l.hasID:
		k = offElement
	}
	if l.place == '0' {
		k += onText - offText
	}
	return k
}

// drop removes lines of class k or an earlier one from the bottom of the
// page up until the total is within target; a line goes once no kept line
// is under it.
func (p *pruner) drop(k pruneClass, target int) {
	total := p.total()
	for i := len(p.lines) - 1; i > 0 && total > target; i-- {
		l := &p.lines[i]
		if !l.kept || l.children > 0 || p.class(*l) > k {
			continue
		}
		l.kept = false
		total -= l.cost
		if l.parent >= 0 {
			p.lines[l.parent].children--
		}
		n := 1
		if l.collapse > 0 {
			n = l.collapse
			p.folds -= n
		}
		p.count(l.place, n)
	}
}

// render writes the kept lines, each element a view closes closed after
// the last kept line under it, and the closing line.
func (p *pruner) render() string {
	var b strings.Builder
	var open []int // kept lines whose close is still to write
	closeTo := func(depth int) {
		for len(open) > 0 && p.lines[open[len(open)-1]].depth >= depth {
			b.WriteByte('\n')
			b.WriteString(p.lines[open[len(open)-1]].close)
			open = open[:len(open)-1]
		}
	}
	for i, l := range p.lines {
		if !l.kept {
			continue
		}
		closeTo(l.depth)
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.text)
		if l.close != "" {
			open = append(open, i)
		}
	}
	closeTo(0)
	b.WriteByte('\n')
	folds := p.folds + len(p.exp) - p.tail
	if p.tail == 0 && len(p.exp) > 0 && !p.lines[p.exp[0]].kept {
		folds -= len(p.exp) // the expanded part's own fold went too
	}
	b.WriteString(p.view.note(summaryLine(p.shortened, folds, p.above, p.below, p.onScreen, p.expanded)))
	return b.String()
}

// summaryLine is the last line of a pruned observation: what was left
// out and how to see it.
func summaryLine(shortened, folds, above, below, onScreen int, expanded string) string {
	var parts []string
	if expanded != "" {
		parts = append(parts, "showing "+expanded+" first (expanded)")
	}
	if shortened > 0 {
		parts = append(parts, fmt.Sprintf("%d long texts cut", shortened))
	}
	if folds > 0 {
		parts = append(parts, fmt.Sprintf("%d like items collapsed (scroll, or expand a fold, to see them)", folds))
	}
	if above > 0 {
		parts = append(parts, fmt.Sprintf("%d lines above the screen left out (scroll up)", above))
	}
	if below > 0 {
		parts = append(parts, fmt.Sprintf("%d lines below the screen left out (scroll down)", below))
	}
	if onScreen > 0 {
		parts = append(parts, fmt.Sprintf("%d lines at the bottom of the screen left out (scroll down)", onScreen))
	}
	return "[observation cut to its token budget: " + strings.Join(parts, "; ") + "]"
}

// cutToFit cuts text from its end until it counts at most max tokens (a
// last resort when even the title does not fit).
func cutToFit(text string, max int, c Counter) string {
	r := []rune(text)
	lo, hi := 0, len(r)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.Count(string(r[:mid])) <= max {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(r[:lo])
}
