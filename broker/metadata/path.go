package metadata

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidatePath checks path against ZooKeeper's rules: absolute, no
// trailing "/" (except the root), no empty, "." or ".." components, valid
// UTF-8 without NUL, control, private-use or U+FFF0..U+FFFF characters.
// The error wraps ErrBadPath.
// For a Sequential create, check path+"0": its last component may be
// empty or end in "/" before the counter is appended.
func ValidatePath(path string) error {
	bad := func(reason string) error { return fmt.Errorf("%w %q: %s", ErrBadPath, path, reason) }
	switch {
	case path == "":
		return bad("empty")
	case path[0] != '/':
		return bad("not absolute")
	case path == "/":
		return nil
	case path[len(path)-1] == '/':
		return bad("ends with /")
	case !utf8.ValidString(path):
		return bad("not UTF-8")
	}
	for _, r := range path {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xe000 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return bad(fmt.Sprintf("character %U not allowed", r))
		}
	}
	for _, c := range strings.Split(path[1:], "/") {
		switch c {
		case "":
			return bad("empty component")
		case ".", "..":
			return bad("relative component")
		}
	}
	return nil
}

// Parent returns the parent of a valid path other than the root: "/" for
// "/a", "/a" for "/a/b".
func Parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// Join appends a child name to a path: Join("/", "a") is "/a",
// Join("/a", "b") is "/a/b".
func Join(path, name string) string {
	if path == "/" {
		return "/" + name
	}
	return path + "/" + name
}

// EnsurePath creates path and its missing ancestors as persistent nodes
// without data, as Kafka's makeSurePersistentPathExists does. Existing
// nodes are left alone, so concurrent callers all succeed.
func EnsurePath(ctx context.Context, s Store, path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	if _, ok, err := s.Exists(ctx, path); err != nil || ok {
		return err
	}
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		if _, err := s.Create(ctx, path[:i], nil, 0); err != nil && !errors.Is(err, ErrNodeExists) {
			return fmt.Errorf("ensure path %s: %w", path, err)
		}
	}
	return nil
}

// CreateAll is Create that first makes the missing ancestors of path as
// persistent nodes without data (Kafka's createRecursive). An existing
// node at path is still ErrNodeExists.
func CreateAll(ctx context.Context, s Store, path string, data []byte, flags CreateFlags) (string, error) {
	created, err := s.Create(ctx, path, data, flags)
	if !errors.Is(err, ErrNoNode) {
		return created, err
	}
	if err := EnsurePath(ctx, s, Parent(path)); err != nil {
		return "", err
	}
	return s.Create(ctx, path, data, flags)
}
