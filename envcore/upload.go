package envcore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// Uploads: upload_file and mouse_upload_file click what opens a file
// chooser and choose files in it, as BrowserGym's do. The chooser is
// intercepted (Page.setInterceptFileChooserDialog) for the click only, and
// the files are given to the input it belongs to (DOM.setFileInputFiles).
// The paths an agent names are inside the environment's upload directory
// (Config.UploadDir): an agent cannot name any other file.

// chooserWait bounds how long an upload waits for its click to open a file
// chooser: the chooser opens while the click's events are handled, so a
// click that opens none has, long before this, done all it will.
const chooserWait = 3 * time.Second

// checkFiles checks an upload's files: given (an empty list clears the
// choice) and each one a non-empty path.
func checkFiles(a Action) error {
	if a.Files == nil {
		return need(a, "file", "a path, or a list of paths, inside the environment's upload directory")
	}
	for _, f := range a.Files {
		if strings.TrimSpace(f) == "" {
			return fmt.Errorf("%s: a file path is empty", a.Type)
		}
	}
	return nil
}

// uploadPaths resolves an upload's files inside e's upload directory, the
// root of their paths, to the absolute paths Chromium reads. A missing
// directory, a file that is not there or a path that leaves the directory
// (through a link) is the agent's error, named.
func (e *Env) uploadPaths(a Action) ([]string, error) {
	if e.cfg.UploadDir == "" {
		return nil, actionErr("refused", "%s: this environment has no upload directory, so it refuses uploads (its operator sets one)", a.Type)
	}
	root, err := filepath.EvalSymlinks(e.cfg.UploadDir)
	if err != nil {
		return nil, fmt.Errorf("upload directory: %w", err)
	}
	root, _ = filepath.Abs(root)
	out := make([]string, 0, len(a.Files))
	for _, f := range a.Files {
		p := filepath.Join(root, filepath.Clean("/"+f))
		real, err := filepath.EvalSymlinks(p)
		if err == nil && real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
			err = fmt.Errorf("it leaves the upload directory")
		}
		var st os.FileInfo
		if err == nil {
			st, err = os.Stat(real)
		}
		if err == nil && !st.Mode().IsRegular() {
			err = fmt.Errorf("it is not a regular file")
		}
		if err != nil {
			return nil, actionErr("bad_value", "%s: cannot upload %q: no such file in the upload directory (paths are relative to it, and / is its root)", a.Type, f)
		}
		out = append(out, real)
	}
	return out, nil
}

func (e *Env) runUpload(ctx context.Context, t *tab, a Action) (int, error) {
	files, err := e.uploadPaths(a)
	if err != nil {
		return 1, err
	}
	p, n, err := e.target(ctx, t, a.Target, "click")
	if err != nil {
		return n, err
	}
	return n, t.chooseFiles(ctx, a.Type, files, func() error { return t.clickAt(ctx, p.X, p.Y, "left", 1) })
}

// chooseFiles runs click, which should open a file chooser, and gives it
// files (absolute paths).
func (t *tab) chooseFiles(ctx context.Context, typ ActionType, files []string, click func() error) error {
	c := t.client(ctx)
	ch := make(chan proto.PageFileChooserOpened, 1)
	t.mu.Lock()
	t.chooser = ch
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.chooser = nil
		t.mu.Unlock()
		_ = proto.PageSetInterceptFileChooserDialog{Enabled: false}.Call(t.client(context.WithoutCancel(ctx)))
	}()
	if err := (proto.PageSetInterceptFileChooserDialog{Enabled: true}).Call(c); err != nil {
		return fmt.Errorf("intercept the file chooser: %w", err)
	}
	if err := click(); err != nil {
		return err
	}
	var ev proto.PageFileChooserOpened
	select {
	case ev = <-ch:
	case <-time.After(chooserWait):
		return actionErr("bad_action", "%s: the click opened no file chooser; click a file input, or what opens one", typ)
	case <-ctx.Done():
		return ctx.Err()
	}
	if ev.BackendNodeID == 0 {
		return actionErr("bad_action", "%s: the page opened a file chooser without a file input (showOpenFilePicker), which WebServ cannot fill", typ)
	}
	if ev.Mode == proto.PageFileChooserOpenedModeSelectSingle && len(files) > 1 {
		return actionErr("bad_value", "%s: the file input takes one file, got %d", typ, len(files))
	}
	if err := (proto.DOMSetFileInputFiles{Files: files, BackendNodeID: ev.BackendNodeID}).Call(c); err != nil {
		return fmt.Errorf("choose the files: %w", err)
	}
	return nil
}
