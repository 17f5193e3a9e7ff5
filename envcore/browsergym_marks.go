package envcore

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BrowserGym's marking, read off the snapshot (ObserveOptions.BrowserGym).
//
// Before BrowserGym reads a page it marks every element whose tag is a
// standard HTML tag: each gets a bid, its visibility (the share of its box
// inside the viewport), and its value and checked properties written into
// its value and checked attributes. GenericAgent's HTML text is made of
// those marks: <head bid=..>, every <div> with a bid and, when its box is
// in view, "visible"; <button value="">. WebServ never writes to the page
// for this: it reads the same facts from DOMSnapshot.captureSnapshot and
// writes them into the snapshot it hands over.
//
// Elements with a semantic id carry it as their bid. The others get a
// derived id, DerivedIDPrefix and a number ("_12"): valid only in this
// observation's browsergym objects (dom_object, axtree_object,
// extra_element_properties), never an action's target (Action.Validate
// refuses one by name). No semantic id starts with the prefix.

// DerivedIDPrefix starts the ids BrowserGym's objects give elements WebServ
// has no semantic id for (see above); actions refuse them.
const DerivedIDPrefix = "_"

// bgTags are the tags BrowserGym marks (its "standard_html" choice).
var bgTags = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range strings.Fields(`a abbr acronym address applet area article aside audio b base
		basefont bdi bdo big blockquote body br button canvas caption center cite code col colgroup
		data datalist dd del details dfn dialog dir div dl dt em embed fieldset figcaption figure font
		footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins
		kbd label legend li link main map mark menu meta meter nav noframes noscript object ol optgroup
		option output p param picture pre progress q rp rt ruby s samp script search section select
		small source span strike strong style sub summary sup svg table tbody td template textarea
		tfoot th thead time title tr track tt u ul var video wbr`) {
		m[t] = true
	}
	return m
}()

// snapStrings is a snapshot's string table, with lookups for the strings
// marking adds.
type snapStrings struct {
	list []any
	at   map[string]int64
}

func (s *snapStrings) get(i any) (string, bool) {
	n, ok := i.(int64)
	if !ok || n < 0 || int(n) >= len(s.list) {
		return "", false
	}
	v, ok := s.list[n].(string)
	return v, ok
}

func (s *snapStrings) str(i any) string { v, _ := s.get(i); return v }

// index returns v's index, adding v when the table lacks it.
func (s *snapStrings) index(v string) int64 {
	if s.at == nil {
		s.at = make(map[string]int64, len(s.list))
		for i, x := range s.list {
			if x, ok := x.(string); ok {
				if _, seen := s.at[x]; !seen {
					s.at[x] = int64(i)
				}
			}
		}
	}
	if i, ok := s.at[v]; ok {
		return i
	}
	s.list = append(s.list, v)
	s.at[v] = int64(len(s.list) - 1)
	return s.at[v]
}

// snapDoc is one document of a snapshot, read for marking.
type snapDoc struct {
	nodes    map[string]any
	attrs    []any
	names    []any
	types    []any
	values   []any
	kids     map[int][]int
	layoutOf map[int]int // node index -> layout index
	bounds   []any
	// rare data, by node index
	inputValue, textValue, shadow map[int]any
	checked, selected, clickable  map[int]bool
}

func readSnapDoc(doc map[string]any) snapDoc {
	nodes, _ := doc["nodes"].(map[string]any)
	d := snapDoc{nodes: nodes, attrs: asList(nodes["attributes"]), names: asList(nodes["nodeName"]),
		types: asList(nodes["nodeType"]), values: asList(nodes["nodeValue"]), kids: map[int][]int{}, layoutOf: map[int]int{}}
	for i, p := range asList(nodes["parentIndex"]) {
		if p, ok := p.(int64); ok && p >= 0 {
			d.kids[int(p)] = append(d.kids[int(p)], i)
		}
	}
	if layout, ok := doc["layout"].(map[string]any); ok {
		for li, n := range asList(layout["nodeIndex"]) {
			if n, ok := n.(int64); ok {
				if _, seen := d.layoutOf[int(n)]; !seen {
					d.layoutOf[int(n)] = li
				}
			}
		}
		d.bounds = asList(layout["bounds"])
	}
	rareStr := func(key string) map[int]any {
		m := map[int]any{}
		r, _ := nodes[key].(map[string]any)
		idx, val := asList(r["index"]), asList(r["value"])
		for k := range min(len(idx), len(val)) {
			if i, ok := idx[k].(int64); ok {
				m[int(i)] = val[k]
			}
		}
		return m
	}
	rareBool := func(key string) map[int]bool {
		m := map[int]bool{}
		r, _ := nodes[key].(map[string]any)
		for _, i := range asList(r["index"]) {
			if i, ok := i.(int64); ok {
				m[int(i)] = true
			}
		}
		return m
	}
	d.inputValue, d.textValue, d.shadow = rareStr("inputValue"), rareStr("textValue"), rareStr("shadowRootType")
	d.checked, d.selected, d.clickable = rareBool("inputChecked"), rareBool("optionSelected"), rareBool("isClickable")
	return d
}

