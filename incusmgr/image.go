package incusmgr

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
	// Reused is set when Incus already held this content (imported
	// before, possibly under another alias, or by a concurrent import), so
	// the alias now names that image and nothing new was stored.
	Reused bool
}

// importAttempts bounds the rounds of "look for the image, else upload
// it": a round only fails when the image vanishes in between, deleted by
// someone else.
const importAttempts = 3

// ImportImage turns a `docker save` tarball or an OCI image layout
// directory into an Incus container image under alias. The layers are
// flattened with whiteouts applied; entrypoint, cmd, env, working
// directory and exposed port go into image properties that the manager
// turns into the container's init command and environment, so an existing
// Docker image runs unmodified.
//
// The import is idempotent: the same source always gives the same content
// and so the same Incus fingerprint, and content Incus already holds
// (imported earlier, under this or another alias, or at the same moment by
// another import) is reused instead of uploaded again. The alias is created
// or moved to the image; the image it named before is deleted when no
// alias names it any more and it is a webserv import (see RemoveImage).
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

	cmdJSON, _ := json.Marshal(info.Command)
	envJSON, _ := json.Marshal(info.Env)
	props := map[string]string{
		"description": "webserv import of " + filepath.Base(src), "os": "oci", "release": "1",
		propCmd: string(cmdJSON), propEnv: string(envJSON), propWorkdir: info.Workdir,
	}
	if info.Port > 0 {
		props[propPort] = strconv.Itoa(info.Port)
	}
	// The metadata carries the image's own creation time, not the time of
	// the import, so importing the same source twice gives the same bytes.
	meta, err := metadataTar(cf.Architecture, cf.Created.Time, props)
	if err != nil {
		return info, err
	}
	tmp, err := os.MkdirTemp("", "webserv-image-")
	if err != nil {
		return info, fmt.Errorf("temporary directory for the image's root filesystem: %w", err)
	}
	defer os.RemoveAll(tmp)
	rootfs := filepath.Join(tmp, "rootfs.tar.gz")
	// Incus fingerprints a split image as the SHA-256 of the metadata
	// tarball followed by the rootfs tarball: hash both as they are made.
	sum := sha256.New()
	sum.Write(meta)
	if err := writeRootfs(img, rootfs, sum); err != nil {
		return info, err
	}
	fp := hex.EncodeToString(sum.Sum(nil))
	info.Fingerprint = fp

	uploaded := false
	for attempt := 1; ; attempt++ {
		found, err := aliasExisting(ctx, c, alias, fp)
		if err != nil {
			return info, err
		}
		if found {
			info.Reused = !uploaded
			return info, nil
		}
		if attempt > importAttempts {
			return info, fmt.Errorf("create incus image %s: it was deleted again right after each of %d uploads; is something else deleting images (`incus image delete`, another webserv)? Import again once it stops", fp[:12], importAttempts)
		}
		got, err := uploadImage(ctx, c, meta, rootfs, props)
		if err != nil {
			// Another import of the same content may have stored it
			// first ("Image with same fingerprint already exists"): then
			// the next round finds it and points the alias at it.
			if _, _, gerr := c.GetImage(fp); gerr == nil {
				continue
			}
			return info, fmt.Errorf("create incus image from %s: %w", src, err)
		}
		if got != fp {
			// Not expected (the fingerprint is Incus's own recipe), but
			// Incus's word is what aliases and instances use.
			fp, info.Fingerprint = got, got
		}
		uploaded = true
	}
}

// uploadImage stores a split image and returns its fingerprint.
func uploadImage(ctx context.Context, c incus.InstanceServer, meta []byte, rootfs string, props map[string]string) (string, error) {
	rf, err := os.Open(rootfs)
	if err != nil {
		return "", err
	}
	defer rf.Close()
	op, err := c.CreateImage(api.ImagesPost{ImagePut: api.ImagePut{Properties: props}},
		&incus.ImageCreateArgs{MetaFile: bytes.NewReader(meta), MetaName: "meta.tar.gz", RootfsFile: rf, RootfsName: "rootfs.tar.gz", Type: "container"})
	if err != nil {
		return "", err
	}
	if err := op.WaitContext(ctx); err != nil {
		return "", err
	}
	fp, _ := op.Get().Metadata["fingerprint"].(string)
	if fp == "" {
		return "", errors.New("incus did not report the new image's fingerprint")
	}
	return fp, nil
}

