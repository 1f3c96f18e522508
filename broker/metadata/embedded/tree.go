package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/qk-project/qk/broker/metadata"
)

// node is one znode. Its Stat is kept complete (DataLength, NumChildren).
// data is never modified in place: a Set stores a new slice, so effects
// and readers may keep the old one.
type node struct {
	data     []byte
	stat     metadata.Stat
	children map[string]struct{}
}

// db is the state shared by every session of one store. All fields are
// guarded by mu; the log is written and synced with mu held (metadata
// writes are rare, and this keeps readers from seeing an uncommitted
// change).
type db struct {
	mu       sync.RWMutex
	nodes    map[string]*node
	zxid     int64 // last committed
	sessions map[int64]*Session
	watches  map[string][]*watch
	nextSID  int64
	closed   bool
	wal      *wal  // nil for a memory-only store
	failed   error // sticky: set when the log could not be written

	now func() time.Time
	lg  *slog.Logger
}

func newDB(now func() time.Time, lg *slog.Logger) *db {
	d := &db{
		nodes:    map[string]*node{"/": {}},
		sessions: map[int64]*Session{},
		watches:  map[string][]*watch{},
		now:      now,
		lg:       lg,
	}
	// ZooKeeper seeds session ids with the time so that they differ across
	// restarts: (ms << 24) >>> 8, plus one per session.
	d.nextSID = int64(uint64(now().UnixMilli())<<24>>8) + 1
	return d
}

func (n *node) addChild(name string) {
	if n.children == nil {
		n.children = map[string]struct{}{}
	}
	n.children[name] = struct{}{}
	n.stat.NumChildren = int32(len(n.children))
}

func (n *node) removeChild(name string) {
	delete(n.children, name)
	n.stat.NumChildren = int32(len(n.children))
}

func baseName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// persistentStat returns the fields of st that the log and snapshot keep.
func persistentStat(st metadata.Stat) metadata.Stat {
	return metadata.Stat{
		Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid,
		Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, CVersion: st.CVersion,
	}
}

// trigger is a change that may fire watches at path.
type trigger struct {
	path string
	typ  metadata.EventType
}

// txn applies operations to the tree in place and remembers how to undo
// them, the effects to log and the watches to fire. The caller holds
// db.mu for the whole life of a txn.
type txn struct {
	d        *db
	sess     *Session
	zxid     int64
	now      int64
	undo     []func()
	effects  []effect
	triggers []trigger
}

func (d *db) begin(sess *Session) *txn {
	return &txn{d: d, sess: sess, zxid: d.zxid + 1, now: d.now().UnixMilli()}
}

func (t *txn) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo, t.effects, t.triggers = nil, nil, nil
}

func (t *txn) logPut(path string, n *node) {
	if n.stat.EphemeralOwner == 0 {
		t.effects = append(t.effects, effect{kind: effectPut, path: path, stat: persistentStat(n.stat), data: n.data})
	}
}

func (t *txn) logStat(path string, n *node) {
	if n.stat.EphemeralOwner == 0 {
		t.effects = append(t.effects, effect{kind: effectStat, path: path, stat: persistentStat(n.stat)})
	}
}

func (t *txn) apply(op metadata.Op) (metadata.OpResult, error) {
	res := metadata.OpResult{Type: op.Type}
	var err error
	switch op.Type {
	case metadata.OpCreate:
		res.Path, err = t.create(op.Path, op.Data, op.Flags)
	case metadata.OpSet:
		res.Stat, err = t.set(op.Path, op.Data, op.Version)
	case metadata.OpDelete:
		err = t.delete(op.Path, op.Version)
	case metadata.OpCheck:
		err = t.check(op.Path, op.Version)
	default:
		err = fmt.Errorf("embedded: unknown op type %d", op.Type)
	}
	return res, err
}

func (t *txn) create(path string, data []byte, flags metadata.CreateFlags) (string, error) {
	seq := flags&metadata.Sequential != 0
	check := path
	if seq {
		check += "0"
	}
	if err := metadata.ValidatePath(check); err != nil {
		return "", err
	}
	if flags&^(metadata.Ephemeral|metadata.Sequential) != 0 {
		return "", fmt.Errorf("embedded: unknown create flags %d", flags)
	}
	if path == "/" {
		return "", metadata.ErrNodeExists
	}
	parentPath := metadata.Parent(path)
	parent := t.d.nodes[parentPath]
	if parent == nil {
		return "", metadata.ErrNoNode
	}
	if seq {
		// ZooKeeper numbers sequential children by the parent's count of
		// child creations; the CVersion it reports counts deletions too
		// (DataNode.copyStat: creations × 2 − children).
		path = fmt.Sprintf("%s%010d", path, (parent.stat.CVersion+parent.stat.NumChildren)/2)
	}
	if t.d.nodes[path] != nil {
		return "", metadata.ErrNodeExists
	}
	if parent.stat.EphemeralOwner != 0 {
		return "", metadata.ErrNoChildrenForEphemerals
	}
	var owner int64
	if flags&metadata.Ephemeral != 0 {
		owner = t.sess.id
	}
	n := &node{
		data: cloneData(data),
		stat: metadata.Stat{
			Czxid: t.zxid, Mzxid: t.zxid, Pzxid: t.zxid,
			Ctime: t.now, Mtime: t.now,
			EphemeralOwner: owner,
			DataLength:     int32(len(data)),
		},
	}
	name := baseName(path)
	oldParent := parent.stat
	t.d.nodes[path] = n
	parent.addChild(name)
	parent.stat.CVersion++
	parent.stat.Pzxid = t.zxid
	if owner != 0 {
		t.sess.ephemerals[path] = struct{}{}
	}
	t.undo = append(t.undo, func() {
		delete(t.d.nodes, path)
		parent.removeChild(name)
		parent.stat = oldParent
		if owner != 0 {
			delete(t.sess.ephemerals, path)
		}
	})
	t.logPut(path, n)
	t.logStat(parentPath, parent)
	t.triggers = append(t.triggers,
		trigger{path, metadata.EventCreated},
		trigger{parentPath, metadata.EventChildrenChanged})
	return path, nil
}

