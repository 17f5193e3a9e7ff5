// Command mechanism measures how an environment's traffic could be routed
// to its own site instance, on a page with 60 subresources: straight to the
// server (no routing), through a per-browser-context proxy (netroute, what
// WebServ does), and through CDP Fetch-domain interception (every request
// paused and continued by the controller, as a Fetch-based router would).
// Median page load over 21 rounds, the three in rotating order.
//
//	go run ./bench/mechanism
package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/netroute"
)

func main() {
	const n = 60
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			var b strings.Builder
			b.WriteString("<!doctype html><title>t</title>")
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, `<img src="/i/%d.svg" width=4 height=4>`, i)
			}
			fmt.Fprint(w, b.String())
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>`)
	}))
	defer site.Close()
	u := launcher.New().Bin("/usr/bin/chromium").Headless(true).Set("no-sandbox").Set("disable-gpu").MustLaunch()
	b := rod.New().ControlURL(u).MustConnect()
	defer b.MustClose()
	router := netroute.New(nil, netroute.Options{})
	tab := netroute.NewTable(netroute.Policy{})
	_ = tab.Set("http://shop.webserv.test", netroute.TCPDialer(strings.TrimPrefix(site.URL, "http://")))

	load := func(mode string) time.Duration {
		req := proto.TargetCreateBrowserContext{}
		target := site.URL + "/"
		if mode == "proxy" {
			rt, _ := router.NewRoute()
			rt.Bind(tab)
			defer rt.Close()
			req.ProxyServer, req.ProxyBypassList = rt.ProxyURL(), "<-loopback>"
			target = "http://shop.webserv.test/"
		}
		res, err := req.Call(b)
		if err != nil {
			panic(err)
		}
		defer proto.TargetDisposeBrowserContext{BrowserContextID: res.BrowserContextID}.Call(b)
		tg, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: res.BrowserContextID}.Call(b)
		if err != nil {
			panic(err)
		}
		pg := b.MustPageFromTargetID(tg.TargetID)
		if mode == "fetch" {
			// Every request paused and continued by the controller, as a
			// Fetch-domain router would (to rewrite or refuse it).
			router := pg.HijackRequests()
			router.MustAdd("*", func(h *rod.Hijack) { h.ContinueRequest(&proto.FetchContinueRequest{}) })
			go router.Run()
			defer router.MustStop()
		}
		t0 := time.Now()
		pg.MustNavigate(target).MustWaitLoad()
		return time.Since(t0)
	}
	for _, mode := range []string{"direct", "proxy", "fetch"} { // warm up
		load(mode)
	}
	res := map[string][]time.Duration{}
	modes := []string{"direct", "proxy", "fetch"}
	for i := 0; i < 21; i++ {
		for j := range modes {
			mode := modes[(i+j)%3]
			res[mode] = append(res[mode], load(mode))
		}
	}
	for _, mode := range []string{"direct", "proxy", "fetch"} {
		d := res[mode]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("%-6s page with %d subresources: median load %6.1f ms\n", mode, n, float64(d[len(d)/2].Microseconds())/1000)
	}
}
