package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

//go:embed demo/shop.html
var demoPage string

type product struct {
	ID    int     `json:"id"`
	Name  string  `json:"name"`
	Price float64 `json:"price"`
	Cat   string  `json:"cat"`
}

var demoCatalog = []product{
	{1, "Blue ceramic mug", 12.5, "mugs"}, {2, "Travel mug", 18, "mugs"}, {3, "Espresso cup set", 24, "mugs"},
	{4, "Linen shirt", 39, "shirts"}, {5, "Denim shirt", 45, "shirts"},
}

// demoServer serves the demo shop on a loopback port. Its API answers after
// a short delay, like a real backend, so steps have something to wait for.
func demoServer() (string, func(), error) {
	var mu sync.Mutex
	cart := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, demoPage)
	})
	mux.HandleFunc("/api/search", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(250 * time.Millisecond)
		q := strings.ToLower(r.URL.Query().Get("q"))
		out := []product{}
		for _, p := range demoCatalog {
			if q != "" && (strings.Contains(strings.ToLower(p.Name), q) || p.Cat == q) {
				out = append(out, p)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("/api/cart", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		cart++
		n := cart
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]int{"count": n})
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("demo server: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String() + "/", func() { _ = srv.Close() }, nil
}

// demoCmd runs a scripted episode on the demo shop: hover a menu that only
// opens on hover, pick a category, search as you type, choose a size, add
// to cart (a fetch that updates the mini-cart), and answer.
func demoCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var ef envFlags
	ef.register(fs)
	interactive := fs.Bool("i", false, "after the script, keep reading actions from stdin")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	url, stop, err := demoServer()
	if err != nil {
		return err
	}
	defer stop()
	b, err := ef.launch(ctx, log)
	if err != nil {
		return err
	}
	defer b.Close()
	env := b.NewEnv(ef.cfg)
	defer env.Close()

	fmt.Fprintf(stdout, "WebServ demo: a shop served at %s\n", url)
	obs, info, err := env.Reset(ctx, url)
	if err != nil {
		return err
	}
	printObservation(stdout, obs, info, ef.cfg.Observe.AXTree)
	script := []string{
		`hover("shop.categories")`,
		`click("shop.mugs")`,
		`fill("search.search-products", "shirt")`,
		`select_option("size-2", "L")`,
		`click("add-to-cart-2")`,
	}
	if !*interactive {
		script = append(script, `stop [Denim shirt, size L, is in the cart]`)
	}
	for _, a := range script {
		fmt.Fprintf(stdout, "\n>>> %s\n", a)
		obs, info, err = env.StepText(ctx, a)
		if err != nil {
			return err
		}
		printObservation(stdout, obs, info, ef.cfg.Observe.AXTree)
	}
	if *interactive {
		return repl(ctx, env, stdin, stdout, ef.cfg.Observe.AXTree)
	}
	return nil
}
