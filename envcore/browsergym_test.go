package envcore_test

import (
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