func (t *txn) set(path string, data []byte, version int32) (metadata.Stat, error) {
	if err := metadata.ValidatePath(path); err != nil {
		return metadata.Stat{}, err
	}
	n := t.d.nodes[path]
	if n == nil {
		return metadata.Stat{}, metadata.ErrNoNode
	}
	if version != metadata.AnyVersion && version != n.stat.Version {
		return metadata.Stat{}, metadata.ErrBadVersion
	}
	oldData, oldStat := n.data, n.stat
	n.data = cloneData(data)
	n.stat.Version++
	n.stat.Mzxid = t.zxid
	n.stat.Mtime = t.now
	n.stat.DataLength = int32(len(data))
	t.undo = append(t.undo, func() { n.data, n.stat = oldData, oldStat })
	t.logPut(path, n)
	t.triggers = append(t.triggers, trigger{path, metadata.EventDataChanged})
	return n.stat, nil
}

func (t *txn) delete(path string, version int32) error {
	if err := metadata.ValidatePath(path); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("%w: the root cannot be deleted", metadata.ErrBadPath)
	}
	n := t.d.nodes[path]
	if n == nil {
		return metadata.ErrNoNode
	}
	if version != metadata.AnyVersion && version != n.stat.Version {
		return metadata.ErrBadVersion
	}
	if len(n.children) > 0 {
		return metadata.ErrNotEmpty
	}
	parentPath := metadata.Parent(path)
	parent := t.d.nodes[parentPath]
	name := baseName(path)
	oldParent := parent.stat
	owner := t.d.sessions[n.stat.EphemeralOwner] // nil for persistent nodes
	delete(t.d.nodes, path)
	parent.removeChild(name)
	parent.stat.CVersion++
	parent.stat.Pzxid = t.zxid
	if owner != nil {
		delete(owner.ephemerals, path)
	}
	t.undo = append(t.undo, func() {
		t.d.nodes[path] = n
		parent.addChild(name)
		parent.stat = oldParent
		if owner != nil {
			owner.ephemerals[path] = struct{}{}
		}
	})
	if n.stat.EphemeralOwner == 0 {
		t.effects = append(t.effects, effect{kind: effectDelete, path: path})
	}
	t.logStat(parentPath, parent)
	t.triggers = append(t.triggers,
		trigger{path, metadata.EventDeleted},
		trigger{parentPath, metadata.EventChildrenChanged})
	return nil
}

func (t *txn) check(path string, version int32) error {
	if err := metadata.ValidatePath(path); err != nil {
		return err
	}
	n := t.d.nodes[path]
	if n == nil {
		return metadata.ErrNoNode
	}
	if version != metadata.AnyVersion && version != n.stat.Version {
		return metadata.ErrBadVersion
	}
	return nil
}

