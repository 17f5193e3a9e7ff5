package server

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/webserv-rl/webserv/internal/similar"
)

// Strict decoding of a request's args into an op's typed argument struct.
//
// A field's wire name is its json tag. Every key of args must name a field:
// an unknown key is refused with the nearest valid name, so a misspelled
// setting ("idle" for "idle_ms") is an error, never a silent default. The
// field types a wire struct may use:
//
//	string, bool, int, int64, float64   a value of that kind
//	*T (of the above)                   set only when the key is present
//	[]string                            a list of strings
//	Millis                              a non-negative number of milliseconds
//	a struct or *struct                 a nested map, decoded as strictly
//	map[string]any, any                 taken as sent
//	a type with decodeWire              decoded by that method

// Millis is a duration sent as a number of milliseconds.
type Millis time.Duration

// D is the duration.
func (m Millis) D() time.Duration { return time.Duration(m) }

// wireDecoder is a field type that reads its own wire value (path names
// the field in errors).
type wireDecoder interface {
	decodeWire(v any, path string) error
}

var wireDecoderType = reflect.TypeFor[wireDecoder]()

// decodeArgs decodes a into *T strictly; where is the op's name, used in
// errors ("make", "make.observe").
func decodeArgs[T any](where string, a args) (*T, error) {
	out := new(T)
	if err := decodeStruct(reflect.ValueOf(out).Elem(), a, where); err != nil {
		return nil, err
	}
	return out, nil
}

// wireField is one field of a wire struct.
type wireField struct {
	name  string
	index []int
}

var wireFields sync.Map // reflect.Type -> []wireField

// fieldsOf lists t's wire fields, embedded structs' included, by name.
func fieldsOf(t reflect.Type) []wireField {
	if v, ok := wireFields.Load(t); ok {
		return v.([]wireField)
	}
	var out []wireField
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue // embedded structs, fields not on the wire
		}
		out = append(out, wireField{name: name, index: f.Index})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	wireFields.Store(t, out)
	return out
}

// wireNames are the wire names of struct type t (pointers followed).
func wireNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fs := fieldsOf(t)
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}

func decodeStruct(v reflect.Value, a map[string]any, where string) error {
	fs := fieldsOf(v.Type())
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error is the same every time
	for _, k := range keys {
		i := sort.Search(len(fs), func(i int) bool { return fs[i].name >= k })
		if i == len(fs) || fs[i].name != k {
			return unknownKey(where, k, wireNames(v.Type()))
		}
		if err := decodeValue(v.FieldByIndex(fs[i].index), a[k], where+"."+k); err != nil {
			return err
		}
	}
	return nil
}

// unknownKey is the error for a key no field has: it names the nearest
// valid key when one is close, and lists them all.
func unknownKey(where, key string, valid []string) error {
	msg := fmt.Sprintf("%s has no argument %s", where, quoteKey(key))
	if near := nearest(key, valid); near != "" {
		msg += fmt.Sprintf("; did you mean %s?", near)
	}
	if len(valid) == 0 {
		msg += "; it takes no arguments"
	} else {
		msg += " (its arguments are " + strings.Join(valid, ", ") + ")"
	}
	return badArgs(msg)
}

// quoteKey shows a key as sent, cut to a readable length.
func quoteKey(k string) string {
	const max = 64
	if len(k) > max {
		return fmt.Sprintf("%q... (%d bytes)", k[:max], len(k))
	}
	return k
}

func decodeValue(v reflect.Value, raw any, path string) error {
	if raw == nil {
		return nil // absent and nil are the same: the zero value
	}
	if v.CanAddr() && v.Addr().Type().Implements(wireDecoderType) {
		return v.Addr().Interface().(wireDecoder).decodeWire(raw, path)
	}
	switch v.Type() {
	case reflect.TypeFor[Millis]():
		n, ok := number(raw)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be a number of milliseconds, got %s", path, typeName(raw)))
		}
		if n < 0 || n > float64(math.MaxInt64/int64(time.Millisecond)) {
			return badArgs(fmt.Sprintf("%s must be 0 or more milliseconds, got %v", path, n))
		}
		v.SetInt(int64(n * float64(time.Millisecond)))
		return nil
	case reflect.TypeFor[map[string]any]():
		m, ok := raw.(map[string]any)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be a map, got %s", path, typeName(raw)))
		}
		v.Set(reflect.ValueOf(m))
		return nil
	}
	switch v.Kind() {
	case reflect.Interface:
		v.Set(reflect.ValueOf(raw))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := decodeValue(p.Elem(), raw, path); err != nil {
			return err
		}
		v.Set(p)
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be a string, got %s", path, typeName(raw)))
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be true or false, got %s", path, typeName(raw)))
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, ok := integer(raw)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be a whole number, got %s", path, shortValue(raw)))
		}
		v.SetInt(n)
	case reflect.Float64:
		n, ok := number(raw)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return badArgs(fmt.Sprintf("%s must be a number, got %s", path, shortValue(raw)))
		}
		v.SetFloat(n)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			panic("server: wire field " + path + " has an unsupported slice type")
		}
		list, ok := raw.([]any)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be a list of strings, got %s", path, typeName(raw)))
		}
		out := make([]string, len(list))
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return badArgs(fmt.Sprintf("%s must be a list of strings, item %d is %s", path, i, typeName(x)))
			}
			out[i] = s
		}
		v.Set(reflect.ValueOf(out))
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return badArgs(fmt.Sprintf("%s must be a map, got %s", path, typeName(raw)))
		}
		return decodeStruct(v, m, path)
	default:
		panic("server: wire field " + path + " has an unsupported type " + v.Type().String())
	}
	return nil
}

// number reads any MessagePack number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// integer reads a MessagePack integer exactly (a float only when it is a
// whole number a float64 holds exactly).
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), n <= math.MaxInt64
	}
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// typeName names a decoded value's wire type for errors.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a bool"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	case []byte:
		return "binary"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// shortValue shows a value in an error, bounded.
func shortValue(v any) string {
	if _, ok := number(v); ok {
		return fmt.Sprint(v)
	}
	return typeName(v)
}

// nearest is the valid name closest to key, or "" when none is close: a
// name that one is a prefix of, else one within a third of its length in
// edits.
func nearest(key string, valid []string) string {
	if len(key) > 64 {
		return ""
	}
	best, bestD := "", -1
	for _, name := range valid {
		d := similar.Distance(key, name)
		if strings.HasPrefix(name, key) || strings.HasPrefix(key, name) {
			d = min(d, 1)
		}
		if d <= max(2, len(name)/3) && (bestD < 0 || d < bestD) {
			best, bestD = name, d
		}
	}
	return best
}

// derefValue is the value p points to.
func derefValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

// args are a request's arguments as decoded from MessagePack.
type args = map[string]any
