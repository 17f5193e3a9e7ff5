package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"image/jpeg"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/server"
)

// With preview_ms, the live picture shows the action's target outlined
// before the action runs, and the outline is gone from the observation.
func TestPreviewInLivePicture(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, server.Config{})
	cl := dial(t, base)
	env := cl.call("make", "", map[string]any{"start_url": pageURL(4), "preview_ms": 1500})["env"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/ui/api/envs/"+env+"/screen", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	outlined := make(chan int, 1)
	first := make(chan struct{}) // the stream's first frame came: the page before the step
	go func() {
		best, notify := 0, first
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				continue
			}
			if notify != nil {
				close(notify)
				notify = nil
			}
			if n := outlinePixels(raw); n > best {
				best = n
			}
			if best >= 40 {
				break
			}
		}
		outlined <- best
	}()
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the live picture sent no frame")
	}
	res := cl.call("step", env, map[string]any{"action": `click("load")`})
	html := res["obs"].(map[string]any)["html"].(string)
	if strings.Contains(html, "preview") || !strings.Contains(html, "loaded 4") {
		t.Errorf("observation after a previewed click: %s", html)
	}
	cancel()
	if n := <-outlined; n < 40 {
		t.Errorf("no frame of the live picture showed the outline (best: %d outline pixels)", n)
	}
}

// outlinePixels counts pixels near the preview's outline colour (#f59e0b)
// in a JPEG.
func outlinePixels(b []byte) int {
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return 0
	}
	n := 0
	r := img.Bounds()
	near := func(v, want uint32) bool { d := int(v>>8) - int(want); return d > -40 && d < 40 }
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if near(cr, 0xf5) && near(cg, 0x9e) && near(cb, 0x0b) {
				n++
			}
		}
	}
	return n
}
