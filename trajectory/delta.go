package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/webserv-rl/webserv/envcore"
)

// Delta is the exact change from one observation to the next (o_t to
// o_{t+1}): what a web world model such as DynaWeb's learns to predict.
// Diff makes one and Apply applies it; Apply(a, Diff(a, b)) equals b for
// every pair of observations.
//
// The parts an agent acts on are diffed element by element, keyed by
// semantic id where there is one: the HTML and the accessibility-tree text
// piece by piece (TextDelta), the clickable and hoverable ids, the inputs
// and selects with their state, and the tabs (ListDelta). Every other
// field that changed (url, title, active tab, last action error,
// viewport, ...) is in Set whole, under its JSON name, or in Unset when it
// became empty and the observation's JSON leaves it out; so is a listed part
// that cannot be diffed by key (duplicate ids, elements that changed
// order), or whose edits would be longer than its new value. docs/trajectories.md shows the JSON.
type Delta struct {
	// Set holds the fields replaced whole, by JSON name ("url", "title",
	// "active_tab", "last_action_error", ...), with their new values.
	Set map[string]any `json:"set,omitempty"`
	// Unset names the fields the observation's JSON leaves out when empty
	// (focused, axtree, last_action_error, ...) that became empty: the
	// next observation has them no more.
	Unset []string `json:"unset,omitempty"`

	HTML      *TextDelta                      `json:"html,omitempty"`
	AXTree    *TextDelta                      `json:"axtree,omitempty"`
	Clickable *ListDelta[string]              `json:"clickable,omitempty"`
	Hoverable *ListDelta[string]              `json:"hoverable,omitempty"`
	Inputs    *ListDelta[envcore.InputField]  `json:"inputs,omitempty"`
	Selects   *ListDelta[envcore.SelectField] `json:"selects,omitempty"`
	Tabs      *ListDelta[envcore.Tab]         `json:"tabs,omitempty"`

	// Stats are the extraction's statistics, which are not encoded with
	// an observation and so not with its delta either.
	Stats *envcore.ObservationStats `json:"-"`
}

// Empty reports whether d changes nothing.
func (d Delta) Empty() bool {
	return reflect.DeepEqual(d, Delta{})
}

// ListDelta is the change of a list of elements keyed by id (the
// clickable and hoverable ids, inputs and selects by id, tabs by index):
// the keys removed, the elements changed (their whole new state, in
// place) and those inserted, each at its index in the new list. Elements
// that stay keep their order.
type ListDelta[T any] struct {
	Remove []string      `json:"remove,omitempty"`
	Change []T           `json:"change,omitempty"`
	Insert []Inserted[T] `json:"insert,omitempty"`
}

// Inserted is an element inserted into a list, at its index in the new
// list.
type Inserted[T any] struct {
	At   int `json:"at"`
	Item T   `json:"item"`
}

// TextDelta is the change of a text view (the HTML or the
// accessibility-tree text), split into pieces: for the HTML, one piece per
// element (its start tag, its text and the end tags that follow, up to the
// next start tag); for the accessibility tree, one per line. Edits refer
// to the pieces of the old text.
type TextDelta struct {
	Edits []TextEdit `json:"edits"`
}

// The operations of a TextEdit.
const (
	EditChange = "change" // the piece becomes Text
	EditRemove = "remove" // the piece is removed
	EditInsert = "insert" // Text is inserted before the piece At (At = number of pieces: at the end)
)

// TextEdit is one edit of a TextDelta. A change or removal names its
// piece by the semantic id it carries (ID: data-semantic-id in the HTML,
// [id] in the accessibility tree) when that id is on exactly one piece of
// the old text, else by position (At, counting pieces from 0). An insertion
// is at a position.
type TextEdit struct {
	Op   string `json:"op"`
	ID   string `json:"id,omitempty"`
	At   *int   `json:"at,omitempty"`
	Text string `json:"text,omitempty"`
}

// Diff is the change from observation a to observation b.
func Diff(a, b Observation) Delta {
	var d Delta
	for _, f := range deltaFields() {
		va, vb := f.get(&a), f.get(&b)
		if reflect.DeepEqual(va.Interface(), vb.Interface()) {
			continue
		}
		if f.part != nil && f.part.diff(&a, &b, &d) {
			continue
		}
		if f.omitEmpty && vb.IsZero() {
			d.Unset = append(d.Unset, f.name)
			continue
		}
		if d.Set == nil {
			d.Set = map[string]any{}
		}
		d.Set[f.name] = vb.Interface()
	}
	if a.Stats != b.Stats {
		s := b.Stats
		d.Stats = &s
	}
	return d
}

