package metadata

import (
	"context"
	"errors"
	"fmt"
)

// Store is a session on a hierarchical store with ZooKeeper's semantics:
// versioned nodes, ephemeral nodes owned by the session, sequential nodes,
// one-shot watches and atomic multi-operations. The controller and the
// broker use it the way Kafka uses ZooKeeper, so the same code runs over
// ZooKeeper (zkstore) and over the embedded store (embedded).
//
// Paths are absolute, "/"-separated, without a trailing "/" (except the
// root "/") and without empty, "." or ".." components; a path that breaks
// these rules gives ErrBadPath. Data is at most what the implementation
// allows (ZooKeeper: about 1 MiB per node). A node without data reads as
// nil: ZooKeeper's null and empty data are not told apart.
//
// Versions: every node has a data version (Stat.Version) that Set bumps,
// and a child version (Stat.CVersion) that every child creation and
// deletion bumps. Set, Delete and the Check op take an expected version;
// AnyVersion (-1) matches every version.
//
// Every method may be called from several goroutines at once. After Close,
// or once the session has expired, every method except SessionID, Done and
// Close returns ErrClosed or ErrSessionExpired.
type Store interface {
	// Create creates a node and returns its path, which differs from path
	// only for Sequential nodes (path with the parent's count of child
	// creations appended, zero-padded to 10 digits). The parent must exist (ErrNoNode) and must
	// not be ephemeral (ErrNoChildrenForEphemerals); the node must not
	// (ErrNodeExists). An Ephemeral node belongs to this session and is
	// deleted when the session ends.
	Create(ctx context.Context, path string, data []byte, flags CreateFlags) (string, error)
	// Get returns a node's data and Stat, or ErrNoNode.
	Get(ctx context.Context, path string) ([]byte, Stat, error)
	// Set replaces a node's data if its version matches (ErrBadVersion
	// otherwise; AnyVersion matches all) and returns the new Stat.
	Set(ctx context.Context, path string, data []byte, version int32) (Stat, error)
	// Delete removes a node without children (ErrNotEmpty) if its version
	// matches (ErrBadVersion).
	Delete(ctx context.Context, path string, version int32) error
	// Exists reports whether a node exists and, if so, its Stat.
	Exists(ctx context.Context, path string) (Stat, bool, error)
	// Children returns the names (not paths) of a node's children, in no
	// particular order, and the node's Stat.
	Children(ctx context.Context, path string) ([]string, Stat, error)
	// Watch registers a one-shot watch: the returned channel receives one
	// Event for the next change of the given kind at path, made by any
	// session, and is then closed. Register first, then read: a change
	// committed after Watch returns always fires, so "Watch, Get, act, wait"
	// misses nothing. WatchData and WatchChildren need an existing node
	// (ErrNoNode), as ZooKeeper's getData and getChildren watches do;
	// WatchExists works on absent nodes too.
	//
	// If ctx ends, the session ends or the store is closed before the watch
	// fires, the channel receives an EventNotWatching whose Err says why
	// (ctx.Err(), ErrClosed or ErrSessionExpired) and is closed.
	Watch(ctx context.Context, path string, kind WatchKind) (<-chan Event, error)
	// Multi applies ops atomically: all of them, in order (each op sees
	// the effects of those before it), or none. On failure it returns a
	// *MultiError naming the first op that failed and nothing changes; on
	// success one result per op. No watch fires for a failed Multi.
	Multi(ctx context.Context, ops ...Op) ([]OpResult, error)
	// SessionID identifies the session; it is the EphemeralOwner of the
	// ephemeral nodes this session creates. It never changes.
	SessionID() int64
	// Done is closed when the session ends: Close, or expiry (the session's
	// ephemeral nodes are then gone, and the owner should open a new
	// session and register again, as a Kafka broker does).
	Done() <-chan struct{}
	// Close ends the session: its ephemeral nodes are deleted (firing the
	// watches of other sessions) and its own pending watches receive
	// EventNotWatching. Calling Close again returns nil.
	Close() error
}

