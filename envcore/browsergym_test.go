package envcore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// bgAX is what the test reads of an axtree_object: the nodes by id, and
// which carry each browsergym_id, among those reached from the root.
type bgAX struct {
	byID  map[any]map[string]any
	bids  map[string][]map[string]any
	roots int
}

func readAX(t *testing.T, obj map[string]any) bgAX {
	t.Helper()
	nodes, ok := obj["nodes"].([]any)
	if !ok || len(nodes) == 0 {
		t.Fatalf("axtree_object has no nodes list: %v", obj)
	}
	ax := bgAX{byID: map[any]map[string]any{}, bids: map[string][]map[string]any{}}
	for _, n := range nodes {
		node := n.(map[string]any)
		if _, ok := node["childIds"].([]any); !ok {
			t.Fatalf("node %v has no childIds list (BrowserGym's flatten_axtree_to_str reads it on every node)", node["nodeId"])
		}
		if _, ok := node["role"].(map[string]any)["value"]; !ok {
			t.Fatalf("node %v has no role value", node["nodeId"])
		}
		ax.byID[node["nodeId"]] = node
	}
	root := nodes[0].(map[string]any)
	if root["role"].(map[string]any)["value"] != "RootWebArea" {
		t.Fatalf("the first node is %v, not the page's RootWebArea", root["role"])
	}
	seen := map[any]bool{}
	var walk func(id any)
	walk = func(id any) {
		node, ok := ax.byID[id]
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		if node["role"].(map[string]any)["value"] == "RootWebArea" {
			ax.roots++
		}
		if bid, ok := node["browsergym_id"].(string); ok {
			ax.bids[bid] = append(ax.bids[bid], node)
		}
		for _, c := range node["childIds"].([]any) {
			walk(c)
		}
	}
	walk(root["nodeId"])
	return ax
}

func axName(node map[string]any) (role, name string) {
	role, _ = node["role"].(map[string]any)["value"].(string)
	if n, ok := node["name"].(map[string]any); ok {
		name, _ = n["value"].(string)
	}
	return role, name
}

// readDOM returns the tag of each element with a bid attribute (a list
// per bid) and every attribute name of the snapshot.
func readDOM(t *testing.T, obj map[string]any) (bids map[string][]string, names map[string]bool) {
	t.Helper()
	strs := obj["strings"].([]any)
	str := func(i any) string { return strs[i.(int64)].(string) }
	docs := obj["documents"].([]any)
	bids, names = map[string][]string{}, map[string]bool{}
	for _, d := range docs {
		nodes := d.(map[string]any)["nodes"].(map[string]any)
		for _, p := range nodes["parentIndex"].([]any) {
			if _, ok := p.(int64); !ok {
				t.Fatalf("parentIndex holds %T, not integers (Python indexes lists with them)", p)
			}
		}
		if _, ok := nodes["contentDocumentIndex"].(map[string]any)["index"].([]any); !ok {
			t.Fatalf("a document has no contentDocumentIndex.index (flatten_dom_to_str reads it)")
		}
		for i, a := range nodes["attributes"].([]any) {
			list := a.([]any)
			for j := 0; j+1 < len(list); j += 2 {
				names[str(list[j])] = true
				if str(list[j]) == "bid" {
					bid := str(list[j+1])
					bids[bid] = append(bids[bid], str(nodes["nodeName"].([]any)[i]))
				}
			}
		}
	}
	return bids, names
}