// Apply applies delta d to observation a and returns the result; a is
// left as it was. It fails when d names a field, element or piece that a
// does not have.
func Apply(a Observation, d Delta) (Observation, error) {
	o := a
	for _, f := range deltaFields() {
		if _, whole := d.Set[f.name]; whole && f.part != nil && f.part.given(&d) {
			return a, fmt.Errorf("delta both sets %s whole and edits it: give one of the two", f.name)
		}
		if f.part != nil {
			if err := f.part.apply(&o, &d); err != nil {
				return a, fmt.Errorf("delta %s: %w", f.name, err)
			}
		}
	}
	for name, v := range d.Set {
		f, ok := fieldByName(name)
		if !ok {
			return a, fmt.Errorf("delta sets unknown observation field %q (the fields are the observation's JSON names: url, title, html, ...)", name)
		}
		dst := f.get(&o)
		if rv := reflect.ValueOf(v); rv.IsValid() && rv.Type() == dst.Type() {
			dst.Set(rv)
			continue
		}
		// A delta read from JSON: its values are JSON's; decode them into
		// the field's own type (null gives the type's zero value).
		raw, err := json.Marshal(v)
		if err != nil {
			return a, fmt.Errorf("delta %s: %w", name, err)
		}
		nv := reflect.New(dst.Type())
		if err := decodeStrict(raw, nv.Interface()); err != nil {
			return a, fmt.Errorf("delta %s: the value does not fit the field: %w", name, err)
		}
		dst.Set(nv.Elem())
	}
	for _, name := range d.Unset {
		f, ok := fieldByName(name)
		if !ok {
			return a, fmt.Errorf("delta unsets unknown observation field %q (the fields are the observation's JSON names: url, title, html, ...)", name)
		}
		if _, set := d.Set[name]; set {
			return a, fmt.Errorf("delta both sets and unsets %s: give one of the two", name)
		}
		dst := f.get(&o)
		dst.SetZero()
	}
	if d.Stats != nil {
		o.Stats = *d.Stats
	}
	return o, nil
}

// ParseDelta reads a delta from its JSON, as a world model or a file
// gives it, refusing keys a delta does not have (a misspelt "html" or
// "op" would otherwise be a change silently lost).
func ParseDelta(data []byte) (Delta, error) {
	var d Delta
	if err := decodeStrict(data, &d); err != nil {
		return Delta{}, fmt.Errorf("delta: %w (docs/trajectories.md has the shape)", err)
	}
	return d, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// deltaField is one field of an observation: its JSON name, where it is,
// and, for the parts diffed element by element, how.
type deltaField struct {
	name      string
	omitEmpty bool // the observation's JSON leaves the field out when empty
	get       func(o *Observation) reflect.Value
	part      *deltaPart
}

// deltaPart diffs and applies one part of an observation. diff fills its
// place in the delta and reports whether the part is then exact (else the
// field is set whole); apply applies its place in the delta, if any.
type deltaPart struct {
	diff  func(a, b *Observation, d *Delta) bool
	apply func(o *Observation, d *Delta) error
	given func(d *Delta) bool // whether d has the part's place filled
}

// deltaParts is the table of the parts diffed finely, by JSON name.
var deltaParts = map[string]*deltaPart{
	"html":      textPart(func(o *Observation) *string { return &o.HTML }, func(d *Delta) **TextDelta { return &d.HTML }, splitHTML),
	"axtree":    textPart(func(o *Observation) *string { return &o.AXTree }, func(d *Delta) **TextDelta { return &d.AXTree }, splitLines),
	"clickable": listPart(func(o *Observation) *[]string { return &o.Clickable }, func(d *Delta) **ListDelta[string] { return &d.Clickable }, func(s string) string { return s }),
	"hoverable": listPart(func(o *Observation) *[]string { return &o.Hoverable }, func(d *Delta) **ListDelta[string] { return &d.Hoverable }, func(s string) string { return s }),
	"inputs": listPart(func(o *Observation) *[]envcore.InputField { return &o.Inputs },
		func(d *Delta) **ListDelta[envcore.InputField] { return &d.Inputs }, func(f envcore.InputField) string { return f.ID }),
	"selects": listPart(func(o *Observation) *[]envcore.SelectField { return &o.Selects },
		func(d *Delta) **ListDelta[envcore.SelectField] { return &d.Selects }, func(f envcore.SelectField) string { return f.ID }),
	"tabs": listPart(func(o *Observation) *[]envcore.Tab { return &o.Tabs },
		func(d *Delta) **ListDelta[envcore.Tab] { return &d.Tabs }, func(t envcore.Tab) string { return fmt.Sprint(t.Index) }),
}

// deltaFields lists every encoded field of an observation: envcore's, by
// reflection on their JSON names, and the goal.
var deltaFields = sync.OnceValue(buildFields)

func fieldByName(name string) (deltaField, bool) {
	for _, f := range deltaFields() {
		if f.name == name {
			return f, true
		}
	}
	return deltaField{}, false
}

func buildFields() []deltaField {
	var out []deltaField
	t := reflect.TypeFor[envcore.Observation]()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, omitEmpty := jsonName(sf)
		if name == "" {
			continue // Stats: not encoded; the delta carries it apart
		}
		idx := i
		out = append(out, deltaField{name: name, omitEmpty: omitEmpty, part: deltaParts[name],
			get: func(o *Observation) reflect.Value { return reflect.ValueOf(&o.Observation).Elem().Field(idx) }})
	}
	out = append(out, deltaField{name: "goal", get: func(o *Observation) reflect.Value { return reflect.ValueOf(&o.Goal).Elem() }})
	return out
}

