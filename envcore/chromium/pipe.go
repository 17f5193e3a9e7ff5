package chromium

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sync"
)

// DevTools over a pipe. Chromium started with --remote-debugging-pipe
// reads protocol commands from its file descriptor 3 and writes replies
// and events to its descriptor 4, each message one JSON text followed by a
// NUL byte. Unlike --remote-debugging-port, which listens on a TCP port
// that any local process may connect to and then read or drive every page
// of the browser, a pipe is open only in the processes that inherited it:
// the server (and, for the instant between fork and exec, the guard that
// starts Chromium).
//
// pipeConn is the server's side of the two pipes, shaped as rod's
// cdp.WebSocketable (Send and Read of whole messages), so rod's CDP
// client runs over it unchanged.
type pipeConn struct {
	toBrowser   *os.File // written by Send: Chromium's fd 3
	fromBrowser *os.File // read by Read: Chromium's fd 4
	r           *bufio.Reader

	wmu    sync.Mutex
	once   sync.Once
	closed chan struct{}
}

// errPipeClosed is what Send and Read answer once the connection is
// closed: the browser ended, or the server closed it.
var errPipeClosed = errors.New("the DevTools pipe to the browser is closed")

// devtoolsPipes makes the two pipes of one browser: the server's ends,
// and the browser's (fd 3, fd 4 in that order, for exec.Cmd.ExtraFiles),
// which the caller closes once the browser has started.
func devtoolsPipes() (*pipeConn, []*os.File, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("make the DevTools pipe: %w", err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		_ = cmdR.Close()
		_ = cmdW.Close()
		return nil, nil, fmt.Errorf("make the DevTools pipe: %w", err)
	}
	c := &pipeConn{toBrowser: cmdW, fromBrowser: evR, r: bufio.NewReaderSize(evR, 1<<16), closed: make(chan struct{})}
	return c, []*os.File{cmdR, evW}, nil
}

// Send writes one message. rod calls it from many goroutines at once; a
// message is written whole before the next.
func (c *pipeConn) Send(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return errPipeClosed
	default:
	}
	msg := make([]byte, len(data)+1) // data+NUL in one write
	copy(msg, data)
	if _, err := c.toBrowser.Write(msg); err != nil {
		// The browser's end is gone (it ended): the connection is over,
		// now, not once the reader gets to its end of file, so the
		// caller's error is the crash's and not a broken pipe's.
		c.Close()
		return fmt.Errorf("write to the browser's DevTools pipe: %w", err)
	}
	return nil
}

// Read returns the next message, without its NUL. It fails once the
// browser has closed its end (it ended) or Close was called.
func (c *pipeConn) Read() ([]byte, error) {
	msg, err := c.r.ReadBytes(0)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %w", errPipeClosed, err)
	}
	return msg[:len(msg)-1], nil
}

// Close closes the server's ends: a Read in progress returns, and every
// later Send and Read fails.
func (c *pipeConn) Close() {
	c.once.Do(func() {
		close(c.closed)
		_ = c.toBrowser.Close()
		_ = c.fromBrowser.Close()
	})
}