func TestBrowserGymObjectsCarrySemanticIDs(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{Observe: envcore.ObserveOptions{BrowserGym: true}})
	obs := mustReset(t, env, "/browsergym.html")
	if len(obs.Clickable) < 6 || !contains(obs.Clickable, "load-in-frame") {
		t.Fatalf("clickable = %v, want the page's five and the iframe's button", obs.Clickable)
	}
	if _, ok := obs.ExtraElementProperties["go"]; !ok {
		t.Fatalf("browsergym implies extra_element_properties; got %v", obs.ExtraElementProperties)
	}

	ax := readAX(t, obs.AXTreeObject)
	if ax.roots != 2 {
		t.Errorf("reached %d RootWebAreas from the root, want 2 (the page's and the iframe's, merged)", ax.roots)
	}
	for _, id := range obs.Clickable {
		if len(ax.bids[id]) != 1 {
			t.Errorf("%d accessibility nodes carry browsergym_id %q, want 1", len(ax.bids[id]), id)
		}
	}
	for id, want := range map[string][2]string{
		"go": {"button", "Go"}, "next-page": {"link", "Next page"}, "search": {"textbox", "Search"},
		"size.large": {"option", "Large"}, "load-in-frame": {"button", "Load in frame"},
	} {
		if len(ax.bids[id]) == 0 {
			continue
		}
		if role, name := axName(ax.bids[id][0]); role != want[0] || name != want[1] {
			t.Errorf("browsergym_id %q is on %s %q, want %s %q", id, role, name, want[0], want[1])
		}
	}

	bids, names := readDOM(t, obs.DOMObject)
	for _, id := range obs.Clickable {
		if len(bids[id]) != 1 {
			t.Errorf("%d snapshot elements carry bid=%q, want 1", len(bids[id]), id)
		}
	}
	if got := bids["go"]; len(got) != 1 || got[0] != "BUTTON" {
		t.Errorf("bid=\"go\" is on %v, want the BUTTON", got)
	}
	for _, own := range []string{"data-semantic-id", "data-clickable"} {
		if names[own] {
			t.Errorf("the snapshot keeps WebServ's own attribute %s", own)
		}
	}

	// An element that stops being a target keeps its data-semantic-id in
	// the page (to get its id back if it returns) but is no longer named.
	obs = mustAct(t, env, `click("vanish")`)
	if contains(obs.Clickable, "vanish") {
		t.Fatalf("vanish is still clickable after hiding itself: %v", obs.Clickable)
	}
	var kept string
	if err := env.Evaluate(testCtx(t), `document.getElementById('gone').getAttribute('data-semantic-id')`, &kept); err != nil || kept != "vanish" {
		t.Fatalf("the hidden button's data-semantic-id = %q (%v); the test needs the parser to keep it", kept, err)
	}
	ax = readAX(t, obs.AXTreeObject)
	bids, _ = readDOM(t, obs.DOMObject)
	if len(ax.bids["vanish"]) != 0 || len(bids["vanish"]) != 0 {
		t.Errorf("the hidden button still carries its old id: %d nodes, %d elements", len(ax.bids["vanish"]), len(bids["vanish"]))
	}
	if len(ax.bids["go"]) != 1 || len(bids["go"]) != 1 {
		t.Errorf("go lost its id after the step: %d nodes, %d elements", len(ax.bids["go"]), len(bids["go"]))
	}

	// Off unless asked for.
	plain, err := env.Observe(testCtx(t), envcore.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.AXTreeObject != nil || plain.DOMObject != nil || plain.ExtraElementProperties != nil {
		t.Errorf("an observation without browsergym carries its objects")
	}
}

// domElements reads every element of a dom_object's documents: its tag
// (lower case), its attributes in order, and the order it comes in.
type domElement struct {
	tag   string
	attrs [][2]string
}

func domElements(obj map[string]any) []domElement {
	strs := obj["strings"].([]any)
	str := func(i any) string { return strs[i.(int64)].(string) }
	var out []domElement
	for _, d := range obj["documents"].([]any) {
		nodes := d.(map[string]any)["nodes"].(map[string]any)
		types := nodes["nodeType"].([]any)
		for i, a := range nodes["attributes"].([]any) {
			if types[i].(int64) != 1 || strings.HasPrefix(str(nodes["nodeName"].([]any)[i]), "::") { // pseudo-elements
				continue
			}
			e := domElement{tag: strings.ToLower(str(nodes["nodeName"].([]any)[i]))}
			list := a.([]any)
			for j := 0; j+1 < len(list); j += 2 {
				e.attrs = append(e.attrs, [2]string{str(list[j]), str(list[j+1])})
			}
			out = append(out, e)
		}
	}
	return out
}

func (e domElement) attr(name string) (string, bool) {
	for _, a := range e.attrs {
		if a[0] == name {
			return a[1], true
		}
	}
	return "", false
}

