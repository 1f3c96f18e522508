package checkpoint

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

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

// javaDateLayout is java.util.Date.toString: "Sat Jun 03 20:13:09 CST 2023".
const javaDateLayout = "Mon Jan 02 15:04:05 MST 2006"

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
	var kv [][2]string
	id := strconv.FormatInt(int64(mp.BrokerID), 10)
	switch mp.Version {
	case MetaVersionZK:
		kv = append(kv, [2]string{"broker.id", id}, [2]string{"version", "0"})
	case MetaVersionKRaft:
		if mp.ClusterID == "" {
			return nil, fmt.Errorf("checkpoint: meta.properties version 1 needs a cluster.id")
		}
		kv = append(kv, [2]string{"node.id", id}, [2]string{"version", "1"})
	default:
		return nil, fmt.Errorf("checkpoint: meta.properties version %d is not 0 or 1", mp.Version)
	}
	if mp.ClusterID != "" {
		kv = append(kv, [2]string{"cluster.id", mp.ClusterID})
	}
	if mp.DirectoryID != "" {
		kv = append(kv, [2]string{"directory.id", mp.DirectoryID})
	}
	var b strings.Builder
	b.WriteString("#\n#")
	b.WriteString(now.Format(javaDateLayout))
	b.WriteString("\n")
	for _, p := range kv {
		b.WriteString(escapeProperty(p[0], true))
		b.WriteString("=")
		b.WriteString(escapeProperty(p[1], false))
		b.WriteString("\n")
	}
	return []byte(b.String()), nil
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

// escapeProperty escapes s as Properties.store(OutputStream) does: the
// separators and comment characters get a backslash, control and non-ASCII
// characters become \uXXXX, and spaces are escaped in keys and at the
// start of values.
func escapeProperty(s string, isKey bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == ' ':
			if isKey || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(' ')
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04X`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
