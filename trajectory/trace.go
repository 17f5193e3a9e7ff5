package trajectory

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/webserv-rl/webserv/netroute"
)

// TraceExt ends the name of an episode's network trace: a gzipped HAR 1.2
// file beside the episode's own file, <env>/<NNNN>.har.gz for
// <env>/<NNNN>.jsonl.gz. A trace is written when its episode ends.
const TraceExt = ".har.gz"

// TracePath is where the network trace of the episode recorded at path is.
func TracePath(path string) string {
	return strings.TrimSuffix(path, Ext) + TraceExt
}

// WriteTrace writes h to path, gzip-compressed when path ends in ".gz".
func WriteTrace(path string, h *netroute.HAR) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write the network trace: %w", err)
	}
	var enc *json.Encoder
	var gz *gzip.Writer
	if filepath.Ext(path) == ".gz" {
		gz = gzip.NewWriter(f)
		enc = json.NewEncoder(gz)
	} else {
		enc = json.NewEncoder(f)
	}
	err = enc.Encode(h)
	if gz != nil {
		if cerr := gz.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the network trace %s: %w; check the disk", path, err)
	}
	return nil
}

// ReadTrace reads the HAR file at path (gzipped when it ends in ".gz").
func ReadTrace(path string) (*netroute.HAR, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the network trace: %w", err)
	}
	defer f.Close()
	var h netroute.HAR
	var dec *json.Decoder
	if filepath.Ext(path) == ".gz" {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("read the network trace %s: %w", path, err)
		}
		dec = json.NewDecoder(gz)
	} else {
		dec = json.NewDecoder(f)
	}
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("read the network trace %s: %w", path, err)
	}
	return &h, nil
}

// Request is one request of a network trace placed on its episode's
// timeline (Episode.Network).
type Request struct {
	Method   string `json:"method"`
	URL      string `json:"url"`
	Status   int    `json:"status"` // 0: no response (the request failed or was refused)
	MimeType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size"` // response body bytes
	// StartMS is when the request began, in ms from its step's start: the
	// moment the step's action began to run (for the first observation,
	// the first request's start).
	StartMS float64 `json:"start_ms"`
	MS      float64 `json:"ms"` // how long it took, to the response's last byte
	// AfterReply is set for a request that began after the step had
	// replied: while the agent chose its next action (pollers, timers,
	// late work of the page).
	AfterReply bool   `json:"after_reply,omitempty"`
	Comment    string `json:"comment,omitempty"` // the recorder's note (a body cut short, a refusal)
}

// Network places every request of h on the episode's timeline, by the time
// it began: out[0] holds the requests before the first step's action (the
// reset and its start page), out[i] those from step i's action up to step
// i+1's. Requests are in the order they began.
func (e *Episode) Network(h *netroute.HAR) [][]Request {
	out := make([][]Request, len(e.Steps)+1)
	if h == nil {
		return out
	}
	starts := make([]time.Time, len(e.Steps))
	for i, s := range e.Steps {
		starts[i] = s.Start()
	}
	type timed struct {
		at time.Time
		e  *netroute.HAREntry
	}
	entries := make([]timed, 0, len(h.Log.Entries))
	for i := range h.Log.Entries {
		en := &h.Log.Entries[i]
		at, err := time.Parse(time.RFC3339Nano, en.StartedDateTime)
		if err != nil {
			continue // not one of ours; HAR requires the field
		}
		entries = append(entries, timed{at, en})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at.Before(entries[j].at) })
	var first time.Time // the first request before any step: step 0's origin
	for _, t := range entries {
		// The step whose action began last at or before the request.
		i := sort.Search(len(starts), func(k int) bool { return starts[k].After(t.at) })
		origin, after := first, false
		if i == 0 && first.IsZero() {
			first, origin = t.at, t.at
		}
		if i > 0 {
			origin = starts[i-1]
			after = t.at.After(e.Steps[i-1].Time)
		}
		en := t.e
		out[i] = append(out[i], Request{
			Method: en.Request.Method, URL: en.Request.URL, Status: en.Response.Status,
			MimeType: en.Response.Content.MimeType, Size: en.Response.Content.Size,
			StartMS: ms(t.at.Sub(origin)), MS: en.Time, AfterReply: after, Comment: en.Comment,
		})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
