package envcore

import (
	"reflect"
	"strings"
	"testing"
)

// Every action's documented signature reads its example the way the parser
// does: the example's positional arguments, named in the signature's order,
// make the same action as the example itself. A signature whose order
// disagrees with the positional parse (press(key, bid) over a parser that
// reads press(bid, key)) teaches a model to press a key named after an
// element.
func TestSignaturesReadExamplesAsTheParserDoes(t *testing.T) {
	for _, d := range Actions() {
		t.Run(d.Name, func(t *testing.T) {
			open := strings.IndexByte(d.Example, '(')
			if open < 0 {
				t.Fatalf("example %q is not a call", d.Example)
			}
			if name := d.Example[:open]; name != d.Name {
				t.Fatalf("example %q calls %s, the doc is for %s", d.Example, name, d.Name)
			}
			args, err := parseCallArgs(d.Example[open:])
			if err != nil {
				t.Fatalf("example %q: %v", d.Example, err)
			}
			if len(args.pos) > len(d.Args) {
				t.Fatalf("example %q has %d positional arguments, the signature %s names %d", d.Example, len(args.pos), d.Signature(), len(d.Args))
			}
			named := map[string]any{}
			for i, v := range args.pos {
				named[d.Args[i].Name] = v.jsonValue()
			}
			for k, v := range args.kw {
				named[k] = v.jsonValue()
			}
			call, err := d.Call(named)
			if err != nil {
				t.Fatalf("the example %q, named by the signature %s: %v", d.Example, d.Signature(), err)
			}
			want, err := ParseAction(d.Example)
			if err != nil {
				t.Fatalf("example %q: %v", d.Example, err)
			}
			got, err := ParseAction(call)
			if err != nil {
				t.Fatalf("%q (the example named by %s): %v", call, d.Signature(), err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("signature %s reads example %q as %s = %+v; the parser reads the example as %+v", d.Signature(), d.Example, call, got, want)
			}
			built, err := d.Build(named)
			if err != nil || !reflect.DeepEqual(built.Action, want) {
				t.Errorf("Build of the example %q named by %s: %+v (%v); the parser reads %+v", d.Example, d.Signature(), built.Action, err, want)
			}
		})
	}
}

// jsonValue is v as encoding/json would decode it, the form ActionDoc.Call
// takes.
func (v argValue) jsonValue() any {
	switch v.kind {
	case "str":
		return v.str
	case "num":
		return v.num
	case "bool":
		return v.b
	case "list":
		out := make([]any, len(v.list))
		for i, x := range v.list {
			out[i] = x.jsonValue()
		}
		return out
	}
	return nil
}
