package server

// Typed access to a request's args: each reader says which key is wrong
// and what it must be.

import "time"

// args are a request's arguments as decoded from MessagePack.
type args map[string]any

func (a args) str(key string) (string, *Error) {
	v, ok := a[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", errorf(CodeBadArgs, false, "%s must be a string, got %T", key, v)
	}
	return s, nil
}

func (a args) num(key string) (float64, bool, *Error) {
	v, ok := a[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	switch n := v.(type) {
	case int8:
		return float64(n), true, nil
	case int16:
		return float64(n), true, nil
	case int32:
		return float64(n), true, nil
	case int64:
		return float64(n), true, nil
	case uint8:
		return float64(n), true, nil
	case uint16:
		return float64(n), true, nil
	case uint32:
		return float64(n), true, nil
	case uint64:
		return float64(n), true, nil
	case float32:
		return float64(n), true, nil
	case float64:
		return n, true, nil
	}
	return 0, false, errorf(CodeBadArgs, false, "%s must be a number, got %T", key, v)
}

// ms reads a duration given in milliseconds.
func (a args) ms(key string) (time.Duration, *Error) {
	n, ok, err := a.num(key)
	if err != nil || !ok {
		return 0, err
	}
	if n < 0 {
		return 0, errorf(CodeBadArgs, false, "%s must not be negative", key)
	}
	return time.Duration(n * float64(time.Millisecond)), nil
}

func (a args) boolean(key string) (bool, *Error) {
	v, ok := a[key]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, errorf(CodeBadArgs, false, "%s must be true or false, got %T", key, v)
	}
	return b, nil
}

// strs reads a list of strings ([] when absent).
func (a args) strs(key string) ([]string, *Error) {
	switch v := a[key].(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, errorf(CodeBadArgs, false, "%s must be a list of strings, item %d is %T", key, i, x)
			}
			out[i] = s
		}
		return out, nil
	case []string:
		return v, nil
	}
	return nil, errorf(CodeBadArgs, false, "%s must be a list of strings, got %T", key, a[key])
}

func (a args) sub(key string) (args, *Error) {
	v, ok := a[key]
	if !ok || v == nil {
		return args{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(CodeBadArgs, false, "%s must be a map, got %T", key, v)
	}
	return m, nil
}
