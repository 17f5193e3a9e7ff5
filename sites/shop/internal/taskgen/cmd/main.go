// Command cmd rewrites sites/shop/tasks/*.json (run by go generate in
// sites/shop).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/webserv-rl/webserv/sites/shop/internal/taskgen"
)

func main() {
	if err := taskgen.Write(context.Background(), "tasks"); err != nil {
		fmt.Fprintln(os.Stderr, "taskgen:", err)
		os.Exit(1)
	}
}
