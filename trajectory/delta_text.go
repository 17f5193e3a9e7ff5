package trajectory

import (
	"fmt"
	"regexp"
	"strings"
)

// piece is one piece of a text view: an element of the HTML or a line of
// the accessibility tree, with the semantic id it carries, if any.
type piece struct {
	text, id string
}

// maxLCSCells bounds the table of the longest-common-subsequence diff of
// the pieces two texts do not share at their ends; past it the middle is
// replaced as one edit (a new page, mostly).
const maxLCSCells = 4 << 20

var htmlIDAttr = regexp.MustCompile(`^<[A-Za-z][^>]*?\sdata-semantic-id="([^"]*)"`)

// splitHTML cuts the HTML before every start tag: a piece is an element's
// start tag, its text and the end tags and text that follow, up to the
// next start tag. The pieces put together are the HTML.
func splitHTML(s string) []piece {
	var out []piece
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == '<' && i+1 < len(s) && isLetter(s[i+1]) {
			out = append(out, htmlPiece(s[start:i]))
			start = i
		}
	}
	if start < len(s) {
		out = append(out, htmlPiece(s[start:]))
	}
	return out
}

func htmlPiece(t string) piece {
	p := piece{text: t}
	if m := htmlIDAttr.FindStringSubmatch(t); m != nil {
		p.id = m[1]
	}
	return p
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

var axLineID = regexp.MustCompile(`^\t*\[([^\]]*)\] `)

// splitLines cuts the accessibility-tree text into lines, each with its
// newline; a line's id is its [id].
func splitLines(s string) []piece {
	var out []piece
	for len(s) > 0 {
		n := strings.IndexByte(s, '\n') + 1
		if n == 0 {
			n = len(s)
		}
		p := piece{text: s[:n]}
		if m := axLineID.FindStringSubmatch(p.text); m != nil {
			p.id = m[1]
		}
		out = append(out, p)
		s = s[n:]
	}
	return out
}

// uniqueIDs maps each id on exactly one piece to its position.
func uniqueIDs(ps []piece) map[string]int {
	m := map[string]int{}
	for i, p := range ps {
		if p.id == "" {
			continue
		}
		if _, dup := m[p.id]; dup {
			m[p.id] = -1
			continue
		}
		m[p.id] = i
	}
	for id, i := range m {
		if i < 0 {
			delete(m, id)
		}
	}
	return m
}

// diffPieces is the edits from pieces a to pieces b: the pieces both
// share at their ends are kept, the middle is aligned by its longest
// common subsequence, and each run of pieces removed and added becomes
// changes (pairwise), then removals or one insertion. A middle too long to
// align, or when less than a quarter of b is shared with a (a new page:
// its delta would be about as long as the new text), is replaced whole.
func diffPieces(a, b []piece) *TextDelta {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre].text == b[pre].text {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf].text == b[len(b)-1-suf].text {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ids := uniqueIDs(a)
	td := &TextDelta{Edits: []TextEdit{}}
	hunk := func(at int, del []int, ins []piece) {
		k := min(len(del), len(ins))
		for n, i := range del {
			e := TextEdit{Op: EditRemove}
			if n < k {
				e = TextEdit{Op: EditChange, Text: ins[n].text}
			}
			if id := a[i].id; id != "" && ids[id] == i {
				e.ID = id
			} else {
				e.At = ptr(i)
			}
			td.Edits = append(td.Edits, e)
		}
		if len(ins) > k {
			var sb strings.Builder
			for _, p := range ins[k:] {
				sb.WriteString(p.text)
			}
			td.Edits = append(td.Edits, TextEdit{Op: EditInsert, At: ptr(at + len(del)), Text: sb.String()})
		}
	}
	ca, cb, shared := internPieces(ma, mb)
	total := textLen(b)
	if len(ma)*len(mb) > maxLCSCells || 4*(shared+total-textLen(mb)) < total {
		del := make([]int, len(ma))
		for i := range del {
			del[i] = pre + i
		}
		hunk(pre, del, mb)
		return td
	}
	// lcs[i*(m+1)+j] is the length of the longest common subsequence of
	// ma[i:] and mb[j:].
	n, m := len(ma), len(mb)
	lcs := make([]int32, (n+1)*(m+1))
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if ca[i] == cb[j] {
				lcs[i*(m+1)+j] = lcs[(i+1)*(m+1)+j+1] + 1
			} else {
				lcs[i*(m+1)+j] = max(lcs[(i+1)*(m+1)+j], lcs[i*(m+1)+j+1])
			}
		}
	}
	var del []int
	var ins []piece
	at := 0
	flush := func() {
		if len(del) > 0 || len(ins) > 0 {
			hunk(at, del, ins)
		}
		del, ins = nil, nil
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && ca[i] == cb[j]:
			flush()
			i, j = i+1, j+1
		case j == m || i < n && lcs[(i+1)*(m+1)+j] >= lcs[i*(m+1)+j+1]:
			if len(del) == 0 && len(ins) == 0 {
				at = pre + i
			}
			del = append(del, pre+i)
			i++
		default:
			if len(del) == 0 && len(ins) == 0 {
				at = pre + i
			}
			ins = append(ins, mb[j])
			j++
		}
	}
	flush()
	return td
}