func (d snapDoc) typeOf(i int) int64 {
	if i < len(d.types) {
		t, _ := d.types[i].(int64)
		return t
	}
	return 0
}

// attr returns the value of element i's attribute name.
func (d snapDoc) attr(s *snapStrings, i int, name string) (string, bool) {
	list := asList(d.attrs[i])
	for j := 0; j+1 < len(list); j += 2 {
		if s.str(list[j]) == name {
			return s.str(list[j+1]), true
		}
	}
	return "", false
}

// setAttr sets element i's attribute in place, or appends it (as
// setAttribute does); remove takes it out.
func (d snapDoc) setAttr(s *snapStrings, i int, name, value string, remove bool) {
	list := asList(d.attrs[i])
	for j := 0; j+1 < len(list); j += 2 {
		if s.str(list[j]) == name {
			if remove {
				d.attrs[i] = append(list[:j:j], list[j+2:]...)
			} else {
				list[j+1] = s.index(value)
			}
			return
		}
	}
	if !remove {
		d.attrs[i] = append(list[:len(list):len(list)], s.index(name), s.index(value))
	}
}

// text is the text of i's descendant text nodes, in order.
func (d snapDoc) text(s *snapStrings, i int) string {
	var b strings.Builder
	var walk func(int)
	walk = func(n int) {
		if d.typeOf(n) == 3 && n < len(d.values) {
			b.WriteString(s.str(d.values[n]))
		}
		for _, k := range d.kids[n] {
			walk(k)
		}
	}
	walk(i)
	return b.String()
}

// value is element i's value property, as BrowserGym writes it into the
// value attribute, and whether the element has one.
func (d snapDoc) value(s *snapStrings, i int, tag string) (string, bool) {
	attr := func(name string) string { v, _ := d.attr(s, i, name); return v }
	switch tag {
	case "input":
		v, _ := d.inputValue[i]
		return s.str(v), true
	case "textarea":
		v, _ := d.textValue[i]
		return s.str(v), true
	case "button", "data", "param":
		return attr("value"), true
	case "option":
		if v, ok := d.attr(s, i, "value"); ok {
			return v, true
		}
		return strings.Join(strings.FieldsFunc(d.text(s, i), isASCIISpace), " "), true
	case "select":
		var found *string
		var walk func(int)
		walk = func(n int) {
			for _, k := range d.kids[n] {
				if found != nil {
					return
				}
				if strings.EqualFold(s.str(d.names[k]), "option") && d.selected[k] {
					v, _ := d.value(s, k, "option")
					found = &v
					return
				}
				walk(k)
			}
		}
		walk(i)
		if found == nil {
			return "", true
		}
		return *found, true
	case "li":
		n, ok := htmlInt(attr("value"))
		if !ok {
			n = 0
		}
		return strconv.FormatInt(n, 10), true
	case "output":
		return d.text(s, i), true
	case "progress":
		maxV := 1.0
		if m, ok := htmlFloat(attr("max")); ok && m > 0 {
			maxV = m
		}
		v, ok := htmlFloat(attr("value"))
		if !ok || v < 0 {
			v = 0
		}
		return jsNumber(math.Min(v, maxV)), true
	case "meter":
		lo, hi := 0.0, 1.0
		if m, ok := htmlFloat(attr("min")); ok {
			lo = m
		}
		if m, ok := htmlFloat(attr("max")); ok {
			hi = m
		}
		hi = math.Max(hi, lo)
		v, ok := htmlFloat(attr("value"))
		if !ok {
			v = 0
		}
		return jsNumber(math.Min(math.Max(v, lo), hi)), true
	}
	return "", false
}

func isASCIISpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r' }

// htmlInt parses an integer the way HTML's reflected long attributes do:
// leading whitespace, a sign, digits; anything after is ignored.
func htmlInt(s string) (int64, bool) {
	s = strings.TrimLeftFunc(s, isASCIISpace)
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	start := end
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == start {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:end], 10, 32)
	return n, err == nil
}