func cloneData(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

// commit makes t durable and visible: it appends t's record to the log and
// syncs it, then fires the watches t triggered. If the log cannot be
// written, t is rolled back (unless force: ending a session removes its
// ephemeral nodes whatever happens) and the store refuses further writes:
// the record may or may not have reached the disk, which only a restart
// can tell. Once the store has failed, forced transactions change memory
// only.
func (d *db) commit(t *txn, force bool) error {
	if d.wal != nil && d.failed == nil {
		if err := d.wal.append(t.zxid, t.now, t.effects); err != nil {
			d.failed = fmt.Errorf("embedded: metadata log write failed, store is read-only until restarted: %w", err)
			d.lg.Error("metadata log write failed", "zxid", t.zxid, "err", err)
			if !force {
				t.rollback()
				return d.failed
			}
		}
	}
	d.zxid = t.zxid
	for _, tr := range t.triggers {
		d.fire(tr.path, tr.typ)
	}
	if d.wal != nil && d.failed == nil && d.wal.snapshotDue() {
		_ = d.snapshot() // logged; the log still holds everything
	}
	return nil
}

// applyEffect replays one logged change (or one snapshot node, as a put).
func (d *db) applyEffect(e effect) error {
	switch e.kind {
	case effectPut:
		n := d.nodes[e.path]
		if n == nil {
			parent := d.nodes[metadata.Parent(e.path)]
			if parent == nil {
				return fmt.Errorf("put %s: parent missing", e.path)
			}
			n = &node{}
			d.nodes[e.path] = n
			parent.addChild(baseName(e.path))
		}
		n.data = e.data
		numChildren := n.stat.NumChildren
		n.stat = e.stat
		n.stat.NumChildren = numChildren
		n.stat.DataLength = int32(len(e.data))
	case effectStat:
		n := d.nodes[e.path]
		if n == nil {
			return fmt.Errorf("stat %s: node missing", e.path)
		}
		st := e.stat
		st.NumChildren, st.DataLength = n.stat.NumChildren, n.stat.DataLength
		n.stat = st
	case effectDelete:
		n := d.nodes[e.path]
		switch {
		case e.path == "/":
			return fmt.Errorf("delete of the root")
		case n == nil:
			return fmt.Errorf("delete %s: node missing", e.path)
		case len(n.children) > 0:
			return fmt.Errorf("delete %s: node has children", e.path)
		}
		delete(d.nodes, e.path)
		d.nodes[metadata.Parent(e.path)].removeChild(baseName(e.path))
	default:
		return fmt.Errorf("unknown effect kind %d", e.kind)
	}
	return nil
}

// visitPersistent calls fn for every persistent node in pre-order (parents
// first, children by name) and returns how many there are.
func (d *db) visitPersistent(fn func(path string, st *metadata.Stat, data []byte)) int {
	count := 0
	var walk func(path string, n *node)
	walk = func(path string, n *node) {
		if n.stat.EphemeralOwner != 0 {
			return
		}
		count++
		if fn != nil {
			st := persistentStat(n.stat)
			fn(path, &st, n.data)
		}
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			child := metadata.Join(path, name)
			walk(child, d.nodes[child])
		}
	}
	walk("/", d.nodes["/"])
	return count
}

// watch is one registered one-shot watch. Its fields are guarded by
// db.mu.
type watch struct {
	sess  *Session
	path  string
	kind  metadata.WatchKind
	ch    chan metadata.Event
	stop  func() bool // stops the context callback
	fired bool
}

// matches reports whether an event of type typ at the watched path fires
// a watch of kind k (ZooKeeper's rules).
func matches(k metadata.WatchKind, typ metadata.EventType) bool {
	switch typ {
	case metadata.EventCreated:
		return k == metadata.WatchExists
	case metadata.EventDeleted:
		return true
	case metadata.EventDataChanged:
		return k == metadata.WatchData || k == metadata.WatchExists
	case metadata.EventChildrenChanged:
		return k == metadata.WatchChildren
	}
	return false
}

// deliver sends the watch's one event and closes its channel. The channel
// has room for the event, so deliver never blocks.
func (w *watch) deliver(ev metadata.Event) {
	if w.fired {
		return
	}
	w.fired = true
	w.ch <- ev
	close(w.ch)
	if w.stop != nil {
		w.stop()
	}
}

func (d *db) addWatch(sess *Session, ctx context.Context, path string, kind metadata.WatchKind) *watch {
	w := &watch{sess: sess, path: path, kind: kind, ch: make(chan metadata.Event, 1)}
	d.watches[path] = append(d.watches[path], w)
	w.stop = context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !w.fired {
			d.removeWatch(w)
			w.deliver(metadata.Event{Type: metadata.EventNotWatching, Path: path, Err: context.Cause(ctx)})
		}
	})
	return w
}

func (d *db) removeWatch(w *watch) {
	ws := slices.DeleteFunc(d.watches[w.path], func(x *watch) bool { return x == w })
	if len(ws) == 0 {
		delete(d.watches, w.path)
	} else {
		d.watches[w.path] = ws
	}
}

// fire delivers typ to every watch at path that it matches.
func (d *db) fire(path string, typ metadata.EventType) {
	ws := d.watches[path]
	if len(ws) == 0 {
		return
	}
	kept := ws[:0]
	for _, w := range ws {
		if matches(w.kind, typ) {
			w.deliver(metadata.Event{Type: typ, Path: path})
		} else {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	if len(kept) == 0 {
		delete(d.watches, path)
	} else {
		d.watches[path] = kept
	}
}

// endWatches ends the watches of sess (all watches if sess is nil) with
// EventNotWatching carrying err.
func (d *db) endWatches(sess *Session, err error) {
	for path, ws := range d.watches {
		kept := ws[:0]
		for _, w := range ws {
			if sess == nil || w.sess == sess {
				w.deliver(metadata.Event{Type: metadata.EventNotWatching, Path: path, Err: err})
			} else {
				kept = append(kept, w)
			}
		}
		clear(ws[len(kept):])
		if len(kept) == 0 {
			delete(d.watches, path)
		} else {
			d.watches[path] = kept
		}
	}
}
