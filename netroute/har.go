package netroute

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/): the network
// trace of one episode, as a Recorder builds it. Only the fields WebServ
// fills are declared; the rest of the format is optional.

// HAR is a HAR 1.2 document.
type HAR struct {
	Log HARLog `json:"log"`
}

// HARLog is a HAR's log.
type HARLog struct {
	Version string     `json:"version"`
	Creator HARCreator `json:"creator"`
	Pages   []any      `json:"pages"`
	Entries []HAREntry `json:"entries"`
	Comment string     `json:"comment,omitempty"`
}

// HARCreator names the program that wrote the HAR.
type HARCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// HAREntry is one request and its response.
type HAREntry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"` // ms, the sum of the timings
	Request         HARRequest  `json:"request"`
	Response        HARResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         HARTimings  `json:"timings"`
	Comment         string      `json:"comment,omitempty"`
}

// HARRequest is a recorded request.
type HARRequest struct {
	Method      string         `json:"method"`
	URL         string         `json:"url"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARNameValue `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	QueryString []HARNameValue `json:"queryString"`
	PostData    *HARPostData   `json:"postData,omitempty"`
	HeadersSize int            `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
}

// HARResponse is a recorded response.
type HARResponse struct {
	Status      int            `json:"status"`
	StatusText  string         `json:"statusText"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARNameValue `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	Content     HARContent     `json:"content"`
	RedirectURL string         `json:"redirectURL"`
	HeadersSize int            `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
}

// HARNameValue is a header, cookie or query parameter.
type HARNameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HARPostData is a request body.
type HARPostData struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Comment  string `json:"comment,omitempty"`
}

// HARContent is a response body (decoded when the site compressed it).
type HARContent struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Encoding string `json:"encoding,omitempty"` // "base64" for a body that is not UTF-8
	Comment  string `json:"comment,omitempty"`
}

// HARTimings are an entry's phases in ms; -1 is "not measured".
type HARTimings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// RecordOptions bound what a Recorder keeps.
type RecordOptions struct {
	// BodyLimit is the most bytes of each request and response body kept
	// (0: 256 KiB; negative: no bodies). A longer body is cut and its
	// comment says so.
	BodyLimit int
	// EpisodeBytes is the most body bytes kept over the episode (0: 16
	// MiB); past it, bodies are left out and their comment says so.
	EpisodeBytes int64
	// MaxEntries is the most entries kept (0: 20000); later requests are
	// counted in the log's comment.
	MaxEntries int
	// Creator names the program in the HAR (default "webserv").
	Creator HARCreator
}

func (o RecordOptions) withDefaults() RecordOptions {
	if o.BodyLimit == 0 {
		o.BodyLimit = 256 << 10
	}
	if o.EpisodeBytes == 0 {
		o.EpisodeBytes = 16 << 20
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = 20000
	}
	if o.Creator.Name == "" {
		o.Creator = HARCreator{Name: "webserv", Version: "1"}
	}
	return o
}

// Recorder is one episode's network trace: every plain-http request a
// Table routes while the recorder is attached (Table.Record), with its
// response. https tunnels are opaque and not recorded. It is safe for
// concurrent use; a Table without a recorder pays one atomic load per
// request.
type Recorder struct {
	opts RecordOptions

	mu      sync.Mutex
	entries []*record
	kept    int64 // body bytes kept
	dropped int   // requests past MaxEntries
}

// NewRecorder returns an empty recorder.
func NewRecorder(o RecordOptions) *Recorder { return &Recorder{opts: o.withDefaults()} }

// Len is how many entries the recorder holds.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// HAR builds the trace recorded so far. Requests not answered yet are
// left out; compressed bodies are decoded here, not while the browser waits.
func (r *Recorder) HAR() *HAR {
	r.mu.Lock()
	recs := slices.Clone(r.entries)
	dropped := r.dropped
	r.mu.Unlock()
	h := &HAR{Log: HARLog{Version: "1.2", Creator: r.opts.Creator, Pages: []any{}, Entries: make([]HAREntry, 0, len(recs))}}
	for _, rec := range recs {
		if e, ok := rec.entry(r.opts.BodyLimit); ok {
			h.Log.Entries = append(h.Log.Entries, e)
		}
	}
	if dropped > 0 {
		h.Log.Comment = "entries past the recorder's limit were not kept: " + strconv.Itoa(dropped) + " requests"
	}
	return h
}

