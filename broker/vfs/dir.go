package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// MkdirAllSync is MkdirAll made durable: after creating the missing
// directories it syncs the parent of each one it created, deepest last, so
// that a crash cannot lose a directory whose files were synced. (A synced
// file in a directory whose own entry was never synced is lost with it.)
// Directories that already existed are not synced again, so calling it for
// a partition directory that exists costs two Stats.
func MkdirAllSync(fsys FS, path string, perm fs.FileMode) error {
	// Find the deepest existing ancestor; everything below it is new.
	var created []string
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		_, err := fsys.Stat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		created = append(created, p)
		if parent := filepath.Dir(p); parent == p {
			break
		}
	}
	if err := fsys.MkdirAll(path, perm); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}