// SessionOpener is implemented by stores that can open another session
// on the same data, such as a second ZooKeeper connection to the same
// ensemble or a second session of one embedded store: several in-process
// brokers, each with its own session and ephemeral nodes, share one
// store this way. storetest uses it to test ephemeral nodes across
// sessions.
type SessionOpener interface {
	OpenSession(ctx context.Context) (Store, error)
}

// Syncer is implemented by stores whose sessions may read from a replica
// that lags (ZooKeeper: a follower): Sync makes the session's next reads
// see every write committed before it, by any session.
type Syncer interface {
	Sync(ctx context.Context, path string) error
}

// Sync calls s's Sync if it has one; other stores are linearizable and
// need none (the embedded store).
func Sync(ctx context.Context, s Store, path string) error {
	if sy, ok := s.(Syncer); ok {
		return sy.Sync(ctx, path)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// AnyVersion, as the version of Set, Delete or a Check op, matches every
// version of the node.
const AnyVersion int32 = -1

// CreateFlags select the kind of node Create makes. The zero value is a
// persistent node.
type CreateFlags uint8

const (
	// Ephemeral nodes are deleted when the session that created them ends.
	// They cannot have children.
	Ephemeral CreateFlags = 1 << iota
	// Sequential appends the number of children the parent has had
	// created so far (ZooKeeper's internal child count: its reported
	// CVersion counts deletions too), zero-padded to 10 digits, to the
	// node's name: config_change_0000000042.
	Sequential
)

func (f CreateFlags) String() string {
	switch f {
	case 0:
		return "persistent"
	case Ephemeral:
		return "ephemeral"
	case Sequential:
		return "persistent-sequential"
	case Ephemeral | Sequential:
		return "ephemeral-sequential"
	}
	return fmt.Sprintf("CreateFlags(%d)", uint8(f))
}

// Stat is a node's metadata, as ZooKeeper's Stat. Zxids are transaction
// ids: every committed change (one Create, Set, Delete or a whole Multi)
// gets the next one, so they order all changes. Times are milliseconds
// since the Unix epoch.
type Stat struct {
	Czxid          int64 // zxid of the change that created the node
	Mzxid          int64 // zxid of the change that last set its data
	Pzxid          int64 // zxid of the last change to its children
	Ctime          int64 // creation time
	Mtime          int64 // last data change time
	Version        int32 // data version: number of Sets
	CVersion       int32 // child version: number of child creations and deletions
	EphemeralOwner int64 // session id of an ephemeral node's owner, 0 for persistent nodes
	DataLength     int32
	NumChildren    int32
}

// WatchKind selects what a watch waits for.
type WatchKind uint8

const (
	// WatchData fires on EventDataChanged or EventDeleted of an existing
	// node (ZooKeeper's getData watch).
	WatchData WatchKind = iota + 1
	// WatchChildren fires on EventChildrenChanged (a child created or
	// deleted) or EventDeleted of an existing node (getChildren watch).
	WatchChildren
	// WatchExists fires on EventCreated, EventDataChanged or EventDeleted,
	// whether or not the node exists now (exists watch).
	WatchExists
)

func (k WatchKind) String() string {
	switch k {
	case WatchData:
		return "data"
	case WatchChildren:
		return "children"
	case WatchExists:
		return "exists"
	}
	return fmt.Sprintf("WatchKind(%d)", uint8(k))
}

// EventType says what fired a watch.
type EventType uint8

const (
	EventCreated         EventType = iota + 1 // the node was created
	EventDeleted                              // the node was deleted
	EventDataChanged                          // the node's data was set
	EventChildrenChanged                      // a child was created or deleted
	// EventNotWatching means the watch ended without a change: Event.Err
	// says why (the watch's context, ErrClosed, ErrSessionExpired).
	EventNotWatching
)

func (e EventType) String() string {
	switch e {
	case EventCreated:
		return "created"
	case EventDeleted:
		return "deleted"
	case EventDataChanged:
		return "data-changed"
	case EventChildrenChanged:
		return "children-changed"
	case EventNotWatching:
		return "not-watching"
	}
	return fmt.Sprintf("EventType(%d)", uint8(e))
}

// Event is what a watch delivers. Path is the watched path.
type Event struct {
	Type EventType
	Path string
	Err  error // set for EventNotWatching only
}

// OpType is the kind of one operation of a Multi.
type OpType uint8

const (
	OpCreate OpType = iota + 1
	OpDelete
	OpSet
	// OpCheck changes nothing and fails the Multi unless the node exists
	// with the given version (any version for AnyVersion).
	OpCheck
)

func (o OpType) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpDelete:
		return "delete"
	case OpSet:
		return "set"
	case OpCheck:
		return "check"
	}
	return fmt.Sprintf("OpType(%d)", uint8(o))
}

