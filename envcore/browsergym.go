package envcore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-rod/rod/lib/proto"
)

// BrowserGym's raw observation objects (ObserveOptions.BrowserGym).
//
// Agents written for BrowserGym (AgentLab's GenericAgent, BrowserGym's demo
// agent) build their prompts from raw Chrome DevTools objects with
// BrowserGym's utilities: flatten_axtree_to_str over axtree_object,
// flatten_dom_to_str and prune_html over dom_object. WebServ hands them the
// objects Chromium itself answers (Accessibility.getFullAXTree and
// DOMSnapshot.captureSnapshot), with WebServ's semantic ids where
// BrowserGym's utilities read theirs: an accessibility node of an element
// with an id carries it as browsergym_id, and the element carries it in the
// snapshot as its bid attribute. The ids are the ones every action takes.
//
// The parser writes an element's id to the live element as
// data-semantic-id; the snapshot reads the attribute, and its backend node
// id joins it to the accessibility node. An element keeps the attribute
// after it stops being a target (so it gets its id back when it returns);
// only the ids of this observation are kept, and WebServ's own
// annotations (data-semantic-id, data-clickable, data-maybe-hoverable) are
// taken out of the snapshot. Every document of the snapshot (the page and
// its iframes; with site isolation off, every iframe is in the page's
// process) has its accessibility tree, merged into one as BrowserGym does:
// the frame's root becomes a child of its iframe's node.

// bidAttr is the attribute BrowserGym's DOM utilities read an element's id
// from.
const bidAttr = "bid"

// ownAttrs are the parser's annotations on live elements (parser.js
// OWN_ATTR); the snapshot leaves them out.
var ownAttrs = map[string]bool{"data-semantic-id": true, "data-clickable": true, "data-maybe-hoverable": true}

// browserGym fills obs.AXTreeObject and obs.DOMObject; ids are the
// semantic ids of this observation.
func (t *tab) browserGym(ctx context.Context, ids map[string]bool, obs *Observation) error {
	var snap map[string]any
	err := t.cdpObject(ctx, proto.DOMSnapshotCaptureSnapshot{ComputedStyles: []string{}, IncludeDOMRects: true, IncludePaintOrder: true}, "dom_object", &snap)
	if err != nil {
		return err
	}
	dom, err := markSnapshot(snap, ids)
	if err != nil {
		return fmt.Errorf("dom_object: %w", err)
	}
	derived := markAsBrowserGym(snap, dom, float64(obs.Viewport.Width), float64(obs.Viewport.Height))
	ax := map[string]any{"nodes": []any{}}
	nodes := []any{}
	for i, frame := range dom.frames {
		var tree map[string]any
		if err := t.cdpObject(ctx, proto.AccessibilityGetFullAXTree{FrameID: proto.PageFrameID(frame)}, "axtree_object", &tree); err != nil {
			if i == 0 || ctx.Err() != nil {
				return err
			}
			// An iframe that went away since the snapshot has no tree.
			continue
		}
		part, _ := tree["nodes"].([]any)
		nodes = append(nodes, part...)
	}
	if err := linkAXTree(nodes, dom); err != nil {
		return fmt.Errorf("axtree_object: %w", err)
	}
	ax["nodes"] = nodes
	obs.AXTreeObject, obs.DOMObject = ax, snap
	if obs.ExtraElementProperties == nil {
		obs.ExtraElementProperties = make(ElementPropertiesByID, len(derived))
	}
	for id, p := range derived {
		if own, measured := obs.ExtraElementProperties[id]; measured {
			// BrowserGym's meaning of the two it prints: Chromium's own
			// clickable, the share in the viewport (occlusion not counted).
			own.Clickable, own.Visibility = p.Clickable, p.Visibility
			p = own
		}
		obs.ExtraElementProperties[id] = p
	}
	return nil
}

// cdpObject sends req to the tab and decodes Chromium's answer into out the
// way a JSON reader in Python does (whole numbers as integers), refusing an
// answer over the observation limit.
func (t *tab) cdpObject(ctx context.Context, req proto.Request, what string, out *map[string]any) error {
	raw, err := t.client(ctx).Call(ctx, string(t.session), req.ProtoReq(), req)
	if err != nil {
		return fmt.Errorf("%s (%s): %w", what, req.ProtoReq(), err)
	}
	if limit := t.owner().cfg.MaxObservationBytes; len(raw) > limit {
		return &ResourceLimitError{What: "observation (" + what + ")", Used: int64(len(raw)), Limit: int64(limit)}
	}
	v, err := decodePlain(raw)
	if err != nil {
		return fmt.Errorf("%s: decode %s: %w", what, req.ProtoReq(), err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: %s answered %T, not an object", what, req.ProtoReq(), v)
	}
	*out = m
	return nil
}

// decodePlain decodes JSON into maps, slices, strings, bools, int64 for
// whole-number literals and float64 for the others: what Python's json
// gives, so an index stays an index.
func decodePlain(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return plainNumbers(v), nil
}

func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = plainNumbers(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	}
	return v
}

// snapshotIDs is what a marked snapshot tells the accessibility tree.
type snapshotIDs struct {
	// byBackend maps an element's backend node id to its semantic id.
	byBackend map[int64]string
	// frames are the snapshot's documents' frame ids, the page's first.
	frames []string
	// frameOf maps an iframe element's backend node id to the frame id of
	// its document.
	frameOf map[int64]string
	// named maps the (document, node) indexes of the elements given a
	// semantic id's bid to the id.
	named map[[2]int]string
}

