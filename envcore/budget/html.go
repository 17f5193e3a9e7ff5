package budget

import (
	"html"
	"strings"
)

// The HTML view under a token budget (ObserveOptions.View "html"). The
// page writes it as an outline (parser_views.js, htmlOutlineText): a first
// line with the title, then one line per element or text, indented by
// depth with tabs (the page's elements at depth 1); an element whose
// children are all texts is one whole line, start tag to end tag, and
// every other element's end tag is a line of its own after its children.
// The pruner works on the other lines as on the axtree's, each element
// holding its end tag, which it writes after the last line it keeps under
// the element, so the text is HTML still.
var htmlView = textView{parse: parseHTMLLines, cuttable: htmlCuttable, quote: escapeHTMLText,
	note:  func(s string) string { return "<!-- " + strings.ReplaceAll(s, "--", "- -") + " -->" },
	title: func(title string) string { return "<title>" + escapeHTMLText(title) + "</title>" }}

// escapeHTMLText escapes a text as parser_views.js does (escText).
var escapeHTMLText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// htmlRoles are the roles of the tags the pruner keeps as the page's
// outline (structural).
var htmlRoles = map[string]string{
	"h1": "heading", "h2": "heading", "h3": "heading", "h4": "heading", "h5": "heading", "h6": "heading",
	"nav": "navigation", "main": "main", "header": "banner", "footer": "contentinfo", "aside": "complementary",
	"section": "region", "search": "search", "form": "form", "dialog": "dialog",
}

// parseHTMLLines reads the outline's lines: depth, role (the tag's, or the
// tag; StaticText for a text), whether the element has a semantic id, and
// the end tag of an element written on a line of its own (that line is
// the element's, not one of the result's).
func parseHTMLLines(text, places string) []axLine {
	raw := strings.Split(text, "\n")
	lines := make([]axLine, 0, len(raw))
	var stack []int // the last line at each depth
	for i, s := range raw {
		l := axLine{kept: true, parent: -1, place: '0', role: "StaticText"}
		if i < len(places) {
			l.place = places[i]
		}
		for l.depth < len(s) && s[l.depth] == '\t' {
			l.depth++
		}
		l.text = s
		if l.depth > 0 { // the page's elements start at depth 1, written at 0
			l.text = s[1:]
			l.indent = s[1:l.depth]
		}
		rest := s[l.depth:]
		for len(stack) > 0 && lines[stack[len(stack)-1]].depth > l.depth {
			stack = stack[:len(stack)-1]
		}
		if strings.HasPrefix(rest, "</") {
			if n := len(stack); n > 0 && lines[stack[n-1]].depth == l.depth {
				lines[stack[n-1]].close = l.text
			}
			continue
		}
		switch {
		case i == 0:
			l.role = "title"
		case strings.HasPrefix(rest, "<!--"):
			l.role = "comment"
		case strings.HasPrefix(rest, "<"):
			tag := rest[1:]
			if j := strings.IndexAny(tag, " >"); j >= 0 {
				tag = tag[:j]
			}
			l.role = tag
			if r, ok := htmlRoles[tag]; ok {
				l.role = r
			}
			l.hasID = strings.Contains(rest[:startTagEnd(rest)], ` data-semantic-id="`)
		}
		lines, stack = appendLine(lines, stack, l)
	}
	return lines
}

// startTagEnd is the index just past the '>' that ends the start tag s
// begins with (attribute values are quoted, with their quotes escaped).
func startTagEnd(s string) int {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case '>':
			if !quoted {
				return i + 1
			}
		}
	}
	return len(s)
}

// htmlCuttable: texts, the title, and the text of an element without an
// id that is one whole line (a paragraph); an element's own name (a link's
// text, a button's) is kept, as in the axtree.
func htmlCuttable(l axLine, i int) (before, text, after string, ok bool) {
	rest := l.text[len(l.indent):]
	switch {
	case l.role == "StaticText":
		return l.indent, html.UnescapeString(rest), "", true
	case i > 0 && (l.role == "comment" || l.hasID || l.children > 0):
		return "", "", "", false
	}
	open := startTagEnd(rest)
	end := strings.LastIndex(rest, "</")
	if end < open {
		return "", "", "", false // a void element
	}
	return l.indent + rest[:open], html.UnescapeString(rest[open:end]), rest[end:], true
}
