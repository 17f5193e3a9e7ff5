package trajectory

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Writer appends lines to one episode file.
type Writer struct {
	path string
	f    *os.File
	gz   *gzip.Writer
	enc  *json.Encoder
}

// Create makes the episode file at path (and its directory).
func Create(path string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("trajectory directory: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trajectory file: %w", err)
	}
	gz := gzip.NewWriter(f)
	return &Writer{path: path, f: f, gz: gz, enc: json.NewEncoder(gz)}, nil
}

// Path is the file's path.
func (w *Writer) Path() string { return w.path }

// Write appends l (stamped with the time now when l.Time is zero) and
// flushes it to the file.
func (w *Writer) Write(l Line) error {
	if l.Time.IsZero() {
		l.Time = time.Now()
	}
	l.Time = l.Time.UTC()
	if err := w.enc.Encode(l); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	// Flushing the gzip stream per line means a crash loses at most a line.
	if err := w.gz.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

// Close ends the gzip stream and closes the file.
func (w *Writer) Close() error {
	err := w.gz.Close()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
