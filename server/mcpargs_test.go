package server

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// jsonTypeOf is the JSON type a wire field of Go type t takes, as the
// decoder reads it (decode.go), independent of the schema library.
func jsonTypeOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[Millis]() {
		return "number"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return ""
}

// fieldType is the Go type of t's field with wire name n.
func fieldType(t reflect.Type, n string) (reflect.Type, bool) {
	for _, f := range fieldsOf(t) {
		if f.name == n {
			return t.FieldByIndex(f.index).Type, true
		}
	}
	return nil, false
}

// checkProjection checks p against its op: p's type is the op's args
// type, each hidden or required name is a field of it, and the schema's
// properties are exactly the type's wire names less the hidden ones, each
// typed as the decoder reads the field and described.
func checkProjection(t *testing.T, tool string, p *mcpArgs) {
	t.Helper()
	if p.op != "" {
		o, ok := lookupOp(p.op)
		if !ok {
			t.Errorf("%s: its arguments name op %s, which the op table lacks", tool, p.op)
		} else if o.args != p.typ {
			t.Errorf("%s: its arguments are %s, but op %s takes %s: fix the tool's argsOf", tool, p.typ, p.op, o.args)
		}
	}
	wire := wireNames(p.typ)
	for _, n := range slices.Concat(p.hide, p.required) {
		if !slices.Contains(wire, n) {
			t.Errorf("%s: hides or requires %s, which %s no longer has (its wire names are %v): update the tool's list", tool, n, p.typ, wire)
		}
	}
	for _, n := range p.required {
		if slices.Contains(p.hide, n) {
			t.Errorf("%s: requires %s, which it hides", tool, n)
		}
	}
	props, err := p.schema()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var want []string
	for _, n := range wire {
		if !slices.Contains(p.hide, n) {
			want = append(want, n)
		}
	}
	got := slices.Sorted(func(yield func(string) bool) {
		for n := range props {
			if !yield(n) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Errorf("%s: schema properties %v, want %s's wire names less the hidden ones: %v", tool, got, p.typ, want)
	}
	for _, n := range want {
		ft, _ := fieldType(p.typ, n)
		if reflect.PointerTo(ft).Implements(wireDecoderType) {
			t.Errorf("%s: takes %s, a %s, which reads its own wire value: hide it, or give its type a schema in wireSchemas and its check here", tool, n, ft)
			continue
		}
		if ps := props[n]; ps == nil || ps.Type != jsonTypeOf(ft) || ps.Description == "" {
			var typ, desc string
			if ps != nil {
				typ, desc = ps.Type, ps.Description
			}
			t.Errorf("%s: %s has type %q, description %q; want type %q (its Go type is %s) and a description (the field's jsonschema tag)", tool, n, typ, desc, jsonTypeOf(ft), ft)
		}
	}
}

// Every control tool takes its op's arguments less those it declares
// hidden, typed as the op's decoder reads them: an op argument added,
// removed or renamed is either in the tool's schema, or in its hide list,
// or this fails.
func TestMCPControlToolsTakeTheirOpsArguments(t *testing.T) {
	checkProjection(t, "the view options", mcpView)
	controls := 0
	for _, tool := range mcpTools {
		if tool.args == nil {
			if tool.action == nil {
				t.Errorf("%s: neither a control tool nor an action", tool.name)
			}
			continue
		}
		controls++
		checkProjection(t, tool.name, tool.args)
		s, err := tool.schema()
		if err != nil {
			t.Fatalf("%s: %v", tool.name, err)
		}
		for _, n := range mcpView.names() {
			if _, ok := s.Properties[n]; ok != tool.observes {
				t.Errorf("%s: has view option %s: %v, want %v (it observes: %v)", tool.name, n, ok, tool.observes, tool.observes)
			}
		}
		if !slices.Equal(s.Required, tool.args.required) {
			t.Errorf("%s: requires %v, want %v", tool.name, s.Required, tool.args.required)
		}
	}
	if controls != len(mcpControl) {
		t.Errorf("%d control tools have arguments from an op, want all %d", controls, len(mcpControl))
	}
}

// A control tool reads its arguments as the op does: an unknown key is
// refused with the op's message (the names the tool takes, the nearest
// one), a mistyped one as the op's decoder refuses it, a hidden one as
// unknown; the decoded arguments are the op's type.
func TestMCPControlToolsDecodeAsTheirOps(t *testing.T) {
	tools := map[string]mcpTool{}
	for _, tool := range mcpTools {
		tools[tool.name] = tool
	}
	s := &Server{}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"fork", map[string]any{"fname": "a"}, "fork has no argument fname; did you mean name? (its arguments are n, name)"},
		{"fork", map[string]any{"n": "two"}, "fork.n must be a whole number, got a string"},
		{"fork", map[string]any{"n": 1.5}, "fork.n must be a whole number, got 1.5"},
		{"reset", map[string]any{"seed": "x"}, "reset.seed must be a whole number, got a string"},
		{"reset", map[string]any{"world_model": map[string]any{}}, "reset has no argument world_model (its arguments are attack, goal, screenshot, seed, site, start_url, task, view)"},
		{"reset", map[string]any{"view": "pdf"}, `observe: view must be "axtree" or "html", got "pdf"`},
		{"reset", map[string]any{"screenshot": "yes"}, "reset.screenshot must be true or false, got a string"},
		{"snapshot", map[string]any{}, "snapshot needs name: the snapshot's name"},
		{"snapshot", map[string]any{"name": 7.0}, "snapshot.name must be a string, got a number"},
		{"task", map[string]any{"goal": "x"}, "task has no argument goal; it takes no arguments"},
		{"attach", map[string]any{}, "attach needs env"},
	} {
		_, err := tools[c.tool].decode(s, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want one saying %q", c.tool, c.args, err, c.want)
		} else if wireError(err).Code != CodeBadArgs {
			t.Errorf("%s %v: code %s, want bad_args", c.tool, c.args, wireError(err).Code)
		}
	}
	// The op's own words, where the tool and the op share a name.
	_, opErr := decodeArgs[forkArgs]("fork", map[string]any{"nam": "a"})
	if _, err := tools["fork"].decode(s, map[string]any{"nam": "a"}); err == nil || opErr == nil || err.Error() != opErr.Error() {
		t.Errorf("the fork tool refuses nam with %v, the fork op with %v: want the same", err, opErr)
	}

	c, err := tools["fork"].decode(s, map[string]any{"name": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := c.args.(*forkArgs); !ok || a.N != 1 || a.Name != "a" {
		t.Errorf("fork {name: a} decodes to %#v, want a *forkArgs with the tool's default n 1 and name a", c.args)
	}
	c, err = tools["reset"].decode(s, map[string]any{"task": "shopping.0", "seed": 3.0, "view": "html"})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := c.args.(*makeArgs); !ok || a.Task != "shopping.0" || a.Seed == nil || *a.Seed != 3 || c.view.View != "html" || c.view.AXTree {
		t.Errorf("reset {task, seed, view html} decodes to %#v, view %+v", c.args, c.view)
	}
}

// docs/mcp.md's table of tools lists each control tool's arguments (the
// view options aside, which it describes once): an argument a tool gains
// from its op is documented or hidden.
func TestMCPDocsListTheControlToolsArguments(t *testing.T) {
	f, err := os.Open("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := map[string][]string{}
	tick := regexp.MustCompile("`([^`]+)`")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		var args []string
		for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
			args = append(args, m[1])
		}
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			doc[m[1]] = args
		}
	}
	for _, tool := range mcpControl {
		got, ok := doc[tool.name]
		if !ok {
			t.Errorf("docs/mcp.md's table of tools lacks %s", tool.name)
			continue
		}
		want := tool.args.names()
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("docs/mcp.md lists %s's arguments as %v; the tool takes %v (the view options aside): document them, or hide them in mcp.go", tool.name, got, want)
		}
	}
}
