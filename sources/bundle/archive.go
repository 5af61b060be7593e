package bundle

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Untar extracts a tar archive (plain or gzip-compressed) into dir: regular
// files and directories only, refusing any path that would land outside dir.
// Bundles carry configuration repositories this way (changes/config.tar.gz),
// because a git repository cannot be committed inside another one.
func Untar(r io.Reader, dir string) error {
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("untar: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("untar: %w", err)
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("untar: unsafe path %q in archive", h.Name)
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, os.FileMode(h.Mode)); err != nil {
				return fmt.Errorf("untar %s: %w", h.Name, err)
			}
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode&0o755|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// UnpackConfigArchives extracts each archive under dir and returns the git
// repositories found in them (directories holding .git).
func UnpackConfigArchives(archives []string, dir string) ([]string, error) {
	var repos []string
	for i, a := range archives {
		f, err := os.Open(a)
		if err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		dst := filepath.Join(dir, fmt.Sprint(i))
		err = Untar(f, dst)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", a, err)
		}
		err = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				repos = append(repos, filepath.Dir(p))
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", a, err)
		}
	}
	return repos, nil
}
