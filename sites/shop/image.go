package shop

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Image builds the shop as a one-layer OCI image for the Incus backend:
// the static program bin at /app/shop (run as `/app/shop [sub...] serve`)
// and the catalog of dataDir at /data, listening on 127.0.0.1:8080 inside
// the container. sub is the subcommand path before serve: nil for the shop
// binary, ["shop"] for the webserv binary.
func Image(bin string, sub []string, dataDir string) (v1.Image, error) {
	if err := static(bin); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(1700000000, 0)
	add := func(name string, mode int64, src string) error {
		h := &tar.Header{Name: name, Mode: mode, ModTime: mtime, Typeflag: tar.TypeDir}
		var f *os.File
		if src != "" {
			var err error
			if f, err = os.Open(src); err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			h.Typeflag, h.Size = tar.TypeReg, st.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if f != nil {
			_, err := io.Copy(tw, f)
			return err
		}
		return nil
	}
	if err := add("app/", 0o755, ""); err != nil {
		return nil, err
	}
	if err := add("app/shop", 0o755, bin); err != nil {
		return nil, fmt.Errorf("shop image: %w", err)
	}
	if err := add("data/", 0o755, ""); err != nil {
		return nil, err
	}
	files, _ := filepath.Glob(filepath.Join(dataDir, DBFile+"*"))
	if len(files) == 0 {
		return nil, fmt.Errorf("shop image: no catalog in %s (webserv shop generate --data %s)", dataDir, dataDir)
	}
	for _, f := range files {
		if err := add("data/"+filepath.Base(f), 0o644, f); err != nil {
			return nil, fmt.Errorf("shop image: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = append(append([]string{"/app/shop"}, sub...), "serve")
	cf.Config.Env = []string{"PORT=8080", "DATA_DIR=/data", "HOST=127.0.0.1"}
	cf.Config.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
	return mutate.ConfigFile(img, cf)
}

// static checks that bin runs without a dynamic loader (the image has no
// libc): Go built with CGO_ENABLED=0.
func static(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("shop image: %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("shop image: %s is dynamically linked; build it with CGO_ENABLED=0 (make build does)", bin)
		}
	}
	return nil
}
