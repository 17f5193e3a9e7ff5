package incusmgr

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"
)

// Image properties that carry a Docker/OCI image's run settings into the
// containers made from it.
const (
	propCmd     = "webserv.cmd"     // JSON array: entrypoint + cmd
	propEnv     = "webserv.env"     // JSON object
	propWorkdir = "webserv.workdir" // working directory
	propPort    = "webserv.port"    // first exposed TCP port
)

// ImageInfo describes an imported image.
type ImageInfo struct {
	Alias       string
	Fingerprint string
	Command     []string
	Env         map[string]string
	Workdir     string
	Port        int // the first exposed TCP port, 0 if none
}

// ImportImage turns a `docker save` tarball or an OCI image layout
// directory into an Incus container image under alias (replacing an older
// image of that alias). The layers are flattened with whiteouts applied;
// entrypoint, cmd, env, working directory and exposed port go into image
// properties that the manager turns into the container's init command and
// environment, so an existing Docker image runs unmodified.
func ImportImage(ctx context.Context, c incus.InstanceServer, src, alias string) (ImageInfo, error) {
	info := ImageInfo{Alias: alias}
	img, err := readImage(src)
	if err != nil {
		return info, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return info, fmt.Errorf("image config: %w", err)
	}
	info.Command = append(append([]string{}, cf.Config.Entrypoint...), cf.Config.Cmd...)
	info.Env = map[string]string{}
	for _, kv := range cf.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		info.Env[k] = v
	}
	info.Workdir = cf.Config.WorkingDir
	var ports []int
	for p := range cf.Config.ExposedPorts {
		if n, proto, _ := strings.Cut(p, "/"); proto == "" || proto == "tcp" {
			if v, err := strconv.Atoi(n); err == nil {
				ports = append(ports, v)
			}
		}
	}
	sort.Ints(ports)
	if len(ports) > 0 {
		info.Port = ports[0]
	}
	if len(info.Command) == 0 {
		return info, fmt.Errorf("image %s has neither entrypoint nor cmd: nothing to run", src)
	}

	tmp, err := os.MkdirTemp("", "webserv-image-")
	if err != nil {
		return info, err
	}
	defer os.RemoveAll(tmp)
	rootfs := filepath.Join(tmp, "rootfs.tar.gz")
	if err := writeRootfs(img, rootfs); err != nil {
		return info, err
	}
	cmdJSON, _ := json.Marshal(info.Command)
	envJSON, _ := json.Marshal(info.Env)
	props := map[string]string{
		"description": "webserv import of " + filepath.Base(src), "os": "oci", "release": "1",
		propCmd: string(cmdJSON), propEnv: string(envJSON), propWorkdir: info.Workdir,
	}
	if info.Port > 0 {
		props[propPort] = strconv.Itoa(info.Port)
	}
	meta, err := metadataTar(cf.Architecture, props)
	if err != nil {
		return info, err
	}
	rf, err := os.Open(rootfs)
	if err != nil {
		return info, err
	}
	defer rf.Close()
	op, err := c.CreateImage(api.ImagesPost{ImagePut: api.ImagePut{Properties: props}},
		&incus.ImageCreateArgs{MetaFile: meta, MetaName: "meta.tar.gz", RootfsFile: rf, RootfsName: "rootfs.tar.gz", Type: "container"})
	if err != nil {
		return info, fmt.Errorf("create incus image: %w", err)
	}
	if err := op.WaitContext(ctx); err != nil {
		return info, fmt.Errorf("create incus image: %w", err)
	}
	fp, _ := op.Get().Metadata["fingerprint"].(string)
	if fp == "" {
		return info, errors.New("incus did not report the new image's fingerprint")
	}
	info.Fingerprint = fp
	if old, _, err := c.GetImageAlias(alias); err == nil && old.Target != fp {
		_ = c.DeleteImageAlias(alias)
	}
	if _, _, err := c.GetImageAlias(alias); err != nil {
		if err := c.CreateImageAlias(api.ImageAliasesPost{ImageAliasesEntry: api.ImageAliasesEntry{Name: alias, ImageAliasesEntryPut: api.ImageAliasesEntryPut{Target: fp}}}); err != nil {
			return info, fmt.Errorf("alias %s: %w", alias, err)
		}
	}
	return info, nil
}

// readImage opens a docker-save tarball or an OCI layout directory.
func readImage(src string) (v1.Image, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if !st.IsDir() {
		img, err := tarball.ImageFromPath(src, nil)
		if err != nil {
			return nil, fmt.Errorf("read %s as a `docker save` tarball: %w", src, err)
		}
		return img, nil
	}
	idx, err := layout.ImageIndexFromPath(src)
	if err != nil {
		return nil, fmt.Errorf("read %s as an OCI image layout: %w", src, err)
	}
	return firstImage(idx, src)
}

// firstImage picks the linux/amd64 image of an index (or its only one).
func firstImage(idx v1.ImageIndex, src string) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("OCI index of %s: %w", src, err)
	}
	var pick *v1.Descriptor
	for i, d := range im.Manifests {
		if d.Platform == nil || (d.Platform.OS == "linux" && d.Platform.Architecture == "amd64") {
			pick = &im.Manifests[i]
			break
		}
	}
	if pick == nil {
		return nil, fmt.Errorf("%s has no linux/amd64 image", src)
	}
	if pick.MediaType.IsIndex() {
		sub, err := idx.ImageIndex(pick.Digest)
		if err != nil {
			return nil, err
		}
		return firstImage(sub, src)
	}
	return idx.Image(pick.Digest)
}

// writeRootfs writes the flattened filesystem as a gzipped tarball, adding
// the mount points a container needs when the image lacks them.
func writeRootfs(img v1.Image, dst string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	flat := mutate.Extract(img)
	defer flat.Close()
	tr := tar.NewReader(flat)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read image layers: %w", err)
		}
		seen[strings.Trim(path.Clean(h.Name), "/")] = true
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	for _, d := range []string{"dev", "proc", "sys", "tmp", "etc", "run"} {
		if !seen[d] {
			mode := int64(0o755)
			if d == "tmp" {
				mode = 0o1777
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: time.Unix(0, 0)}); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func metadataTar(arch string, props map[string]string) (io.Reader, error) {
	if arch == "" || arch == "amd64" {
		arch = "x86_64"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "architecture: %s\ncreation_date: %d\nproperties:\n", arch, time.Now().Unix())
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := json.Marshal(props[k]) // a JSON string is a valid YAML scalar
		fmt.Fprintf(&b, "  %s: %s\n", k, v)
	}
	pr, pw := io.Pipe()
	go func() {
		gz := gzip.NewWriter(pw)
		tw := tar.NewWriter(gz)
		data := []byte(b.String())
		err := tw.WriteHeader(&tar.Header{Name: "metadata.yaml", Mode: 0o644, Size: int64(len(data)), ModTime: time.Now()})
		if err == nil {
			_, err = tw.Write(data)
		}
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = gz.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// WriteLayout writes img as an OCI image layout directory (linux/amd64),
// the form ImportImage reads.
func WriteLayout(dir string, img v1.Image) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write image layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"})); err != nil {
		return fmt.Errorf("write image layout: %w", err)
	}
	return nil
}
