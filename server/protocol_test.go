package server_test

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/webserv-rl/webserv/server"
)

func TestDecodeRequest(t *testing.T) {
	good, _ := msgpack.Marshal(map[string]any{"id": 7, "op": "step", "env": "env-1", "args": map[string]any{"action": "noop()"}, "extra": []int{1}})
	req, err := server.DecodeRequest(good)
	if err != nil || req.ID != 7 || req.Op != "step" || req.Env != "env-1" || req.Args["action"] != "noop()" {
		t.Errorf("DecodeRequest = %+v, %v", req, err)
	}
	bad := map[string][]byte{
		"not a map":   {0x93, 1, 2, 3},
		"no op":       mustPack(map[string]any{"id": 1}),
		"string id":   mustPack(map[string]any{"id": "1", "op": "stats"}),
		"args a list": mustPack(map[string]any{"id": 1, "op": "stats", "args": []int{1}}),
		"two values":  append(mustPack(map[string]any{"id": 1, "op": "stats"}), 0x01),
		"truncated":   good[:len(good)-3],
		"empty":       {},
		// Declared lengths far beyond the frame (the library would
		// allocate them), and nesting built to exhaust the stack.
		"huge array":  []byte("\x83\xa2000\xa200\xdd\xab\x15c00000\xa4000000"),
		"huge map":    {0x81, 0xa2, 'o', 'p', 0xdf, 0xff, 0xff, 0xff, 0xff},
		"huge string": {0x81, 0xa2, 'o', 'p', 0xdb, 0x7f, 0xff, 0xff, 0xff, 'x'},
		"deep":        append(append([]byte{0x81, 0xa4, 'a', 'r', 'g', 's'}, bytes.Repeat([]byte{0x91}, 100000)...), 0xc0),
	}
	for name, frame := range bad {
		if _, err := server.DecodeRequest(frame); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	// The id of an otherwise bad request is kept for the error reply.
	req, err = server.DecodeRequest(mustPack(map[string]any{"id": 9, "op": 5}))
	if err == nil || req.ID != 9 {
		t.Errorf("bad op: id %d, err %v", req.ID, err)
	}
}

func mustPack(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDecodeRequest: no frame panics the decoder, and an accepted request
// has an op. Seeds in testdata/fuzz/FuzzDecodeRequest run as part of go test.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(mustPack(map[string]any{"id": 1, "op": "hello", "args": map[string]any{"token": "x"}}))
	f.Add(mustPack(map[string]any{"id": 2, "op": "step", "env": "env-1", "args": map[string]any{"action": map[string]any{"type": "click", "target": "a"}}}))
	f.Add([]byte{0xc1})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := server.DecodeRequest(frame)
		if err == nil && req.Op == "" {
			t.Fatalf("accepted a request without an op: %x", frame)
		}
	})
}
