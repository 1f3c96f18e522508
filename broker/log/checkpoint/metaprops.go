package checkpoint

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/internal/javaprops"
)

// meta.properties versions.
const (
	MetaVersionZK    = 0 // ZooKeeper mode: broker.id, optional cluster.id
	MetaVersionKRaft = 1 // KRaft: node.id, cluster.id, optional directory.id
)

// MetaProperties is a log directory's identity. The broker compares it
// across all its log dirs at start-up so that a disk moved from another
// broker or cluster is refused rather than mixed in.
type MetaProperties struct {
	Version     int    // MetaVersionZK or MetaVersionKRaft
	BrokerID    int32  // broker.id in version 0, node.id in version 1
	ClusterID   string // may be empty in version 0 (written before 0.10.1)
	DirectoryID string // KRaft 3.7+ log-dir UUID text; empty if absent
}

// ReadMetaProperties reads dir/meta.properties. A missing file, which means
// a fresh log dir, is an error matching fs.ErrNotExist.
func ReadMetaProperties(fsys vfs.FS, dir string) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("checkpoint: %w", err)
	}
	mp, err := DecodeMetaProperties(b)
	return mp, withPath(err, path)
}

// WriteMetaProperties atomically writes dir/meta.properties, stamped with
// the current time as Java's Properties.store does.
func WriteMetaProperties(fsys vfs.FS, dir string, mp MetaProperties) error {
	b, err := EncodeMetaProperties(mp, time.Now())
	if err != nil {
		return err
	}
	return writeAtomic(fsys, dir, MetaPropertiesFile, b)
}

// EncodeMetaProperties returns the file content for mp as
// java.util.Properties.store writes it: an empty "#" comment line, a "#"
// line with now in Date.toString form, then key=value lines. The key order
// is the one Kafka 3.x on Java 11+ produces (broker.id, version,
// cluster.id), so a fresh file matches a real broker's byte for byte.
func EncodeMetaProperties(mp MetaProperties, now time.Time) ([]byte, error) {
	var props []javaprops.Property
	add := func(k, v string) { props = append(props, javaprops.Property{Key: k, Value: v}) }
	id := strconv.FormatInt(int64(mp.BrokerID), 10)
	switch mp.Version {
	case MetaVersionZK:
		add("broker.id", id)
		add("version", "0")
	case MetaVersionKRaft:
		if mp.ClusterID == "" {
			return nil, fmt.Errorf("checkpoint: meta.properties version 1 needs a cluster.id")
		}
		add("node.id", id)
		add("version", "1")
	default:
		return nil, fmt.Errorf("checkpoint: meta.properties version %d is not 0 or 1", mp.Version)
	}
	if mp.ClusterID != "" {
		add("cluster.id", mp.ClusterID)
	}
	if mp.DirectoryID != "" {
		add("directory.id", mp.DirectoryID)
	}
	// Kafka stores with comments "" (the lone "#" line), then store's date
	// line.
	b := javaprops.AppendComments(nil, "")
	b = javaprops.AppendDate(b, now)
	return javaprops.AppendProperties(b, props), nil
}

// DecodeMetaProperties parses meta.properties content in either mode and
// with keys in any order. Unknown keys are ignored, as Kafka ignores them.
func DecodeMetaProperties(b []byte) (MetaProperties, error) {
	const format = "meta.properties"
	var mp MetaProperties
	fail := func(err error, detail string, args ...any) (MetaProperties, error) {
		return MetaProperties{}, &CorruptError{Format: format, Err: err, Detail: fmt.Sprintf(detail, args...)}
	}
	parsed, err := javaprops.Parse(b)
	if err != nil {
		return fail(ErrMalformed, "%v", err)
	}
	props := javaprops.Map(parsed)
	v, ok := props["version"]
	if !ok {
		return fail(ErrMalformed, "no version key")
	}
	version, err := strconv.Atoi(v)
	if err != nil {
		return fail(ErrMalformed, "version %q is not an integer", v)
	}
	idKey := "broker.id"
	switch version {
	case MetaVersionZK:
	case MetaVersionKRaft:
		idKey = "node.id"
	default:
		return fail(ErrUnsupportedVersion, "version %d, want 0 or 1", version)
	}
	mp.Version = version
	idText, ok := props[idKey]
	if !ok {
		return fail(ErrMalformed, "version %d needs %s", version, idKey)
	}
	id, err := strconv.ParseInt(idText, 10, 32)
	if err != nil || id < 0 {
		return fail(ErrMalformed, "%s %q is not a non-negative int32", idKey, idText)
	}
	mp.BrokerID = int32(id)
	mp.ClusterID = props["cluster.id"]
	if version == MetaVersionKRaft && mp.ClusterID == "" {
		return fail(ErrMalformed, "version 1 needs cluster.id")
	}
	mp.DirectoryID = props["directory.id"]
	return mp, nil
}
