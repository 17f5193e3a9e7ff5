package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"
)

// client is a minimal sequential client of the MessagePack protocol.
type client struct {
	c  *websocket.Conn
	id uint64
}

func dial(ctx context.Context, base string) (*client, error) {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/ws", nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(-1)
	return &client{c: c}, nil
}

func (p *client) call(ctx context.Context, op, env string, args map[string]any) (map[string]any, error) {
	p.id++
	data, _ := msgpack.Marshal(map[string]any{"id": p.id, "op": op, "env": env, "args": args})
	if err := p.c.Write(ctx, websocket.MessageBinary, data); err != nil {
		return nil, err
	}
	_, data, err := p.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var r map[string]any
	if err := msgpack.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if r["ok"] != true {
		return nil, fmt.Errorf("%s: %v", op, r["error"])
	}
	res, _ := r["result"].(map[string]any)
	return res, nil
}

func (p *client) close() { _ = p.c.CloseNow() }
