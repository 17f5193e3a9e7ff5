package server

import "testing"

// The site's state is for trainers: no MCP tool reaches state_diff (the
// policy's front end offers actions and episode control only).
func TestMCPOffersNoStateDiff(t *testing.T) {
	if _, ok := lookupOp("state_diff"); !ok {
		t.Fatal("the ops table has no state_diff")
	}
	for _, tool := range mcpTools {
		if tool.name == "state_diff" || tool.name == "state" {
			t.Errorf("MCP tool %q exposes the site's state", tool.name)
		}
	}
}
