package server

import (
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"
)

// An MCP control tool's arguments are a projection of an op's: the op's
// args type (ops.go, the Go struct the WebSocket protocol decodes), less
// the arguments the tool hides, which the session fills or which are not
// for a model. Its input schema is generated from that type
// (jsonschema.ForType, the library the MCP SDK infers its schemas with) and
// its arguments are decoded by the protocol's strict decoder (decode.go),
// so the tool and the op cannot disagree on a name or a type, and a
// mistake is refused with the protocol's words. The view options of every
// tool that returns an observation are a projection of the observe map
// (observeSpec) the same way. mcpargs_test.go fails when an op's args type
// gains, loses or renames a field that no projection accounts for.

// mcpArgs is a control tool's arguments.
type mcpArgs struct {
	// op is the op whose args type typ is; "" for a tool that runs no op
	// with arguments (typ is then the tool's own).
	op  string
	typ reflect.Type
	// hide are wire names of typ the tool does not take (mcpargs_test.go
	// checks that each is one).
	hide []string
	// required are the wire names the tool needs (the op refuses their
	// absence too, in its turn; the schema says so up front).
	required []string
	// fresh is a new *typ holding the tool's defaults, which the
	// arguments are decoded onto.
	fresh func() any
}

// argsOf is the projection of T: op names the op whose args type T must
// be, init holds the tool's defaults.
func argsOf[T any](op string, init T, hide, required []string) *mcpArgs {
	return &mcpArgs{op: op, typ: reflect.TypeFor[T](), hide: hide, required: required, fresh: func() any { v := init; return &v }}
}

// doc is the description of wire name n (its field's jsonschema tag).
func (p *mcpArgs) doc(n string) string {
	for _, f := range fieldsOf(p.typ) {
		if f.name == n {
			return p.typ.FieldByIndex(f.index).Tag.Get("jsonschema")
		}
	}
	return ""
}

// names are the wire names the projection takes, sorted.
func (p *mcpArgs) names() []string {
	var out []string
	for _, n := range wireNames(p.typ) {
		if !slices.Contains(p.hide, n) {
			out = append(out, n)
		}
	}
	return out
}

// mcpView is the view options: the observe map's view and screenshot.
var mcpView = argsOf("", observeSpec{}, []string{
	// view chooses the text view (axtree is the default); what else the
	// observation carries, and its budget, are the session's (its defaults'
	// max_tokens and tokenizer).
	"axtree", "geometry", "marks", "layout", "format", "quality", "max_side", "max_tokens", "tokenizer", "browsergym",
}, nil)

// wireSchemas are the JSON-schema types of the wire types the decoder
// reads its own way.
var wireSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[Millis](): {Type: "number", Minimum: new(float64)},
}

// schema is the projection's properties: those jsonschema infers from
// typ, less the hidden ones. A property's "null" is dropped: the decoder
// takes null as absent, and a model leaves an argument out.
func (p *mcpArgs) schema() (map[string]*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(p.typ, &jsonschema.ForOptions{TypeSchemas: wireSchemas})
	if err != nil {
		return nil, fmt.Errorf("the schema of %s (the MCP arguments of %s): %w", p.typ, p.op, err)
	}
	props := map[string]*jsonschema.Schema{}
	for _, n := range p.names() {
		ps := s.Properties[n]
		if ps == nil {
			return nil, fmt.Errorf("the schema of %s has no property %s, a wire name of the type: check its json and jsonschema tags", p.typ, n)
		}
		if len(ps.Types) == 2 && ps.Types[0] == "null" {
			ps.Type, ps.Types = ps.Types[1], nil
		}
		props[n] = ps
	}
	return props, nil
}

// decode reads own (the call's arguments the projection takes) onto a new
// *typ, as strictly as the op's arguments are read; where names the tool.
func (p *mcpArgs) decode(where string, own map[string]any) (any, error) {
	for _, n := range p.required {
		if v, ok := own[n]; !ok || v == nil {
			return nil, badArgs(fmt.Sprintf("%s needs %s: %s", where, n, p.doc(n)))
		}
	}
	out := p.fresh()
	if err := decodeStruct(reflect.ValueOf(out).Elem(), own, where); err != nil {
		return nil, err
	}
	return out, nil
}

// splitArgs sorts a call's arguments into those of own and those of the
// view (when the tool observes); any other key is refused by unknown,
// given the names the tool takes.
func splitArgs(a map[string]any, own []string, observes bool, unknown func(key string, valid []string) error) (mine, view map[string]any, err error) {
	mine, view = map[string]any{}, map[string]any{}
	all := slices.Clone(own)
	if observes {
		all = append(all, mcpView.names()...)
	}
	sort.Strings(all)
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error is the same every time
	for _, k := range keys {
		switch {
		case slices.Contains(own, k):
			mine[k] = a[k]
		case observes && slices.Contains(mcpView.names(), k):
			view[k] = a[k]
		default:
			return nil, nil, unknown(k, all)
		}
	}
	return mine, view, nil
}
