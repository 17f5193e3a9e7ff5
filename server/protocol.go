package server

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// ProtocolVersion is the version of the wire protocol in docs/protocol.md.
const ProtocolVersion = 1

// Request is one client message: a MessagePack map in one binary
// WebSocket frame.
type Request struct {
	ID   uint64         `json:"id"`
	Op   string         `json:"op"`
	Env  string         `json:"env,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Reply answers the request with the same ID.
type Reply struct {
	ID     uint64 `json:"id"`
	OK     bool   `json:"ok"`
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
	// ServerMs is the time the server spent on the request, so a client can
	// tell the protocol's overhead from the work.
	ServerMs float64 `json:"server_ms"`
}

// Error is a failure reported as a value; the connection stays open.
type Error struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	// RetryAfter is set with code "capacity": seconds to wait before
	// asking again.
	RetryAfter float64 `json:"retry_after,omitempty"`
	// Fault says whose the failure is (FaultClient, FaultAgent,
	// FaultInfrastructure), so a trainer never scores an environment's
	// failure as the policy's.
	Fault Fault `json:"fault"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func errorf(code Code, retryable bool, format string, args ...any) *Error {
	return &Error{Code: code, Message: bounded(fmt.Sprintf(format, args...)), Retryable: retryable, Fault: code.Fault()}
}

// DecodeRequest decodes one frame. It never panics; a frame that is not a
// request map yields an error, and the request id when it could be read (so
// the error reply can carry it). Each field is decoded as a whole value
// before its type is checked, so one mistyped field does not hide the id.
func DecodeRequest(data []byte) (Request, error) {
	var req Request
	if err := checkFrame(data); err != nil {
		return req, fmt.Errorf("not a valid MessagePack frame: %w", err)
	}
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	n, err := dec.DecodeMapLen()
	if err != nil {
		return req, fmt.Errorf("frame is not a MessagePack map: %w", err)
	}
	if n < 0 {
		return req, errors.New("frame is a nil map, not a request")
	}
	var first error
	fail := func(format string, args ...any) {
		if first == nil {
			first = fmt.Errorf(format, args...)
		}
	}
	for i := 0; i < n; i++ {
		key, err := dec.DecodeString()
		if err != nil {
			return req, fmt.Errorf("request key %d is not a string: %w", i, err)
		}
		v, err := dec.DecodeInterface()
		if err != nil {
			return req, fmt.Errorf("request field %q: %w", key, err)
		}
		switch key {
		case "id":
			id, ok := asUint(v)
			if !ok {
				fail("request id must be an unsigned integer, got %T", v)
			}
			req.ID = id
		case "op":
			if req.Op, _ = v.(string); req.Op == "" {
				fail("op must be a non-empty string, got %T", v)
			}
		case "env":
			var ok bool
			if req.Env, ok = v.(string); !ok && v != nil {
				fail("env must be a string, got %T", v)
			}
		case "args":
			switch m := v.(type) {
			case nil:
			case map[string]any:
				req.Args = m
			default:
				fail("args must be a map with string keys, got %T", v)
			}
		}
	}
	if first != nil {
		return req, first
	}
	if _, err := dec.PeekCode(); err == nil {
		return req, errors.New("frame holds more than one MessagePack value; send one request per frame")
	}
	if req.Op == "" {
		return req, errors.New("request has no op")
	}
	return req, nil
}

func asUint(v any) (uint64, bool) {
	if n, ok := v.(uint64); ok {
		return n, true
	}
	n, ok := integer(v)
	return uint64(n), ok && n >= 0
}

// encodeReply encodes a reply. Struct fields are named by their json tags,
// so envcore's types go on the wire with the names they have everywhere.
func encodeReply(r *Reply) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