// Op is one operation of a Multi. Build it with CreateOp, DeleteOp, SetOp
// or CheckOp.
type Op struct {
	Type    OpType
	Path    string
	Data    []byte      // OpCreate, OpSet
	Flags   CreateFlags // OpCreate
	Version int32       // OpDelete, OpSet, OpCheck
}

// CreateOp is a Create inside a Multi.
func CreateOp(path string, data []byte, flags CreateFlags) Op {
	return Op{Type: OpCreate, Path: path, Data: data, Flags: flags}
}

// DeleteOp is a Delete inside a Multi.
func DeleteOp(path string, version int32) Op {
	return Op{Type: OpDelete, Path: path, Version: version}
}

// SetOp is a Set inside a Multi.
func SetOp(path string, data []byte, version int32) Op {
	return Op{Type: OpSet, Path: path, Data: data, Version: version}
}

// CheckOp makes a Multi conditional on a node's version.
func CheckOp(path string, version int32) Op {
	return Op{Type: OpCheck, Path: path, Version: version}
}

// OpResult is the result of one op of a successful Multi: Path is the
// created path for OpCreate (the actual name for Sequential nodes), Stat
// the new Stat for OpSet. Other fields are zero.
type OpResult struct {
	Type OpType
	Path string
	Stat Stat
}

// Sentinel errors. Implementations return them (possibly wrapped) so that
// callers can use errors.Is whatever the store.
var (
	ErrNoNode                  = errors.New("metadata: node does not exist")
	ErrNodeExists              = errors.New("metadata: node already exists")
	ErrBadVersion              = errors.New("metadata: version does not match")
	ErrNotEmpty                = errors.New("metadata: node has children")
	ErrNoChildrenForEphemerals = errors.New("metadata: ephemeral nodes cannot have children")
	ErrBadPath                 = errors.New("metadata: invalid path")
	ErrClosed                  = errors.New("metadata: store closed")
	// ErrSessionExpired is returned by every call on a session that the
	// store ended (ZooKeeper session expiry); its ephemeral nodes are gone.
	ErrSessionExpired = errors.New("metadata: session expired")
	// ErrConnectionLoss: the connection to the store was lost while the
	// session lives (ZooKeeper's CONNECTIONLOSS). The call may or may not
	// have been applied; the session, its ephemeral nodes and watches
	// remain, and a retry once the connection is back can succeed.
	ErrConnectionLoss = errors.New("metadata: connection to the store lost")
)

// MultiError says which op made a Multi fail. errors.Is(err, ErrBadVersion)
// and the like see through it.
type MultiError struct {
	Index int // position of the failed op in the Multi
	Op    Op
	Err   error
}

func (e *MultiError) Error() string {
	return fmt.Sprintf("multi op %d (%s %s): %v", e.Index, e.Op.Type, e.Op.Path, e.Err)
}

func (e *MultiError) Unwrap() error { return e.Err }
