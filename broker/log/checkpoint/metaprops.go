package checkpoint

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/qk-project/qk/broker/vfs"
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
	props := parseProperties(string(b))
	var mp MetaProperties
	fail := func(err error, detail string, args ...any) (MetaProperties, error) {
		return MetaProperties{}, &CorruptError{Format: format, Err: err, Detail: fmt.Sprintf(detail, args...)}
	}
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

// parseProperties reads the java.util.Properties.load text format: "#" and
// "!" comments, key and value split at the first unescaped "=", ":" or
// white space, backslash escapes including \uXXXX, and lines continued by
// a trailing odd run of backslashes. A later duplicate key wins, as in
// Java.
func parseProperties(s string) map[string]string {
	props := map[string]string{}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines; the continued line's leading white
		// space is dropped.
		for endsInEscape(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if endsInEscape(line) {
			line = line[:len(line)-1]
		}
		// The key ends at the first unescaped separator.
		end := len(line)
		for j := 0; j < len(line); j++ {
			c := line[j]
			if c == '\\' {
				j++
				continue
			}
			if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
				end = j
				break
			}
		}
		key := line[:end]
		rest := strings.TrimLeft(line[end:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		props[unescapeProperty(key)] = unescapeProperty(rest)
	}
	return props
}

// endsInEscape reports whether s ends in an odd number of backslashes.
func endsInEscape(s string) bool {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	var units []uint16 // pending \u escapes, joined so surrogate pairs decode
	flush := func() {
		if len(units) > 0 {
			b.WriteString(string(utf16.Decode(units)))
			units = units[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flush()
			b.WriteByte(c)
			continue
		}
		i++
		c = s[i]
		if c == 'u' && i+4 < len(s) {
			if u, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
				units = append(units, uint16(u))
				i += 4
				continue
			}
		}
		flush()
		switch c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteByte(c)
		}
	}
	flush()
	return b.String()
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
