package images

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one directory or regular file of a layer.
type Entry struct {
	// Path inside the image, relative to its root ("etc/passwd").
	Path string
	// Mode holds the permission bits, plus fs.ModeDir for a directory and fs.ModeSticky.
	Mode     fs.FileMode
	UID, GID int
	// Data is a file's content when Source is empty.
	Data []byte
	// Source names a file on this machine whose content the entry copies (the binaries, read
	// when the layer is written rather than held in memory).
	Source string
}

// Layer builds a gzip-compressed OCI layer from entries, written in path order (a directory
// before what it holds) with every timestamp set to modTime, so equal inputs give equal digests.
func Layer(entries []Entry, modTime time.Time) (v1.Layer, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	for i, e := range sorted {
		if err := checkEntry(e); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Path == e.Path {
			return nil, fmt.Errorf("layer entry %q appears twice", e.Path)
		}
	}
	open := func() (io.ReadCloser, error) {
		r, w := io.Pipe()
		go func() { w.CloseWithError(writeTar(w, sorted, modTime)) }()
		return r, nil
	}
	// The compressed bytes are read for the digest and again for the tarball: compress once.
	return tarball.LayerFromOpener(open, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

func checkEntry(e Entry) error {
	clean := path.Clean(e.Path)
	if e.Path == "" || clean != e.Path || path.IsAbs(e.Path) || clean == "." || strings.HasPrefix(clean, "../") || clean == ".." {
		return fmt.Errorf("layer entry path %q must be relative, clean and inside the image", e.Path)
	}
	if e.Mode&^(fs.ModeDir|fs.ModeSticky|fs.ModePerm) != 0 {
		return fmt.Errorf("layer entry %q: mode %v: only directories and regular files are supported", e.Path, e.Mode)
	}
	if e.Mode.IsDir() && (e.Data != nil || e.Source != "") {
		return fmt.Errorf("layer entry %q is a directory with content", e.Path)
	}
	return nil
}

func writeTar(w io.Writer, entries []Entry, modTime time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := writeEntry(tw, e, modTime); err != nil {
			return fmt.Errorf("layer entry %q: %w", e.Path, err)
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, e Entry, modTime time.Time) error {
	hdr := &tar.Header{
		Name:    e.Path,
		Mode:    tarMode(e.Mode),
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: modTime,
	}
	if e.Mode.IsDir() {
		hdr.Typeflag, hdr.Name = tar.TypeDir, e.Path+"/"
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag = tar.TypeReg
	if e.Source == "" {
		hdr.Size = int64(len(e.Data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(e.Data)
		return err
	}
	f, err := os.Open(e.Source)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", e.Source)
	}
	hdr.Size = st.Size()
	if err = tw.WriteHeader(hdr); err != nil {
		return err
	}
	// A file that changes size while it is copied fails here rather than writing a torn layer.
	_, err = io.CopyN(tw, f, hdr.Size)
	return err
}

// tarMode is the tar header's mode: permission bits and the sticky bit in their Unix places.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
