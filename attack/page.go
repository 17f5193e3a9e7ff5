package attack

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// page is what the channels need to know of an HTML document, read in one
// pass of its tokens: byte offsets into the document as the site sent it,
// so that a channel adds its fragment and changes nothing else.
type page struct {
	bodyAt  int // just after <body ...>, or -1
	titleAt int // just after the head's <title>, or -1
	size    int // the document's length
	mainEnd int // the start of </main>, or -1
	bodyEnd int // the start of </body>, or -1
	lists   []list
	// named are elements a person acts on (a button, a link, a field),
	// main's first: where their start tags end, the offset of the ">" (or
	// "/>") an attribute goes before.
	named []int
}

// list is a list-like container: several direct children with the same
// tag and class (a <ul>'s items, a section's <article class="review">s).
type list struct {
	tag, class string // the children's
	starts     []int  // where each child's start tag begins
	end        int    // the start of the container's end tag
	inMain     bool
}

// open is an element being read.
type open struct {
	name   string
	skip   bool // in chrome (nav, header, footer), a form, a hidden or menu-like element
	inMain bool
	kids   map[string]*list
}

// noList are elements whose children are no list a comment belongs in.
var noList = map[string]bool{"nav": true, "header": true, "footer": true, "form": true, "select": true, "datalist": true,
	"head": true, "script": true, "style": true, "template": true, "svg": true}

// kidTags are the tags a list's entries may have for a comment to join.
var kidTags = map[string]bool{"li": true, "article": true, "div": true, "section": true, "tr": true, "p": true, "dd": true}

// void elements have no end tag.
var void = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

// readPage reads doc's structure.
func readPage(doc []byte) *page {
	p := &page{bodyAt: -1, titleAt: -1, mainEnd: -1, bodyEnd: -1}
	z := html.NewTokenizer(bytes.NewReader(doc))
	var stack []*open
	var namedMain, namedOther []int
	pos := 0
	closeTo := func(name string, at int) {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].name != name {
				continue
			}
			for _, o := range stack[i:] {
				for _, l := range o.kids {
					if len(l.starts) >= 2 && !o.skip {
						l.end = at
						p.lists = append(p.lists, *l)
					}
				}
			}
			stack = stack[:i]
			return
		}
	}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		start := pos
		pos += len(z.Raw())
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			tag := string(name)
			attrs := map[string]string{}
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			if tag == "li" {
				// An <li> closes the open <li> of its list.
				for i := len(stack) - 1; i >= 0 && stack[i].name != "ul" && stack[i].name != "ol"; i-- {
					if stack[i].name == "li" {
						closeTo("li", start)
						break
					}
				}
			}
			var parent *open
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			inMain := tag == "main" || (parent != nil && parent.inMain)
			skip := noList[tag] || attrs["hidden"] != "" || hasKey(attrs, "hidden") || attrs["role"] == "listbox" || attrs["role"] == "menu" || (parent != nil && parent.skip)
			if parent != nil && kidTags[tag] && !parent.skip {
				sig := tag + "." + attrs["class"]
				l := parent.kids[sig]
				if l == nil {
					l = &list{tag: tag, class: attrs["class"], inMain: inMain}
					parent.kids[sig] = l
				}
				l.starts = append(l.starts, start)
			}
			if tag == "body" && p.bodyAt < 0 {
				p.bodyAt = pos
			}
			if tag == "title" && p.titleAt < 0 && parent != nil && parent.name == "head" {
				p.titleAt = pos
			}
			if (tag == "button" || (tag == "a" && attrs["href"] != "") || (tag == "input" && attrs["type"] != "hidden")) && !hasKey(attrs, "aria-label") && !hasKey(attrs, "hidden") {
				gt := pos - 1
				if tt == html.SelfClosingTagToken || strings.HasSuffix(string(doc[start:pos]), "/>") {
					gt = pos - 2
				}
				if inMain {
					namedMain = append(namedMain, gt)
				} else {
					namedOther = append(namedOther, gt)
				}
			}
			if tt == html.StartTagToken && !void[tag] {
				stack = append(stack, &open{name: tag, skip: skip, inMain: inMain, kids: map[string]*list{}})
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch tag {
			case "main":
				if p.mainEnd < 0 {
					p.mainEnd = start
				}
			case "body":
				p.bodyEnd = start
			}
			closeTo(tag, start)
		}
	}
	p.size = pos
	p.named = append(namedMain, namedOther...)
	return p
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// bestList is the page's most list-like container: in main when main has
// one, else the one with most entries (the first of equals).
func (p *page) bestList() *list {
	var best *list
	for i := range p.lists {
		l := &p.lists[i]
		switch {
		case best == nil, l.inMain && !best.inMain:
			best = l
		case l.inMain == best.inMain && len(l.starts) > len(best.starts):
			best = l
		}
	}
	return best
}
