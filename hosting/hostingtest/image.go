package hostingtest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// SiteImage is internal/testsite (the binary at bin) as a two-layer OCI
// image, the way a Dockerfile would build it: /app/testsite, base state in
// /data/state, entrypoint, env and exposed port 8080. The second layer
// deletes /junk/old of the first with a whiteout, so importers can be
// checked for applying whiteouts.
func SiteImage(bin string) (v1.Image, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	l1, err := layer([]entry{{"app/", nil, 0o755}, {"app/testsite", binary, 0o755}, {"data/", nil, 0o755},
		{"data/state", []byte("base"), 0o644}, {"junk/", nil, 0o755}, {"junk/old", []byte("x"), 0o644}})
	if err != nil {
		return nil, err
	}
	l2, err := layer([]entry{{"junk/.wh.old", nil, 0o644}})
	if err != nil {
		return nil, err
	}
	return linuxImage([]v1.Layer{l1, l2}, func(c *v1.Config) {
		c.Entrypoint = []string{"/app/testsite"}
		c.Env = []string{"PORT=8080", "DATA_DIR=/data"}
		c.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
	})
}

// linuxImage is a linux/amd64 image of layers, its config set by config.
func linuxImage(layers []v1.Layer, config func(*v1.Config)) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	config(&cf.Config)
	return mutate.ConfigFile(img, cf)
}

type entry struct {
	name string
	data []byte
	mode int64
}

func layer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}
