package netroute_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/webserv-rl/webserv/netroute"
)

// Two environments hold two instances of the same site; each browser
// context reaches its own at the site's canonical origin.
func Example() {
	serve := func(state string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s, cart of %s", r.Host, state)
		}))
	}
	a, b := serve("environment A"), serve("environment B")
	defer a.Close()
	defer b.Close()

	router := netroute.New(nil, netroute.Options{})
	defer router.Close()
	for _, inst := range []*httptest.Server{a, b} {
		table := netroute.NewTable(netroute.Policy{}) // hosted: its own sites only
		table.Set("http://shop.webserv.test", netroute.TCPDialer(strings.TrimPrefix(inst.URL, "http://")))
		route, err := router.NewRoute() // one per browser context
		if err != nil {
			panic(err)
		}
		route.Bind(table)

		// The browser context, as Chromium would with proxyServer set.
		proxy, _ := url.Parse(route.ProxyURL())
		browser := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
		resp, err := browser.Get("http://shop.webserv.test/cart")
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(string(body))
		fmt.Println(table.Check("file:///etc/passwd"))
	}
	// Output:
	// shop.webserv.test, cart of environment A
	// file:///etc/passwd is refused: file: URLs are not opened in a web-agent environment; open an http:// or https:// URL
	// shop.webserv.test, cart of environment B
	// file:///etc/passwd is refused: file: URLs are not opened in a web-agent environment; open an http:// or https:// URL
}