// markSnapshot rewrites a DOMSnapshot.captureSnapshot answer in place:
// WebServ's annotations out, bid="ID" on the element of each id in ids.
// When several elements carry one id (one of them kept it from an earlier
// observation), the one laid out comes first, then document order.
func markSnapshot(snap map[string]any, ids map[string]bool) (snapshotIDs, error) {
	out := snapshotIDs{byBackend: map[int64]string{}, frameOf: map[int64]string{}, named: map[[2]int]string{}}
	strs, _ := snap["strings"].([]any)
	str := func(i any) string {
		n, ok := i.(int64)
		if !ok || n < 0 || int(n) >= len(strs) {
			return ""
		}
		s, _ := strs[n].(string)
		return s
	}
	docs, _ := snap["documents"].([]any)
	if len(docs) == 0 {
		return out, fmt.Errorf("the snapshot has no document")
	}
	type place struct {
		attrs   []any // the attribute lists of the element's document
		doc     int   // the document's index
		node    int   // the element's index in them
		id      string
		back    int64
		laidOut bool
	}
	var found []place
	best := map[string]int{} // id -> index in found of the element that keeps it
	for di, d := range docs {
		doc, _ := d.(map[string]any)
		nodes, _ := doc["nodes"].(map[string]any)
		if nodes == nil {
			return out, fmt.Errorf("a snapshot document has no nodes")
		}
		out.frames = append(out.frames, str(doc["frameId"]))
		laid := map[int64]bool{}
		if layout, ok := doc["layout"].(map[string]any); ok {
			for _, n := range asList(layout["nodeIndex"]) {
				if i, ok := n.(int64); ok {
					laid[i] = true
				}
			}
		}
		backs := asList(nodes["backendNodeId"])
		back := func(i int) int64 {
			if i < len(backs) {
				b, _ := backs[i].(int64)
				return b
			}
			return 0
		}
		attrs := asList(nodes["attributes"])
		for i, a := range attrs {
			list, _ := a.([]any)
			kept := list[:0:0]
			id := ""
			for j := 0; j+1 < len(list); j += 2 {
				name := str(list[j])
				if name == "data-semantic-id" {
					id = str(list[j+1])
				}
				// A page's own bid attribute would read as an id (the last
				// one wins in BrowserGym's readers): left out.
				if ownAttrs[name] || name == bidAttr {
					continue
				}
				kept = append(kept, list[j], list[j+1])
			}
			if len(kept) != len(list) {
				attrs[i] = kept
			}
			if id == "" || !ids[id] {
				continue
			}
			p := place{attrs: attrs, doc: di, node: i, id: id, back: back(i), laidOut: laid[int64(i)]}
			found = append(found, p)
			if k, ok := best[id]; !ok || (p.laidOut && !found[k].laidOut) {
				best[id] = len(found) - 1
			}
		}
		// iframe elements and their documents' frames.
		if cdi, ok := nodes["contentDocumentIndex"].(map[string]any); ok {
			idx, val := asList(cdi["index"]), asList(cdi["value"])
			for k := range min(len(idx), len(val)) {
				ni, _ := idx[k].(int64)
				di, _ := val[k].(int64)
				if di >= 0 && int(di) < len(docs) {
					sub, _ := docs[di].(map[string]any)
					out.frameOf[back(int(ni))] = str(sub["frameId"])
				}
			}
		}
	}
	if len(found) > 0 {
		nameAt := int64(len(strs))
		for i, s := range strs {
			if s == bidAttr {
				nameAt = int64(i)
				break
			}
		}
		if nameAt == int64(len(strs)) {
			strs = append(strs, bidAttr)
		}
		for id, k := range best {
			p := found[k]
			valueAt := int64(len(strs))
			strs = append(strs, id)
			// bid first, where BrowserGym's own marking puts it.
			p.attrs[p.node] = append([]any{nameAt, valueAt}, asList(p.attrs[p.node])...)
			out.named[[2]int{p.doc, p.node}] = id
			if p.back != 0 {
				out.byBackend[p.back] = id
			}
		}
		snap["strings"] = strs
	}
	return out, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// linkAXTree gives the accessibility nodes of elements with an id their
// browsergym_id and hangs each frame's tree under its iframe's node.
func linkAXTree(nodes []any, ids snapshotIDs) error {
	roots := map[string]any{} // frame id -> its tree's root node id
	for _, n := range nodes {
		node, _ := n.(map[string]any)
		if node == nil {
			return fmt.Errorf("a node is not an object")
		}
		if _, ok := node["parentId"]; !ok {
			if f, ok := node["frameId"].(string); ok {
				if _, seen := roots[f]; !seen {
					roots[f] = node["nodeId"]
				}
			}
		}
	}
	for _, n := range nodes {
		node := n.(map[string]any)
		back, _ := node["backendDOMNodeId"].(int64)
		if id, ok := ids.byBackend[back]; ok && back != 0 {
			node["browsergym_id"] = id
		}
		if _, ok := node["childIds"]; !ok {
			node["childIds"] = []any{}
		}
		frame, ok := ids.frameOf[back]
		if !ok || back == 0 {
			continue
		}
		root, ok := roots[frame]
		if !ok {
			continue
		}
		kids := asList(node["childIds"])
		linked := false
		for _, k := range kids {
			if k == root {
				linked = true
			}
		}
		if !linked {
			node["childIds"] = append(kids, root)
		}
	}
	return nil
}
