package shop

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"
)

// Main runs the shop command line: `serve` or `generate`. It returns the
// process exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := "usage: shop serve [--data DIR] [--port N] | shop generate --data DIR [--seed N] [--scale small|medium|large] | shop attack-data [--data DIR] [--admin] < words"
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serveCmd(ctx, args[1:], stdout, stderr)
	case "generate":
		err = generateCmd(ctx, args[1:], stdout, stderr)
	case "attack-data":
		err = attackDataCmd(ctx, args[1:], os.Stdin, stdout, stderr)
	default:
		err = fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
	if err != nil {
		fmt.Fprintln(stderr, "shop:", err)
		return 1
	}
	return 0
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shop serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", env("DATA_DIR", "/data"), "data directory (holds shop.db); $DATA_DIR")
	port := fs.String("port", env("PORT", "8080"), "TCP port on 127.0.0.1; $PORT")
	host := fs.String("host", env("HOST", "127.0.0.1"), "address to listen on; $HOST")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, _ := zap.NewProduction()
	defer log.Sync() //nolint:errcheck
	s, err := Open(*data, Options{EvalToken: os.Getenv("EVAL_TOKEN"), Log: log})
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, *port))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "shop serving %s on http://%s\n", *data, ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func generateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shop generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "new data directory")
	seed := fs.Uint64("seed", 1, "catalog seed; the bundled tasks are written for seed 1")
	scale := fs.String("scale", "small", "small, medium or large (~1 GiB)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data == "" {
		return errors.New("give --data DIR, the directory to create")
	}
	start := time.Now()
	if err := Generate(ctx, *data, GenerateOptions{Seed: *seed, Scale: Scale(*scale)}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "generated a %s catalog (seed %d) in %s in %.1fs\n", *scale, *seed, *data, time.Since(start).Seconds())
	return nil
}
