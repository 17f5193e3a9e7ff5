// Command testsite is the tiny website the hosting tests run under both
// backends: an HTTP server whose whole state is one file.
//
//	GET /        "state=<contents of the state file>"
//	GET /set?v=X writes X to the state file
//	GET /ready   200 once serving
//	GET /cookies "cookies=<the request's Cookie header>"
//
// It listens on $PORT (default 8080) on 127.0.0.1 and keeps its state in
// $DATA_DIR/state (default /data/state). With $BASE_URL set it behaves like
// Magento with its base_url baked in: every request whose Host is not
// BASE_URL's is redirected (301) to the same path under BASE_URL. For the hosting benchmark it can
// stand in for a site with a large database: `testsite fill PATH BYTES`
// writes a file of that size, and with $TOUCH=PATH every start writes 4 KiB
// into that file first, as a database touches its files when it opens.
// A start whose state is "broken" fails (a copy of a site that cannot come
// up), so tests can break a fork. For the tests of running commands in an
// instance (hosting.Execer) it has subcommands: `testsite exec-say TEXT`
// (TEXT and $X to stdout, "to stderr" to stderr, exit status $CODE),
// `exec-sleep MS`, `exec-spew BYTES`, `exec-write PATH TEXT`.
package main

import (
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "fill" {
		if err := fill(os.Args[2], os.Args[3]); err != nil {
			log.Fatal(err)
		}
		return
	}
	if len(os.Args) >= 2 && strings.HasPrefix(os.Args[1], "exec-") {
		os.Exit(execCmd(os.Args[1], os.Args[2:]))
	}
	if p := os.Getenv("TOUCH"); p != "" {
		if err := touch(p); err != nil {
			log.Fatal(err)
		}
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	dir := os.Getenv("DATA_DIR")
	if dir == "" {
		dir = "/data"
	}
	state := filepath.Join(dir, "state")
	if b, _ := os.ReadFile(state); string(b) == "broken" {
		log.Fatal("the state is broken")
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		b, _ := os.ReadFile(state)
		fmt.Fprintf(w, "state=%s", b)
	})
	http.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		if err := os.WriteFile(state, []byte(r.URL.Query().Get("v")), 0o644); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	})
	http.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ready") })
	http.HandleFunc("/cookies", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "cookies=%s", r.Header.Get("Cookie")) })
	var h http.Handler = http.DefaultServeMux
	if base := os.Getenv("BASE_URL"); base != "" {
		h = redirectToBase(base, h)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, h))
}

// redirectToBase sends every request for another host to base, keeping
// its path, as a site with a baked-in base URL does. /ready answers on any
// host, so a readiness probe at the instance's own address works.
func redirectToBase(base string, next http.Handler) http.Handler {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		log.Fatalf("BASE_URL %q is not a URL", base)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != u.Host && r.URL.Path != "/ready" {
			http.Redirect(w, r, strings.TrimRight(base, "/")+r.URL.RequestURI(), http.StatusMovedPermanently)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fill writes size bytes of incompressible data to path.
func fill(path, size string) error {
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for n > 0 {
		for i := 0; i < len(buf); i += 8 {
			v := r.Uint64()
			for j := 0; j < 8; j++ {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		k := min(int64(len(buf)), n)
		if _, err := f.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return f.Sync()
}

// touch writes 4 KiB at a random offset of path and syncs it.
func touch(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return nil // not created yet (the base's first start, before fill)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	off := int64(0)
	if st.Size() > 4096 {
		off = rand.Int64N(st.Size()/4096) * 4096
	}
	if _, err := f.WriteAt(make([]byte, 4096), off); err != nil {
		return err
	}
	return f.Sync()
}

// execCmd runs one of the exec- subcommands and returns its exit status.
func execCmd(name string, args []string) int {
	switch {
	case name == "exec-say" && len(args) == 1:
		fmt.Printf("%s %s\n", args[0], os.Getenv("X"))
		fmt.Fprintln(os.Stderr, "to stderr")
		code, _ := strconv.Atoi(os.Getenv("CODE"))
		return code
	case name == "exec-sleep" && len(args) == 1:
		ms, _ := strconv.Atoi(args[0])
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return 0
	case name == "exec-spew" && len(args) == 1:
		n, _ := strconv.Atoi(args[0])
		_, _ = os.Stdout.Write([]byte(strings.Repeat("x", n)))
		return 0
	case name == "exec-write" && len(args) == 2:
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "testsite: bad exec command %s %v\n", name, args)
	return 2
}
