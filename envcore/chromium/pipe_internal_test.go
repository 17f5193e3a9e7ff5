package chromium

import (
	"errors"
	"testing"
)

// A write that fails because the browser's end of the pipe is gone ends
// the connection at once: a browser seen dead by its writer is dead to
// every caller (Alive, the crash errors), without waiting for the reader
// to reach its end of file.
func TestAWriteToAGoneBrowserClosesTheConnection(t *testing.T) {
	c, theirs, err := devtoolsPipes()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The browser ends: its ends of both pipes close, but no one reads
	// ours yet.
	for _, f := range theirs {
		_ = f.Close()
	}
	if err := c.Send([]byte(`{"id":1}`)); err == nil {
		t.Fatal("a write to a pipe whose reader is gone succeeded")
	}
	select {
	case <-c.closed:
	default:
		t.Fatal("the failed write left the connection open")
	}
	if err := c.Send([]byte(`{"id":2}`)); !errors.Is(err, errPipeClosed) {
		t.Errorf("the next write: %v, want errPipeClosed", err)
	}
}