func TestBrowserGymObjectsMarkEveryElementAsBrowserGymDoes(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{Observe: envcore.ObserveOptions{BrowserGym: true}})
	mustReset(t, env, "/browsergym_marks.html")
	mustAct(t, env, `fill("name", "typed")`)
	mustAct(t, env, `click("was-on")`)
	mustAct(t, env, `click("was-off")`)
	mustAct(t, env, `select_option("size", "Large")`)
	obs := mustAct(t, env, `fill("note", "hello")`)

	els := domElements(obs.DOMObject)
	byTag := map[string][]domElement{}
	for _, e := range els {
		byTag[e.tag] = append(byTag[e.tag], e)
		// Every standard HTML element has a bid, first: its semantic id or a
		// derived one, with its properties.
		bid, ok := e.attr("bid")
		if !ok || e.attrs[0][0] != "bid" {
			t.Errorf("<%s %v> has no bid first", e.tag, e.attrs)
			continue
		}
		if n := strings.Count(fmt.Sprint(e.attrs), "bid "); n != 1 {
			t.Errorf("<%s %v> has %d bid attributes, want 1 (the page's own left out)", e.tag, e.attrs, n)
		}
		if _, ok := obs.ExtraElementProperties[bid]; !ok {
			t.Errorf("<%s bid=%q> has no extra_element_properties", e.tag, bid)
		}
	}
	for _, tag := range []string{"html", "head", "title", "style", "body", "div", "p", "li"} {
		for _, e := range byTag[tag] {
			if bid, _ := e.attr("bid"); !strings.HasPrefix(bid, envcore.DerivedIDPrefix) {
				t.Errorf("<%s> has bid %q, want a derived id (%q...)", tag, bid, envcore.DerivedIDPrefix)
			}
		}
	}
	if bid, _ := byTag["button"][0].attr("bid"); bid != "send" {
		t.Errorf("the button's bid is %q, want its semantic id send", bid)
	}
	vis := func(e domElement) float64 { bid, _ := e.attr("bid"); return obs.ExtraElementProperties[bid].Visibility }
	if v := vis(byTag["head"][0]); v != 0 {
		t.Errorf("<head> visibility %v, want 0 (not rendered)", v)
	}
	if len(byTag["div"]) != 2 || vis(byTag["div"][0]) != 1 || vis(byTag["div"][1]) != 0 {
		t.Errorf("the divs' visibility: want the top one 1, the one 3000px below 0; got %v", byTag["div"])
	}

	// Values and checked as the page has them now, written as attributes.
	want := []struct {
		tag   string
		n     int
		value string
		check string // "on", "off" or "" (not an input)
	}{
		{"input", 0, "typed", "off"}, {"input", 1, "on", "off"}, {"input", 2, "on", "on"},
		{"select", 0, "l", ""}, {"option", 0, "Small", ""}, {"option", 1, "l", ""},
		{"textarea", 0, "hello", ""}, {"button", 0, "", ""}, {"li", 0, "0", ""}, {"li", 1, "7", ""},
		{"progress", 0, "0.5", ""},
	}
	for _, w := range want {
		e := byTag[w.tag][w.n]
		if v, ok := e.attr("value"); !ok || v != w.value {
			t.Errorf("<%s> #%d value=%q (%v), want %q", w.tag, w.n, v, ok, w.value)
		}
		_, checked := e.attr("checked")
		if (w.check == "on") != checked {
			t.Errorf("<%s> #%d checked attribute %v, want %s", w.tag, w.n, checked, w.check)
		}
	}
	if _, ok := byTag["div"][0].attr("value"); ok {
		t.Errorf("a <div> got a value attribute")
	}

	// The accessibility tree carries the derived ids too.
	ax := readAX(t, obs.AXTreeObject)
	var para string
	for bid, nodes := range ax.bids {
		if role, _ := axName(nodes[0]); role == "paragraph" {
			para = bid
		}
	}
	if !strings.HasPrefix(para, envcore.DerivedIDPrefix) {
		t.Errorf("the paragraph's accessibility node carries browsergym_id %q, want a derived id", para)
	}

	// Acting on a derived id is refused by name, and the episode goes on.
	for _, action := range []string{`click("` + para + `")`, `drag_and_drop("send", "` + para + `")`} {
		_, info := mustStep(t, env, action)
		if info.ActionErrorCode != "bad_action" || !strings.Contains(info.ActionError, "BrowserGym-only id") {
			t.Errorf("%s: error %q (%s), want bad_action naming a BrowserGym-only id", action, info.ActionError, info.ActionErrorCode)
		}
	}
	mustAct(t, env, `click("send")`)
}
