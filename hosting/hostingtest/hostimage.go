package hostingtest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ImageSpec is a one-layer image made of files of this host, for tests
// that need a program no image here carries (nothing can be pulled): the
// example site's Python, with the shared libraries its binaries load.
type ImageSpec struct {
	// Files maps a path in the image to a file or directory of the host
	// (directories are copied whole, less __pycache__ and the skipped
	// names; symlinks are copied as the files they point at).
	Files map[string]string
	// Skip names directories not to copy (like "test").
	Skip []string
	// Entrypoint, Env ("K=V"), WorkingDir and Port are the image's config.
	Entrypoint []string
	Env        []string
	WorkingDir string
	Port       int
}

// HostImage builds the image: the files, and every shared library an ELF
// file among them needs (from ldd), at the host's paths.
func HostImage(spec ImageSpec) (v1.Image, error) {
	files := map[string]string{} // image path -> host file
	skip := map[string]bool{"__pycache__": true}
	for _, s := range spec.Skip {
		skip[s] = true
	}
	for dst, src := range spec.Files {
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && skip[d.Name()] {
				return filepath.SkipDir
			}
			if d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(src, p)
			files[path.Join(strings.TrimPrefix(dst, "/"), filepath.ToSlash(rel))] = p
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("host image: %w", err)
		}
	}
	libs := map[string]bool{}
	for _, host := range files {
		if !isELF(host) {
			continue
		}
		out, err := exec.Command("ldd", host).Output()
		if err != nil {
			continue // static, or not a program ldd reads
		}
		for _, line := range strings.Split(string(out), "\n") {
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "/") {
					libs[f] = true
				}
			}
		}
	}
	for lib := range libs {
		files[strings.TrimPrefix(lib, "/")] = lib
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := map[string]bool{}
	var entries []entry
	for _, n := range names {
		for d := path.Dir(n); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var dirList []string
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList)
	for _, d := range dirList {
		entries = append(entries, entry{d + "/", nil, 0o755})
	}
	for _, n := range names {
		data, err := os.ReadFile(files[n])
		if err != nil {
			return nil, fmt.Errorf("host image: %w", err)
		}
		mode := int64(0o644)
		if st, err := os.Stat(files[n]); err == nil && st.Mode()&0o111 != 0 {
			mode = 0o755
		}
		entries = append(entries, entry{n, data, mode})
	}
	l, err := layer(entries)
	if err != nil {
		return nil, err
	}
	return linuxImage([]v1.Layer{l}, func(c *v1.Config) {
		c.Entrypoint, c.Env, c.WorkingDir = spec.Entrypoint, spec.Env, spec.WorkingDir
		if spec.Port > 0 {
			c.ExposedPorts = map[string]struct{}{fmt.Sprintf("%d/tcp", spec.Port): {}}
		}
	})
}

// isELF reports whether the file starts with ELF's magic number.
func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	n, _ := f.Read(b[:])
	return n == 4 && string(b[:]) == "\x7fELF"
}
