package server

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
)

// serveWS runs one client connection: frames are read in order, each
// request runs on its environment's worker (or its own goroutine when it
// names none), and replies go back as they finish, matched by id.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		s.log.Info("websocket handshake failed", zap.Error(err))
		return
	}
	// The protocol's own limit is enforced below, with an error reply;
	// the transport limit only bounds what a misbehaving peer can stream.
	c.SetReadLimit(-1)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	cn := &conn{s: s, c: c, ctx: ctx, authed: s.cfg.Token == ""}
	s.log.Debug("client connected", zap.String("remote", r.RemoteAddr))
	go cn.keepAlive(cancel)
	err = cn.readLoop()
	status := websocket.CloseStatus(err)
	closed := status == websocket.StatusNormalClosure || status == websocket.StatusGoingAway
	if !closed {
		s.log.Debug("client connection lost", zap.Error(err))
	}
	_ = c.CloseNow()
	// A client that vanished (killed, timed out, unplugged) without closing
	// its connection leaves no environment behind; one that closed it may
	// come back to them until their TTL.
	if !closed && !cn.keep.Load() {
		s.releaseOwned(cn)
	}
}

// keepAlive pings the client; one that does not answer within
// pingTimeout is lost, and its connection is ended.
func (cn *conn) keepAlive(lost context.CancelFunc) {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-cn.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(cn.ctx, pingTimeout)
		err := cn.c.Ping(ctx)
		cancel()
		if err != nil && cn.ctx.Err() == nil {
			cn.s.log.Info("client did not answer a ping; its connection is ended", zap.Error(err))
			lost()
			return
		}
	}
}

// How often the server pings a client, and how long it waits for the pong.
const (
	pingEvery   = 20 * time.Second
	pingTimeout = 20 * time.Second
)

type conn struct {
	s      *Server
	c      *websocket.Conn
	ctx    context.Context
	authed bool        // written by the read loop only
	keep   atomic.Bool // hello's keep_envs: environments outlive a lost connection
}

func (cn *conn) readLoop() error {
	limit := cn.s.cfg.MaxFrame
	for {
		typ, rd, err := cn.c.Reader(cn.ctx)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(rd, limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			// Drain the rest of the frame and say why it was refused.
			if _, err := io.Copy(io.Discard, rd); err != nil {
				return err
			}
			cn.reply(time.Now(), &Reply{Error: errorf(CodeFrameTooLarge, false, "frame is larger than the server's limit of %d bytes; send smaller requests or start the server with a larger --max-frame", limit)})
			continue
		}
		start := time.Now()
		if typ != websocket.MessageBinary {
			cn.reply(start, &Reply{Error: errorf(CodeBadFrame, false, "send requests as binary frames holding one MessagePack map, not text")})
			continue
		}
		req, err := DecodeRequest(data)
		if err != nil {
			cn.reply(start, &Reply{ID: req.ID, Error: errorf(CodeBadFrame, false, "%v; see docs/protocol.md", err)})
			continue
		}
		if req.Op == "hello" {
			cn.s.metrics.requests.WithLabelValues(req.Op).Inc()
			res, err := cn.hello(req.Args)
			cn.reply(start, &Reply{ID: req.ID, Result: res, Error: wireError(err)})
			continue
		}
		if !cn.authed {
			cn.s.metrics.requests.WithLabelValues(opLabel(req.Op)).Inc()
			cn.reply(start, &Reply{ID: req.ID, Error: errorf(CodeUnauthorized, false, "this server needs a token: send hello with args.token first")})
			continue
		}
		cn.dispatch(start, req)
	}
}

// reply counts the connection's own error (one no op ran into) and sends
// the reply.
func (cn *conn) reply(start time.Time, r *Reply) {
	if r.Error != nil {
		cn.s.metrics.errors.WithLabelValues(string(r.Error.Code)).Inc()
	}
	cn.send(start, r)
}

// send encodes and sends one reply. Write is safe for concurrent use, so
// replies of different environments go out as they finish.
func (cn *conn) send(start time.Time, r *Reply) {
	r.OK = r.Error == nil
	r.ServerMs = float64(time.Since(start).Microseconds()) / 1000
	data, err := encodeReply(r)
	if err != nil {
		cn.s.log.Error("encode reply", zap.Error(err))
		data, _ = encodeReply(&Reply{ID: r.ID, Error: errorf(CodeInternal, false, "could not encode the reply: %v", err)})
	}
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cn.c.Write(wctx, websocket.MessageBinary, data); err != nil {
		// The client went away; its environments stay for a reconnect
		// until their TTL.
		cn.s.log.Debug("reply not delivered", zap.Uint64("id", r.ID), zap.Error(err))
	}
}

func (cn *conn) hello(raw args) (any, error) {
	a, err := decodeArgs[helloArgs]("hello", raw)
	if err != nil {
		return nil, err
	}
	if !cn.s.authorized(a.Token) {
		return nil, errorf(CodeUnauthorized, false, "wrong or missing token")
	}
	if a.Version != nil && *a.Version != ProtocolVersion {
		return nil, errorf(CodeBadArgs, false, "this server speaks protocol version %d, the client asked for %d; upgrade the older side", ProtocolVersion, *a.Version)
	}
	cn.keep.Store(a.KeepEnvs)
	cn.authed = true
	cfg := cn.s.cfg
	return map[string]any{
		"protocol": ProtocolVersion,
		"server":   "webserv",
		"version":  Version,
		"build":    Build(),
		"sites":    cn.s.factory.Sites(),
		"ops":      opNames(),
		// The ops a client may send again after a lost connection.
		"idempotent": idempotentOps(),
		"limits": map[string]any{
			"max_envs": cfg.MaxEnvs, "max_creating": cfg.MaxCreating, "max_frame": cfg.MaxFrame,
			"ttl_s": cfg.TTL.Seconds(), "request_timeout_s": cfg.StepTimeout.Seconds(),
		},
	}, nil
}

// dispatch runs a request the one way every op runs (exec.go): on its
// environment's worker when its op names one, so one environment's
// requests keep their order; otherwise at once. Its context derives from
// the server's, so Close cancels it.
func (cn *conn) dispatch(start time.Time, req Request) {
	o, ok := lookupOp(req.Op)
	if !ok || o.run == nil {
		cn.s.metrics.requests.WithLabelValues(opLabel(req.Op)).Inc()
		cn.reply(start, &Reply{ID: req.ID, Error: wireError(unknownOp(req.Op))})
		return
	}
	cn.s.submit(opRequest{op: o, env: req.Env, c: call{conn: cn}, raw: req.Args}, func(res any, e *Error) {
		cn.send(start, &Reply{ID: req.ID, Result: res, Error: e})
	})
}

// releaseOwned closes the environments whose owner is cn.
func (s *Server) releaseOwned(cn *conn) {
	s.mu.Lock()
	var owned []*session
	for _, x := range s.sessions {
		if x.owner.Load() == cn {
			owned = append(owned, x)
		}
	}
	s.mu.Unlock()
	for _, x := range owned {
		s.closeSession(x, "its client's connection was lost without a close")
	}
	if len(owned) > 0 {
		s.log.Info("released the environments of a lost client", zap.Int("envs", len(owned)))
	}
}

// opLabel is the metric label of an op: its name, or "unknown".
func opLabel(name string) string {
	if _, ok := lookupOp(name); ok {
		return name
	}
	return "unknown"
}