// jsonName is a field's JSON name ("" when it is not encoded) and
// whether empty values are left out.
func jsonName(sf reflect.StructField) (string, bool) {
	tag := sf.Tag.Get("json")
	if tag == "-" || !sf.IsExported() {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	omit := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
	if name == "" {
		name = sf.Name
	}
	return name, omit
}

// textPart is the part for a text view split into pieces by split.
func textPart(field func(*Observation) *string, slot func(*Delta) **TextDelta, split func(string) []piece) *deltaPart {
	return &deltaPart{
		diff: func(a, b *Observation, d *Delta) bool {
			pa, pb := split(*field(a)), split(*field(b))
			td := diffPieces(pa, pb)
			got, err := applyPieces(pa, td)
			if err != nil || got != *field(b) || !smaller(td, *field(b)) {
				return false
			}
			*slot(d) = td
			return true
		},
		apply: func(o *Observation, d *Delta) error {
			td := *slot(d)
			if td == nil {
				return nil
			}
			s, err := applyPieces(split(*field(o)), td)
			if err != nil {
				return err
			}
			*field(o) = s
			return nil
		},
		given: func(d *Delta) bool { return *slot(d) != nil },
	}
}

// smaller reports whether the fine delta of a part is shorter in JSON
// than the part's new value (else setting it whole is the shorter delta:
// a new page, mostly).
func smaller(delta, whole any) bool {
	d, err := json.Marshal(delta)
	if err != nil {
		return false
	}
	w, err := json.Marshal(whole)
	return err == nil && len(d) < len(w)
}

// listPart is the part for a list of elements keyed by key.
func listPart[T any](field func(*Observation) *[]T, slot func(*Delta) **ListDelta[T], key func(T) string) *deltaPart {
	return &deltaPart{
		diff: func(a, b *Observation, d *Delta) bool {
			ld, ok := diffList(*field(a), *field(b), key)
			if !ok {
				return false
			}
			got, err := applyList(*field(a), ld, key)
			if err != nil || !reflect.DeepEqual(got, *field(b)) || !smaller(ld, *field(b)) {
				return false
			}
			*slot(d) = ld
			return true
		},
		apply: func(o *Observation, d *Delta) error {
			ld := *slot(d)
			if ld == nil {
				return nil
			}
			l, err := applyList(*field(o), ld, key)
			if err != nil {
				return err
			}
			*field(o) = l
			return nil
		},
		given: func(d *Delta) bool { return *slot(d) != nil },
	}
}

// diffList diffs two keyed lists; not ok when a key repeats in either, or
// the elements both have are in another order in b.
func diffList[T any](a, b []T, key func(T) string) (*ListDelta[T], bool) {
	if a == nil || b == nil {
		return nil, false // null and empty differ; set whole
	}
	ia, ok := keyIndex(a, key)
	if !ok {
		return nil, false
	}
	ib, ok := keyIndex(b, key)
	if !ok {
		return nil, false
	}
	ld := &ListDelta[T]{}
	for _, x := range a {
		if _, in := ib[key(x)]; !in {
			ld.Remove = append(ld.Remove, key(x))
		}
	}
	last := -1
	for i, y := range b {
		j, in := ia[key(y)]
		if !in {
			ld.Insert = append(ld.Insert, Inserted[T]{At: i, Item: y})
			continue
		}
		if j < last {
			return nil, false // reordered
		}
		last = j
		if !reflect.DeepEqual(a[j], y) {
			ld.Change = append(ld.Change, y)
		}
	}
	return ld, true
}

func keyIndex[T any](l []T, key func(T) string) (map[string]int, bool) {
	m := make(map[string]int, len(l))
	for i, x := range l {
		k := key(x)
		if _, dup := m[k]; dup {
			return nil, false
		}
		m[k] = i
	}
	return m, true
}

// applyList applies ld to a without changing a.
func applyList[T any](a []T, ld *ListDelta[T], key func(T) string) ([]T, error) {
	gone := map[string]bool{}
	for _, k := range ld.Remove {
		gone[k] = true
	}
	changed := map[string]T{}
	for _, c := range ld.Change {
		changed[key(c)] = c
	}
	out := make([]T, 0, len(a)+len(ld.Insert))
	found := 0
	for _, x := range a {
		k := key(x)
		if gone[k] {
			found++
			continue
		}
		if c, ok := changed[k]; ok {
			x = c
			delete(changed, k)
		}
		out = append(out, x)
	}
	if found != len(gone) {
		return nil, fmt.Errorf("removes %d ids the list does not have (%v)", len(gone)-found, ld.Remove)
	}
	for k := range changed {
		return nil, fmt.Errorf("changes id %q, which the list does not have", k)
	}
	ins := slices.Clone(ld.Insert)
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].At < ins[j].At })
	for _, in := range ins {
		if in.At < 0 || in.At > len(out) {
			return nil, fmt.Errorf("inserts at %d in a list of %d", in.At, len(out))
		}
		out = slices.Insert(out, in.At, in.Item)
	}
	return out, nil
}