// aliasExisting points alias at the image fp if Incus holds it (reporting
// whether it does), and deletes the image the alias named before if that is
// left without aliases. It runs under the image lock, so the image cannot
// be deleted by another import or RemoveImage on this host between being
// found and being aliased.
func aliasExisting(ctx context.Context, c incus.InstanceServer, alias, fp string) (bool, error) {
	unlock, err := lockImages(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	if _, _, err := c.GetImage(fp); err != nil {
		if api.StatusErrorCheck(err, http.StatusNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("look up incus image %s: %w", fp[:12], err)
	}
	old, err := pointAlias(c, alias, fp)
	if err != nil {
		return false, err
	}
	if old != "" {
		if err := deleteIfUnaliased(ctx, c, old); err != nil {
			return true, fmt.Errorf("alias %s now names image %s, but the image it replaced is left: %w", alias, fp[:12], err)
		}
	}
	return true, nil
}

// pointAlias creates alias for the image fp, or moves it there, and returns
// the image it named before ("" if none or fp). Another process creating or
// moving the same alias at the same moment makes it look again.
func pointAlias(c incus.InstanceServer, alias, fp string) (string, error) {
	var err error
	for range 5 {
		cur, etag, gerr := c.GetImageAlias(alias)
		switch {
		case gerr != nil && !api.StatusErrorCheck(gerr, http.StatusNotFound):
			return "", fmt.Errorf("look up image alias %s: %w", alias, gerr)
		case gerr != nil:
			err = c.CreateImageAlias(api.ImageAliasesPost{ImageAliasesEntry: api.ImageAliasesEntry{Name: alias,
				ImageAliasesEntryPut: api.ImageAliasesEntryPut{Target: fp}}})
			if err == nil {
				return "", nil
			}
			if !api.StatusErrorCheck(err, http.StatusConflict) {
				return "", fmt.Errorf("create image alias %s: %w", alias, err)
			}
		case cur.Target == fp:
			return "", nil
		default:
			err = c.UpdateImageAlias(alias, api.ImageAliasesEntryPut{Description: cur.Description, Target: fp}, etag)
			if err == nil {
				return cur.Target, nil
			}
			if !api.StatusErrorCheck(err, http.StatusPreconditionFailed, http.StatusNotFound) {
				return "", fmt.Errorf("point image alias %s at %s: %w", alias, fp[:12], err)
			}
		}
	}
	return "", fmt.Errorf("point image alias %s at %s: others keep changing the alias at the same time (%w); import again", alias, fp[:12], err)
}

// RemoveImage deletes alias and then its image, unless another alias still
// names the image or webserv did not import it (images from elsewhere are
// only ever unaliased). An alias that does not exist is not an error.
func RemoveImage(ctx context.Context, c incus.InstanceServer, alias string) error {
	unlock, err := lockImages(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	cur, _, err := c.GetImageAlias(alias)
	if err != nil {
		if api.StatusErrorCheck(err, http.StatusNotFound) {
			return nil
		}
		return fmt.Errorf("look up image alias %s: %w", alias, err)
	}
	if err := c.DeleteImageAlias(alias); err != nil && !api.StatusErrorCheck(err, http.StatusNotFound) {
		return fmt.Errorf("delete image alias %s: %w", alias, err)
	}
	return deleteIfUnaliased(ctx, c, cur.Target)
}

// deleteIfUnaliased deletes the image fp if no alias names it and webserv
// imported it. Callers hold the image lock. Instances made from the image
// keep working: Incus keeps what their storage still needs.
func deleteIfUnaliased(ctx context.Context, c incus.InstanceServer, fp string) error {
	img, _, err := c.GetImage(fp)
	if err != nil {
		if api.StatusErrorCheck(err, http.StatusNotFound) {
			return nil
		}
		return fmt.Errorf("look up incus image %s: %w", fp[:12], err)
	}
	if len(img.Aliases) > 0 || img.Properties[propCmd] == "" {
		return nil
	}
	op, err := c.DeleteImage(fp)
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil && !api.StatusErrorCheck(err, http.StatusNotFound) {
		return fmt.Errorf("delete incus image %s, which no alias names any more: %w; delete it with `incus image delete %s`", fp[:12], err, fp)
	}
	return nil
}

// lockFile is where the processes of this host serialize their image
// bookkeeping (see lockImages).
var lockFile = filepath.Join(os.TempDir(), "webserv-incus-images.lock")

// lockImages takes a host-wide lock around looking at which aliases name
// an image and acting on it (aliasing it, deleting it), so that one import
// cannot delete an image that another has just found and is about to
// alias. Uploads run outside it. Imports from other hosts into a remote
// Incus are not covered; neither is anything when the lock file cannot be
// opened (then the lock is skipped: it guards a narrow race, and failing
// imports over it would be worse).
func lockImages(ctx context.Context) (func(), error) {
	f, err := os.Open(lockFile)
	if errors.Is(err, fs.ErrNotExist) {
		// Readable by everyone: flock needs only a read-only descriptor,
		// and other users may import into the same Incus.
		if f, err = os.OpenFile(lockFile, os.O_RDONLY|os.O_CREATE, 0o644); err == nil {
			_ = f.Chmod(0o644)
		}
	}
	if err != nil {
		return func() {}, nil
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return func() {}, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for another image import on this host (lock %s): %w", lockFile, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
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

// writeRootfs writes the flattened filesystem as a gzipped tarball to dst
// and to sum, adding the mount points a container needs when the image
// lacks them.
func writeRootfs(img v1.Image, dst string, sum io.Writer) error {
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("write the image's root filesystem: %w", err)
	}
	if err := writeRootfsTo(img, io.MultiWriter(f, sum)); err != nil {
		f.Close()
		return fmt.Errorf("write the image's root filesystem: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the image's root filesystem: %w", err)
	}
	return nil
}

func writeRootfsTo(img v1.Image, w io.Writer) error {
	gz := gzip.NewWriter(w)
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

// metadataTar is the gzipped metadata tarball of an image: the same
// arguments always give the same bytes.
func metadataTar(arch string, created time.Time, props map[string]string) ([]byte, error) {
	if arch == "" || arch == "amd64" {
		arch = "x86_64"
	}
	// Incus refuses a missing (zero) creation date; an image without one
	// (built reproducibly, or by go-containerregistry) gets the first
	// second after the epoch, still the same on every import.
	date := int64(1)
	if !created.IsZero() && created.Unix() > 0 {
		date = created.Unix()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "architecture: %s\ncreation_date: %d\nproperties:\n", arch, date)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := json.Marshal(props[k]) // a JSON string is a valid YAML scalar
		fmt.Fprintf(&b, "  %s: %s\n", k, v)
	}
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	data := []byte(b.String())
	err := tw.WriteHeader(&tar.Header{Name: "metadata.yaml", Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(date, 0)})
	if err == nil {
		_, err = tw.Write(data)
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("image metadata: %w", err)
	}
	return out.Bytes(), nil
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
