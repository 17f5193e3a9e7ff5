package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// webserv mcp --help is asked for (exit 0) and lists the session's flags.
func TestMCPHelp(t *testing.T) {
	var err error
	out := stderrOf(t, func() { err = mcpCmd(context.Background(), nil, []string{"--help"}, nil, io.Discard) })
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("mcp --help returned %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-task", "-site", "-record", "-listen", "stdin and stdout"} {
		if !strings.Contains(out, want) {
			t.Errorf("mcp --help lacks %q:\n%s", want, out)
		}
	}
	if err := mcpCmd(context.Background(), nil, []string{"--record"}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "--trajectories") {
		t.Errorf("--record without --trajectories: %v", err)
	}
}

// An MCP host launches webserv mcp and speaks MCP over its stdio, with the
// SDK's client: the tools are the actions, a reset without arguments
// starts the --task given, and the task's oracle, as tool calls, gets
// reward 1. Closing the session ends the process.
func TestMCPOverStdioSolvesTheTask(t *testing.T) {
	dir := t.TempDir()
	bin := hostingtest.BuildStatic(t, "cmd/webserv", filepath.Join(dir, "webserv"))
	raw, err := shop.TaskFile("shopping")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tasks.ParseTasks(raw, "shopping")
	if err != nil {
		t.Fatal(err)
	}
	var oracle []string
	for _, tk := range set.Tasks {
		if tk.ID == 0 {
			oracle = tk.Oracle
		}
	}
	cmd := exec.Command(bin, "mcp", "--no-incus", "--verified-python", "", "--instances", filepath.Join(dir, "instances"),
		"--shop-data", filepath.Join(dir, "shop-data"), "--task", "shopping.0", "--idle", "150ms")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "webserv-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to webserv mcp: %v\n%s", err, stderr.String())
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, d := range envcore.Actions() {
		if !slices.Contains(names, d.Name) {
			t.Errorf("no tool for action %s in %v", d.Name, names)
		}
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr.String())
		}
		if res.IsError {
			t.Fatalf("%s %v: %v", name, args, res.Content[0].(*mcp.TextContent).Text)
		}
		return res
	}
	res := call("reset", nil)
	if st := res.StructuredContent.(map[string]any); st["task_id"] != "shopping.0" {
		t.Fatalf("reset without arguments started %v, want --task shopping.0", st)
	}
	for _, action := range oracle {
		a, err := envcore.ParseAction(action)
		if err != nil {
			t.Fatal(err)
		}
		switch a.Type {
		case envcore.Type:
			res = call("fill", map[string]any{"bid": a.Target, "value": a.Text})
		case envcore.Click:
			res = call("click", map[string]any{"bid": a.Target})
		case envcore.Terminate:
			res = call("stop", map[string]any{"answer": a.Answer})
		default:
			t.Fatalf("no tool call for %s in this test", action)
		}
	}
	if st := res.StructuredContent.(map[string]any); st["reward"] != 1.0 || st["terminated"] != true {
		t.Errorf("the oracle's last result: %v", st)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("webserv mcp did not exit when the session closed: %v", cmd.ProcessState)
	}
}
