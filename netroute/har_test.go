package netroute

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// traceSite serves a page, a gzipped page, a large body and a form.
func traceSite(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gz":
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Type", "text/html")
			gz := gzip.NewWriter(w)
			gz.Write([]byte("<p>compressed page</p>"))
			gz.Close()
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			w.Write(bytes.Repeat([]byte("x"), 10000))
		case "/cart":
			body := new(bytes.Buffer)
			body.ReadFrom(r.Body)
			w.Header().Set("Location", "/cart/done")
			w.WriteHeader(http.StatusSeeOther)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<p>page " + r.URL.RequestURI() + "</p>"))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestRecorderKeepsEachRequestWithCanonicalURLAndBrowserHeaders(t *testing.T) {
	s := traceSite(t)
	tb := tableWith(t, Policy{}, s)
	rec := NewRecorder(RecordOptions{})
	tb.Record(rec)
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))

	get(t, c, shop+"/category/t-shirts?sort=price_asc&q=a%20b", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document", "Proxy-Connection", "keep-alive")
	if got := get(t, c, shop+"/gz"); got.status != 200 {
		t.Fatalf("gzip page: %d", got.status)
	}
	resp, err := c.Post(shop+"/cart", "application/x-www-form-urlencoded", strings.NewReader("sku=TSH-1000&qty=1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	h := rec.HAR()
	if h.Log.Version != "1.2" || len(h.Log.Entries) != 3 {
		t.Fatalf("want a HAR 1.2 log of 3 entries, got version %q and %d entries", h.Log.Version, len(h.Log.Entries))
	}
	nav := h.Log.Entries[0]
	if nav.Request.URL != shop+"/category/t-shirts?sort=price_asc&q=a%20b" {
		t.Errorf("URL %q: want the canonical origin's URL, never the instance's address %s", nav.Request.URL, s.URL)
	}
	hdr := map[string]string{}
	for _, p := range nav.Request.Headers {
		hdr[p.Name] = p.Value
	}
	if hdr["Sec-Fetch-Mode"] != "navigate" || hdr["Sec-Fetch-Dest"] != "document" || hdr["Host"] != "shop.webserv.test" {
		t.Errorf("request headers %v: want the browser's sec-fetch-* headers and the canonical Host", hdr)
	}
	if _, ok := hdr["Proxy-Connection"]; ok {
		t.Errorf("the proxy-only header Proxy-Connection was kept: %v", hdr)
	}
	if q := nav.Request.QueryString; len(q) != 2 || q[0] != (HARNameValue{"sort", "price_asc"}) || q[1] != (HARNameValue{"q", "a b"}) {
		t.Errorf("query string %v", q)
	}
	if nav.Response.Status != 200 || !strings.Contains(nav.Response.Content.Text, "page /category/t-shirts") || nav.Response.Content.MimeType != "text/html; charset=utf-8" {
		t.Errorf("response %+v", nav.Response)
	}
	if nav.Timings.Wait < 0 || nav.Timings.Receive < 0 || nav.Time != nav.Timings.Wait+nav.Timings.Receive || nav.StartedDateTime == "" {
		t.Errorf("timings %+v time %v started %q", nav.Timings, nav.Time, nav.StartedDateTime)
	}
	if gz := h.Log.Entries[1].Response.Content; gz.Text != "<p>compressed page</p>" || gz.Size != int64(len(gz.Text)) {
		t.Errorf("gzip body %+v: want it decoded", gz)
	}
	post := h.Log.Entries[2]
	if post.Request.Method != "POST" || post.Request.PostData == nil || post.Request.PostData.Text != "sku=TSH-1000&qty=1" || post.Request.BodySize != 18 {
		t.Errorf("POST %+v", post.Request)
	}
	if post.Response.Status != 303 || post.Response.RedirectURL != "/cart/done" {
		t.Errorf("redirect %+v", post.Response)
	}
	if _, err := json.Marshal(h); err != nil {
		t.Fatal(err)
	}
}

func TestRecorderBoundsBodiesEntriesAndStopsWhenDetached(t *testing.T) {
	s := traceSite(t)
	tb := tableWith(t, Policy{}, s)
	rec := NewRecorder(RecordOptions{BodyLimit: 1000, EpisodeBytes: 2500, MaxEntries: 4})
	tb.Record(rec)
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	for range 5 {
		if got := get(t, c, shop+"/big"); len(got.body) != 10000 {
			t.Fatalf("the browser got %d bytes of 10000: recording must not change responses", len(got.body))
		}
	}
	h := rec.HAR()
	if len(h.Log.Entries) != 4 || !strings.Contains(h.Log.Comment, "1 requests") {
		t.Fatalf("want 4 entries and one counted as dropped, got %d, comment %q", len(h.Log.Entries), h.Log.Comment)
	}
	kept := 0
	for i, e := range h.Log.Entries {
		c := e.Response.Content
		if c.Size != 10000 || len(c.Text) > 1000 || c.Comment == "" {
			t.Errorf("entry %d: size %d, %d bytes kept, comment %q: want the full size, at most 1000 bytes, and a note", i, c.Size, len(c.Text), c.Comment)
		}
		kept += len(c.Text)
	}
	if kept > 2500 {
		t.Errorf("kept %d body bytes over the episode; the budget is 2500", kept)
	}

	tb.Record(nil)
	get(t, c, shop+"/after")
	if rec.Len() != 4 {
		t.Errorf("a detached recorder recorded: %d entries", rec.Len())
	}
}