// internPieces numbers the distinct pieces of a and b, so the alignment
// compares numbers, and counts the bytes of b's pieces that a has too (as
// many times as a has them): an upper bound of what an alignment keeps.
func internPieces(a, b []piece) (ca, cb []int32, shared int) {
	codes := map[string]int32{}
	left := map[int32]int{} // a's pieces not yet matched by one of b's
	code := func(t string) int32 {
		c, ok := codes[t]
		if !ok {
			c = int32(len(codes))
			codes[t] = c
		}
		return c
	}
	ca, cb = make([]int32, len(a)), make([]int32, len(b))
	for i, p := range a {
		ca[i] = code(p.text)
		left[ca[i]]++
	}
	for j, p := range b {
		cb[j] = code(p.text)
		if left[cb[j]] > 0 {
			left[cb[j]]--
			shared += len(p.text)
		}
	}
	return ca, cb, shared
}

func textLen(ps []piece) int {
	n := 0
	for _, p := range ps {
		n += len(p.text)
	}
	return n
}

func ptr(i int) *int { return &i }

// applyPieces applies td to pieces a and returns the new text.
func applyPieces(a []piece, td *TextDelta) (string, error) {
	ids := uniqueIDs(a)
	at := make([]*TextEdit, len(a))      // the change or removal of each piece
	before := make([][]string, len(a)+1) // insertions before each piece
	for k := range td.Edits {
		e := &td.Edits[k]
		switch e.Op {
		case EditInsert:
			if e.At == nil || *e.At < 0 || *e.At > len(a) {
				return "", fmt.Errorf("edit %d inserts at %v; the text has %d pieces", k, atString(e.At), len(a))
			}
			before[*e.At] = append(before[*e.At], e.Text)
		case EditChange, EditRemove:
			i := -1
			switch {
			case e.ID != "":
				p, ok := ids[e.ID]
				if !ok {
					return "", fmt.Errorf("edit %d names id %q, which is not on exactly one piece of the text", k, e.ID)
				}
				i = p
			case e.At != nil && *e.At >= 0 && *e.At < len(a):
				i = *e.At
			default:
				return "", fmt.Errorf("edit %d (%s) names no piece: give id or at (0 to %d)", k, e.Op, len(a)-1)
			}
			if at[i] != nil {
				return "", fmt.Errorf("edit %d edits piece %d a second time", k, i)
			}
			at[i] = e
		default:
			return "", fmt.Errorf("edit %d has op %q: use change, remove or insert", k, e.Op)
		}
	}
	var sb strings.Builder
	for i := 0; i <= len(a); i++ {
		for _, t := range before[i] {
			sb.WriteString(t)
		}
		if i == len(a) {
			break
		}
		switch e := at[i]; {
		case e == nil:
			sb.WriteString(a[i].text)
		case e.Op == EditChange:
			sb.WriteString(e.Text)
		}
	}
	return sb.String(), nil
}

func atString(p *int) string {
	if p == nil {
		return "nothing"
	}
	return fmt.Sprint(*p)
}