// record is one request while it is served and after.
type record struct {
	mu       sync.Mutex
	done     bool
	start    time.Time
	method   string
	url      string
	reqHdr   http.Header
	reqBody  capture
	status   int
	respHdr  http.Header
	header   time.Time // when the response's headers were written
	end      time.Time
	respBody capture
}

// capture keeps a body's first bytes (up to a limit) and counts them all.
type capture struct {
	buf   []byte
	limit int // bytes still to keep
	size  int64
	cut   string // why bytes were left out
}

func (c *capture) write(p []byte) {
	c.size += int64(len(p))
	n := min(len(p), c.limit)
	if n > 0 {
		c.buf = append(c.buf, p[:n]...)
		c.limit -= n
	}
	if n < len(p) && c.cut == "" {
		c.cut = "body cut at the recorder's limit (RecordOptions.BodyLimit or EpisodeBytes)"
	}
}

// hopHeaders are proxy-to-browser headers that never reach a site.
var hopHeaders = []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate"}

// begin starts an entry for req, or returns nil past MaxEntries.
func (r *Recorder) begin(req *http.Request) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) >= r.opts.MaxEntries {
		r.dropped++
		return nil
	}
	h := req.Header.Clone()
	for _, k := range hopHeaders {
		h.Del(k)
	}
	h.Set("Host", req.Host)
	rec := &record{start: time.Now(), method: req.Method, url: req.URL.String(), reqHdr: h}
	rec.reqBody.limit, rec.respBody.limit = r.budget(), r.budget()
	r.entries = append(r.entries, rec)
	return rec
}

// budget is how many bytes the next body may keep. r.mu is held.
func (r *Recorder) budget() int {
	if r.opts.BodyLimit < 0 {
		return 0
	}
	left := r.opts.EpisodeBytes - r.kept
	if left <= 0 {
		return 0
	}
	n := int64(r.opts.BodyLimit)
	if left < n {
		n = left
	}
	r.kept += n // reserved; finish returns what was not used
	return int(n)
}

// finish ends rec and returns its unused budget.
func (r *Recorder) finish(rec *record) {
	rec.mu.Lock()
	rec.done, rec.end = true, time.Now()
	if rec.header.IsZero() {
		rec.header = rec.end
	}
	unused := rec.reqBody.limit + rec.respBody.limit
	rec.mu.Unlock()
	r.mu.Lock()
	r.kept -= int64(unused)
	r.mu.Unlock()
}

// serve serves req through h, recording it.
func (r *Recorder) serve(w http.ResponseWriter, req *http.Request, h http.Handler) {
	rec := r.begin(req)
	if rec == nil {
		h.ServeHTTP(w, req)
		return
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &teeBody{rc: req.Body, rec: rec}
	}
	rw := &recordingWriter{ResponseWriter: w, rec: rec}
	defer r.finish(rec)
	h.ServeHTTP(rw, req)
	if !rw.wrote {
		rw.WriteHeader(http.StatusOK)
	}
}

// teeBody keeps what the proxy reads of a request body.
type teeBody struct {
	rc  io.ReadCloser
	rec *record
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.rec.mu.Lock()
		b.rec.reqBody.write(p[:n])
		b.rec.mu.Unlock()
	}
	return n, err
}

func (b *teeBody) Close() error { return b.rc.Close() }

// recordingWriter keeps the response as the proxy writes it.
type recordingWriter struct {
	http.ResponseWriter
	rec   *record
	wrote bool
}

func (w *recordingWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		w.rec.mu.Lock()
		w.rec.status, w.rec.respHdr, w.rec.header = code, w.Header().Clone(), time.Now()
		w.rec.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if n > 0 {
		w.rec.mu.Lock()
		w.rec.respBody.write(p[:n])
		w.rec.mu.Unlock()
	}
	return n, err
}