func htmlFloat(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// jsNumber prints f as JavaScript's String(f) does for ordinary values.
func jsNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// box is element i's layout bounds in its document, and whether it is laid
// out.
func (d snapDoc) box(i int) ([4]float64, bool) {
	li, ok := d.layoutOf[i]
	if !ok || li >= len(d.bounds) {
		return [4]float64{}, false
	}
	var b [4]float64
	for k, v := range asList(d.bounds[li]) {
		if k < 4 {
			b[k] = number(v)
		}
	}
	return b, true
}

func number(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// markable is whether BrowserGym marks element i: a standard HTML tag, not
// inside a shadow tree its script cannot reach (a browser's own or a
// closed one).
func (d snapDoc) markable(s *snapStrings, i int) (string, bool) {
	if d.typeOf(i) != 1 || i >= len(d.names) {
		return "", false
	}
	tag := strings.ToLower(strings.TrimSpace(s.str(d.names[i])))
	if !bgTags[tag] {
		return "", false
	}
	if sh, ok := d.shadow[i]; ok {
		if t := s.str(sh); t == "user-agent" || t == "closed" {
			return "", false
		}
	}
	return tag, true
}

// visibility is the share of box b (in viewport pixels) inside the
// viewport of width w and height h, rounded to hundredths; an element with
// no area counts as fully visible when it touches the viewport, as an
// IntersectionObserver reports it.
func visibility(b [4]float64, w, h float64) float64 {
	x0, y0 := math.Max(b[0], 0), math.Max(b[1], 0)
	x1, y1 := math.Min(b[0]+b[2], w), math.Min(b[1]+b[3], h)
	if x1 < x0 || y1 < y0 {
		return 0
	}
	area := b[2] * b[3]
	if area <= 0 {
		return 1
	}
	return math.Round((x1-x0)*(y1-y0)/area*100) / 100
}

// markAsBrowserGym does BrowserGym's marking on a snapshot markSnapshot
// has given the semantic ids: every markable element gets its value and
// checked attributes, and those without a semantic id a derived id (in
// ids.byBackend, for the accessibility tree). It returns the properties
// of every marked element, by id, as read off the snapshot: Clickable is
// Chromium's isClickable, Visibility the share of the box inside the
// viewport, both as BrowserGym gives them. The viewport is w by h CSS
// pixels.
func markAsBrowserGym(snap map[string]any, ids snapshotIDs, w, h float64) map[string]ElementProperties {
	s := &snapStrings{list: asList(snap["strings"])}
	docs := asList(snap["documents"])
	read := make([]snapDoc, len(docs))
	for di, d := range docs {
		doc, _ := d.(map[string]any)
		read[di] = readSnapDoc(doc)
	}
	// Each document's offset in the viewport: its iframe's box in the
	// parent's, less its own scrolling.
	offset := make([][2]float64, len(docs))
	done := make([]bool, len(docs))
	var place func(di int, at [2]float64)
	place = func(di int, at [2]float64) {
		if di < 0 || di >= len(docs) || done[di] {
			return
		}
		done[di] = true
		doc, _ := docs[di].(map[string]any)
		offset[di] = [2]float64{at[0] - number(doc["scrollOffsetX"]), at[1] - number(doc["scrollOffsetY"])}
		cdi, _ := read[di].nodes["contentDocumentIndex"].(map[string]any)
		idx, val := asList(cdi["index"]), asList(cdi["value"])
		for k := range min(len(idx), len(val)) {
			ni, _ := idx[k].(int64)
			sub, _ := val[k].(int64)
			b, _ := read[di].box(int(ni))
			place(int(sub), [2]float64{offset[di][0] + b[0], offset[di][1] + b[1]})
		}
	}
	place(0, [2]float64{})

	props := map[string]ElementProperties{}
	n := 0
	for di, d := range read {
		backs := asList(d.nodes["backendNodeId"])
		for i := range d.attrs {
			tag, ok := d.markable(s, i)
			if !ok {
				continue
			}
			if v, ok := d.value(s, i, tag); ok {
				d.setAttr(s, i, "value", v, false)
			}
			if tag == "input" {
				d.setAttr(s, i, "checked", "", !d.checked[i])
			}
			id, named := ids.named[[2]int{di, i}]
			if !named {
				n++
				id = DerivedIDPrefix + strconv.Itoa(n)
				d.attrs[i] = append([]any{s.index(bidAttr), s.index(id)}, asList(d.attrs[i])...)
				if i < len(backs) {
					if b, _ := backs[i].(int64); b != 0 {
						ids.byBackend[b] = id
					}
				}
			}
			p := ElementProperties{Clickable: d.clickable[i]}
			if b, laid := d.box(i); laid {
				b[0] += offset[di][0]
				b[1] += offset[di][1]
				p.BBox = b
				p.Visibility = visibility(b, w, h)
				p.InViewport = p.Visibility
			}
			props[id] = p
		}
	}
	snap["strings"] = s.list
	return props
}

// refuseDerivedID refuses an action whose target (or drop target) is a
// derived id: BrowserGym's objects name every element, WebServ acts on the
// elements it gives semantic ids.
func refuseDerivedID(a Action) error {
	for _, id := range []string{a.Target, a.To} {
		if strings.HasPrefix(id, DerivedIDPrefix) {
			return fmt.Errorf("%s: %q is a BrowserGym-only id (ids starting with %q name elements WebServ has no id for, "+
				"only in the browsergym objects); act on an element with a WebServ id (the accessibility tree's, clickable, inputs) "+
				"or by coordinates (mouse_click)", a.Type, id, DerivedIDPrefix)
		}
	}
	return nil
}
