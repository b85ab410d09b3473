// Package atomicfile replaces files whole: a reader (or a process started
// after a kill) sees the old content or the new, never a part.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm: a temporary file beside it
// (".<name>-*": whoever reads the directory after a kill may remove such
// leftovers), synced, then renamed over path.
func Write(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := WriteSynced(f, data); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteSynced writes data to f, syncs and closes it.
func WriteSynced(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