// Unwrap lets http.ResponseController (ReverseProxy's flushes) reach the
// connection's writer.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// entry is rec as a HAR entry; ok is false while no response has begun.
// A response still being written is taken as it is so far.
func (rec *record) entry(bodyLimit int) (HAREntry, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.done && rec.header.IsZero() {
		return HAREntry{}, false
	}
	end := rec.end
	if !rec.done {
		end = time.Now()
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	wait, receive := ms(rec.header.Sub(rec.start)), ms(end.Sub(rec.header))
	e := HAREntry{
		StartedDateTime: rec.start.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Time:            wait + receive,
		Timings:         HARTimings{Blocked: -1, DNS: -1, Connect: -1, Send: 0, Wait: wait, Receive: receive},
	}
	e.Request = HARRequest{Method: rec.method, URL: rec.url, HTTPVersion: "HTTP/1.1", Cookies: []HARNameValue{},
		Headers: pairs(rec.reqHdr), QueryString: query(rec.url), HeadersSize: -1, BodySize: rec.reqBody.size}
	if rec.reqBody.size > 0 {
		text, enc := bodyText(rec.reqBody.buf)
		pd := &HARPostData{MimeType: rec.reqHdr.Get("Content-Type"), Text: text, Comment: rec.reqBody.cut}
		if enc != "" {
			pd.Comment = strings.TrimSpace(pd.Comment + " (base64: not UTF-8)")
		}
		e.Request.PostData = pd
	}
	status := rec.status
	if status == 0 {
		status, e.Comment = 0, "no response: the browser went away or the site did not answer"
	}
	e.Response = HARResponse{Status: status, StatusText: http.StatusText(status), HTTPVersion: "HTTP/1.1", Cookies: []HARNameValue{},
		Headers: pairs(rec.respHdr), RedirectURL: rec.respHdr.Get("Location"), HeadersSize: -1, BodySize: rec.respBody.size}
	e.Response.Content = content(rec.respHdr, rec.respBody, bodyLimit)
	return e, true
}

// content is a response body as HAR keeps it: decoded when the site
// compressed it with gzip or deflate and the whole body was kept.
func content(h http.Header, c capture, limit int) HARContent {
	hc := HARContent{Size: c.size, MimeType: h.Get("Content-Type"), Comment: c.cut}
	body := c.buf
	switch ce := strings.ToLower(h.Get("Content-Encoding")); {
	case ce == "" || ce == "identity" || len(body) == 0:
	case c.cut != "":
		hc.Comment += "; compressed (" + ce + "), so not decoded"
		body = nil
	case ce == "gzip" || ce == "deflate":
		var zr io.Reader
		if ce == "gzip" {
			gz, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				hc.Comment = "gzip body could not be decoded: " + err.Error()
				return hc
			}
			zr = gz
		} else {
			zr = flate.NewReader(bytes.NewReader(body))
		}
		dec, err := io.ReadAll(io.LimitReader(zr, int64(max(limit, 0))+1))
		if err != nil {
			hc.Comment = ce + " body could not be decoded: " + err.Error()
			return hc
		}
		if len(dec) > limit {
			dec, hc.Comment = dec[:limit], "decoded body cut at the recorder's limit"
		}
		body, hc.Size = dec, int64(len(dec))
	default:
		hc.Comment = "body compressed with " + ce + ": not kept"
		body = nil
	}
	hc.Text, hc.Encoding = bodyText(body)
	return hc
}

// bodyText is a body as HAR text: itself when UTF-8, else base64.
func bodyText(b []byte) (text, encoding string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

// pairs lists h sorted by name (HTTP/1.1's canonical names).
func pairs(h http.Header) []HARNameValue {
	out := make([]HARNameValue, 0, len(h))
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, HARNameValue{Name: k, Value: v})
		}
	}
	slices.SortStableFunc(out, func(a, b HARNameValue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// query lists a URL's query parameters in order.
func query(raw string) []HARNameValue {
	out := []HARNameValue{}
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return out
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		ku, err1 := url.QueryUnescape(k)
		vu, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			ku, vu = k, v
		}
		out = append(out, HARNameValue{Name: ku, Value: vu})
	}
	return out
}

// Record attaches r to t: from the next request on, every plain-http
// request t routes (to its origins and, under its policy, elsewhere) is
// recorded in r, with its canonical URL, headers as the browser sent them,
// bodies within r's limits, and timings. nil detaches; a new episode's
// recorder replaces the last one's, which keeps what it holds.
func (t *Table) Record(r *Recorder) { t.rec.Store(r) }

// Recording is the recorder attached to t, or nil.
func (t *Table) Recording() *Recorder { return t.rec.Load() }

// through serves req with h, recorded when t has a recorder.
func (t *Table) through(w http.ResponseWriter, req *http.Request, h http.Handler) {
	if r := t.rec.Load(); r != nil {
		r.serve(w, req, h)
		return
	}
	h.ServeHTTP(w, req)
}
