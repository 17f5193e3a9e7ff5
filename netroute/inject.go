package netroute

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Injector changes what one environment's browser contexts are served, as
// an experiment on the agent does (package attack's prompt injections): it
// is told of every request the contexts send and rewrites the HTML
// documents they navigate to. Its changes reach the contexts of the table
// it is set on only; the table's Client (the server's own requests, such
// as grading) is never rewritten.
type Injector interface {
	// Saw is told of every request a context sends, before it is routed
	// or refused (a CONNECT's URL has only its host). It must neither
	// read nor keep req's body.
	Saw(req *http.Request)
	// Document returns the HTML document to serve in place of body, the
	// response to req: a page or frame the browser navigated to, its body
	// decoded when the site compressed it.
	Document(req *http.Request, body []byte) []byte
}

// maxDocument is the largest document an Injector rewrites; a larger one
// passes through as the site sent it.
const maxDocument = 16 << 20

// injectorBox holds a table's Injector (atomic.Pointer needs a type).
type injectorBox struct{ inj Injector }

// SetInjector makes inj rewrite the documents of t's contexts from their
// next request on; nil stops rewriting. A rewritten document is marked
// Cache-Control: no-store, so that no browser cache keeps it for a
// context that later serves another environment.
func (t *Table) SetInjector(inj Injector) {
	if inj == nil {
		t.inj.Store(nil)
		return
	}
	t.inj.Store(&injectorBox{inj})
}

// saw tells t's Injector of req.
func (t *Table) saw(req *http.Request) {
	if b := t.inj.Load(); b != nil {
		b.inj.Saw(req)
	}
}

// modifyResponse is the ReverseProxy hook that lets t's Injector rewrite a
// navigation's HTML document.
func (t *Table) modifyResponse(resp *http.Response) error {
	b := t.inj.Load()
	if b == nil || !isDocument(resp) {
		return nil
	}
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	if enc != "" && enc != "identity" && enc != "gzip" {
		return nil // deflate, br, ...: served as sent
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return err
	}
	if len(raw) > maxDocument {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(raw), resp.Body), resp.Body}
		return nil
	}
	resp.Body.Close()
	body := raw
	if enc == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			body, err = io.ReadAll(io.LimitReader(zr, maxDocument+1))
		}
		if err != nil || len(body) > maxDocument {
			resp.Body = io.NopCloser(bytes.NewReader(raw)) // served as sent
			return nil
		}
		resp.Header.Del("Content-Encoding")
	}
	out := b.inj.Document(resp.Request, body)
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	resp.Header.Del("ETag")
	resp.Header.Del("Last-Modified")
	resp.Header.Set("Cache-Control", "no-store")
	return nil
}

// isDocument reports whether resp is an HTML page or frame the browser
// navigated to: a GET answered 200 with HTML, asked for as a document
// (Sec-Fetch-Dest, which Chromium sends to trustworthy origins only, else
// an Accept that puts HTML first, as navigations do and fetch does not).
func isDocument(resp *http.Response) bool {
	req := resp.Request
	if req == nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return false
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/html" && mt != "application/xhtml+xml" {
		return false
	}
	switch req.Header.Get("Sec-Fetch-Dest") {
	case "document", "iframe", "frame":
		return true
	case "":
		return strings.HasPrefix(req.Header.Get("Accept"), "text/html")
	}
	return false
}

// readCloser reads r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }
