package server

import (
	"strings"
	"testing"
	"time"
)

// A typical make request's arguments, as MessagePack decodes them.
func makeRequestArgs() args {
	return args{
		"site": "shopping", "task": "shopping.3", "idle_ms": int64(200), "max_steps": uint8(30),
		"observe": map[string]any{"axtree": true, "screenshot": false},
		"options": map[string]any{"group_key": "g-1"}, "seed": int64(1 << 60),
		"record": map[string]any{"screenshots": true},
	}
}

func TestDecodeArgsReadsEveryKindOfField(t *testing.T) {
	a, err := decodeArgs[makeArgs]("make", makeRequestArgs())
	if err != nil {
		t.Fatal(err)
	}
	if a.Site != "shopping" || a.Task != "shopping.3" || a.IdleMs.D() != 200*time.Millisecond || a.MaxSteps != 30 ||
		a.Observe == nil || !a.Observe.AXTree || a.Options.GroupKey != "g-1" || a.Seed == nil || *a.Seed != 1<<60 ||
		!a.Record.on || !a.Record.Screenshots {
		t.Errorf("decoded %+v", a)
	}
	for _, c := range []struct {
		in   args
		want string
	}{
		{args{"idle_ms": -1}, "make.idle_ms must be 0 or more milliseconds"},
		{args{"max_steps": 2.5}, "make.max_steps must be a whole number, got 2.5"},
		{args{"allow": []any{"a", 3}}, "make.allow must be a list of strings, item 1 is a number"},
		{args{"record": "yes"}, "make.record must be true or a map"},
		{args{"viewport": map[string]any{"widht": 3}}, "did you mean width?"},
		{args{strings.Repeat("k", 10000): 1}, "bytes)"}, // a huge key is quoted cut short
	} {
		_, err := decodeArgs[makeArgs]("make", c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.in, err, c.want)
		}
		if err != nil && len(err.Error()) > 2*maxErrorText {
			t.Errorf("error of %d bytes", len(err.Error()))
		}
	}
}

// What strict decoding costs a request (measured: a few microseconds, next
// to a step's tens of milliseconds).
func BenchmarkDecodeMakeArgs(b *testing.B) {
	a := makeRequestArgs()
	for b.Loop() {
		if _, err := decodeArgs[makeArgs]("make", a); err != nil {
			b.Fatal(err)
		}
	}
}
