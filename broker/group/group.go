package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a classic group's state (Kafka's GroupState).
type State int8

// The states of a classic group; see doc.go for the transitions.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

// String is the state's name as DescribeGroups and ListGroups show it.
func (s State) String() string { return stateNames[s] }

// ParseState is the inverse of String (case-insensitive); ok is false
// for an unknown name.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if equalFold(n, name) {
			return State(i), true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Config holds the broker settings a group obeys.
type Config struct {
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	MaxSize               int           // group.max.size
}

// Protocol is one protocol a member supports, with its metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup request as the state machine needs it.
type JoinRequest struct {
	MemberID         string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// RequireKnownMemberID: JoinGroup v4+, where a new dynamic member
	// first gets MEMBER_ID_REQUIRED with its id and must join again.
	RequireKnownMemberID bool
	// NewMemberID is the id a new member gets (the caller makes it, so
	// the state machine stays deterministic).
	NewMemberID string
}

// JoinMember is one member in the leader's JoinGroup response.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult is a JoinGroup answer.
type JoinResult struct {
	Err          *kerr.Error
	MemberID     string
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	Members      []JoinMember // the leader's only
	// SkipAssignment: a static leader rejoined a stable group and must
	// not assign again (JoinGroup v9+).
	SkipAssignment bool
}

// SyncResult is a SyncGroup answer.
type SyncResult struct {
	Err          *kerr.Error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Member is one group member.
type Member struct {
	ID               string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	Assignment       []byte

	heartbeatDeadline time.Time
	joinCB            func(JoinResult)
	syncCB            func(SyncResult)
	isNew             bool
}

// failWaiting answers the member's waiting join and sync, if any, with
// err: a member that is fenced or removed gets no other answer, and its
// client would otherwise wait out its request timeout.
func (m *Member) failWaiting(err *kerr.Error) {
	if m.joinCB != nil {
		m.joinCB(JoinResult{Err: err, MemberID: m.ID, Generation: -1})
		m.joinCB = nil
	}
	if m.syncCB != nil {
		m.syncCB(SyncResult{Err: err})
		m.syncCB = nil
	}
}

// metadata is the member's metadata for protocol p.
func (m *Member) metadata(p string) []byte {
	for _, pr := range m.Protocols {
		if pr.Name == p {
			return pr.Metadata
		}
	}
	return nil
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is a committed offset.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64 // ms
	ExpireTimestamp int64 // ms; -1: none
}

// newMemberJoinTimeout is how long a member added during a rebalance
// may take to complete its join (Kafka's GroupCoordinator value).
const newMemberJoinTimeout = 5 * time.Minute

// Group is one classic group: a pure state machine. Time comes in as
// arguments, and timers are the caller's: it asks Deadline when the group
// next needs a Tick. Answers to JoinGroup and SyncGroup are delivered
// through the callbacks passed in, possibly from a later call (a Tick or
// another member's request).
type Group struct {
	ID           string
	cfg          Config
	state        State
	stateTime    time.Time // when the current state was entered
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*Member
	instances    map[string]string    // group.instance.id -> member id
	pending      map[string]time.Time // member ids handed out, awaiting their join: deadline

	// joinDeadline ends the join phase (rebalance timeout or initial delay);
	// initialDelayEnd caps the extended initial delay.
	joinDeadline    time.Time
	initialDelay    bool
	initialDelayEnd time.Time
	// syncDeadline ends the sync phase: members not synced are removed.
	syncDeadline time.Time

	offsets map[TopicPartition]Offset
	// txnOffsets are TxnOffsetCommit offsets waiting for their
	// transaction's marker, by producer id (txnoffsets.go).
	txnOffsets map[int64]map[TopicPartition]pendingTxnOffset
	// offsetAt is the log offset, in the offsets partition, of the
	// record that carried each committed offset, where known
	// (SetOffsetAt): a transaction's COMMIT replaces only older ones.
	offsetAt map[TopicPartition]int64

	dirty bool // the group's metadata changed and must be stored
}

// New returns an Empty group.
func New(id string, cfg Config, now time.Time) *Group {
	return &Group{ID: id, cfg: cfg, state: Empty, stateTime: now, members: map[string]*Member{},
		instances: map[string]string{}, pending: map[string]time.Time{}, offsets: map[TopicPartition]Offset{}}
}

// State is the group's state.
func (g *Group) State() State { return g.state }

// Generation is the current generation.
func (g *Group) Generation() int32 { return g.generation }

// ProtocolType is the group's protocol type ("consumer", "connect", "").
func (g *Group) ProtocolType() string { return g.protocolType }

// Protocol is the chosen protocol ("" outside a generation).
func (g *Group) Protocol() string { return g.protocol }

// Leader is the leader's member id.
func (g *Group) Leader() string { return g.leader }

// StateTime is when the group entered its state.
func (g *Group) StateTime() time.Time { return g.stateTime }

// Members are the members in member-id order.
func (g *Group) Members() []*Member {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*Member, len(ids))
	for i, id := range ids {
		out[i] = g.members[id]
	}
	return out
}

// Member returns a member by id.
func (g *Group) Member(id string) (*Member, bool) { m, ok := g.members[id]; return m, ok }

// TakeDirty reports whether the group's stored metadata is stale and
// clears the flag: the caller then writes a GroupMetadata record.
func (g *Group) TakeDirty() bool { d := g.dirty; g.dirty = false; return d }

func (g *Group) transition(s State, now time.Time) {
	g.state, g.stateTime = s, now
}

// Join handles a JoinGroup request. cb receives the answer, now or later.
func (g *Group) Join(req JoinRequest, now time.Time, cb func(JoinResult)) {
	fail := func(err *kerr.Error, id string) { cb(JoinResult{Err: err, MemberID: id, Generation: -1}) }
	if req.SessionTimeout < g.cfg.MinSessionTimeout || req.SessionTimeout > g.cfg.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout, req.MemberID)
		return
	}
	if g.state == Dead {
		fail(kerr.CoordinatorNotAvailable, req.MemberID)
		return
	}
	if !g.supports(req.ProtocolType, req.Protocols) {
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	if req.MemberID == "" {
		g.joinUnknown(req, now, cb)
		return
	}
	g.joinKnown(req, now, cb)
}

func (g *Group) full() bool {
	return g.cfg.MaxSize > 0 && len(g.members)+len(g.pending) >= g.cfg.MaxSize
}

func (g *Group) joinUnknown(req JoinRequest, now time.Time, cb func(JoinResult)) {
	id := req.NewMemberID
	if req.InstanceID != nil {
		if old, ok := g.instances[*req.InstanceID]; ok {
			g.replaceStatic(old, id, req, now, cb)
			return
		}
		if g.full() {
			cb(JoinResult{Err: kerr.GroupMaxSizeReached, MemberID: req.MemberID, Generation: -1})
			return
		}
		g.addMember(id, req, now, cb)
		return
	}
	if g.full() {
		cb(JoinResult{Err: kerr.GroupMaxSizeReached, MemberID: req.MemberID, Generation: -1})
		return
	}
	if req.RequireKnownMemberID {
		g.pending[id] = now.Add(req.SessionTimeout)
		cb(JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1})
		return
	}
	g.addMember(id, req, now, cb)
}

func (g *Group) joinKnown(req JoinRequest, now time.Time, cb func(JoinResult)) {
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		g.addMember(req.MemberID, req, now, cb)
		return
	}
	if g.staticFenced(req.MemberID, req.InstanceID) {
		cb(JoinResult{Err: kerr.FencedInstanceID, MemberID: req.MemberID, Generation: -1})
		return
	}
	m, ok := g.members[req.MemberID]
	if !ok || g.state == Empty {
		cb(JoinResult{Err: kerr.UnknownMemberID, MemberID: req.MemberID, Generation: -1})
		return
	}
	same := sameProtocols(m.Protocols, req.Protocols)
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, req, now, cb)
		g.maybeCompleteJoin(now)
	case CompletingRebalance:
		if same {
			cb(g.joinResult(m))
			return
		}
		g.updateMember(m, req, now, cb)
		g.prepareRebalance(now)
	case Stable:
		if m.ID == g.leader || !same {
			g.updateMember(m, req, now, cb)
			g.prepareRebalance(now)
			return
		}
		cb(g.joinResult(m))
	}
}

// replaceStatic gives a restarting static member a new member id in place
// of its old one; in a stable group with unchanged protocols it keeps its
// assignment and no rebalance happens.
func (g *Group) replaceStatic(oldID, newID string, req JoinRequest, now time.Time, cb func(JoinResult)) {
	old := g.members[oldID]
	old.failWaiting(kerr.FencedInstanceID)
	delete(g.members, oldID)
	m := *old
	m.ID = newID
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	m.SessionTimeout, m.RebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.heartbeatDeadline = now.Add(req.SessionTimeout)
	g.members[newID] = &m
	g.instances[*req.InstanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	// Kafka rebalances only if the protocol the group would now select
	// differs (members' metadata such as owned partitions may change).
	m.Protocols, m.ProtocolType = req.Protocols, req.ProtocolType
	switch {
	case g.state == Stable && g.selectProtocol() == g.protocol:
		g.dirty = true
		r := g.joinResult(&m)
		r.Members = nil
		r.SkipAssignment = newID == g.leader
		cb(r)
	case g.state == PreparingRebalance:
		m.joinCB = cb
		g.maybeCompleteJoin(now)
	default:
		m.joinCB = cb
		g.prepareRebalance(now)
	}
}

func (g *Group) addMember(id string, req JoinRequest, now time.Time, cb func(JoinResult)) {
	m := &Member{ID: id, InstanceID: req.InstanceID, ClientID: req.ClientID, ClientHost: req.ClientHost,
		ProtocolType: req.ProtocolType, Protocols: req.Protocols, SessionTimeout: req.SessionTimeout,
		RebalanceTimeout: req.RebalanceTimeout, joinCB: cb, isNew: true,
		heartbeatDeadline: now.Add(newMemberJoinTimeout)}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	if g.leader == "" {
		g.leader = id
	}
	g.members[id] = m
	if req.InstanceID != nil {
		g.instances[*req.InstanceID] = id
	}
	if g.state == PreparingRebalance && g.initialDelay {
		// Each new member extends the initial delay, up to the
		// rebalance timeout from its start.
		g.joinDeadline = minTime(now.Add(g.cfg.InitialRebalanceDelay), g.initialDelayEnd)
	}
	g.prepareRebalance(now)
	g.maybeCompleteJoin(now)
}

func (g *Group) updateMember(m *Member, req JoinRequest, now time.Time, cb func(JoinResult)) {
	m.Protocols, m.ProtocolType = req.Protocols, req.ProtocolType
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	m.SessionTimeout, m.RebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	if m.joinCB != nil {
		// A member joining twice while its first join waits: the older
		// request is answered UNKNOWN_MEMBER_ID (the client has moved on
		// to the newer one); the newer waits for the join phase.
		m.joinCB(JoinResult{Err: kerr.UnknownMemberID, MemberID: m.ID, Generation: -1})
	}
	m.joinCB = cb
}

// prepareRebalance starts a join phase unless one is running.
func (g *Group) prepareRebalance(now time.Time) {
	if g.state == PreparingRebalance {
		return
	}
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.Assignment = nil
			if m.syncCB != nil {
				m.syncCB(SyncResult{Err: kerr.RebalanceInProgress})
				m.syncCB = nil
			}
		}
	}
	if g.state == Empty && g.cfg.InitialRebalanceDelay > 0 {
		g.initialDelay = true
		g.initialDelayEnd = now.Add(g.rebalanceTimeout())
		g.joinDeadline = minTime(now.Add(g.cfg.InitialRebalanceDelay), g.initialDelayEnd)
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
	}
	g.syncDeadline = time.Time{}
	g.transition(PreparingRebalance, now)
}

func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.RebalanceTimeout)
	}
	return d
}

// allJoined: every member has a join waiting and no handed-out id is
// still expected.
func (g *Group) allJoined() bool {
	for _, m := range g.members {
		if m.joinCB == nil {
			return false
		}
	}
	return len(g.pending) == 0
}

func (g *Group) maybeCompleteJoin(now time.Time) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		g.completeJoin(now)
	}
}

// completeJoin ends the join phase: dynamic members that did not rejoin
// are removed, the next generation starts and every waiting member gets
// its JoinGroup answer (the leader with the members' metadata).
func (g *Group) completeJoin(now time.Time) {
	for id, m := range g.members {
		if m.joinCB == nil && m.InstanceID == nil {
			g.remove(id)
		}
	}
	g.pending = map[string]time.Time{}
	g.initialDelay = false
	g.joinDeadline = time.Time{}
	g.generation++
	g.dirty = true
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.transition(Empty, now)
		return
	}
	if m, ok := g.members[g.leader]; !ok || m.joinCB == nil {
		g.leader = ""
		for _, m := range g.Members() {
			if m.joinCB != nil {
				g.leader = m.ID
				break
			}
		}
		if g.leader == "" {
			g.leader = g.Members()[0].ID
		}
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance, now)
	g.syncDeadline = now.Add(g.rebalanceTimeout())
	for _, m := range g.Members() {
		if m.joinCB == nil {
			continue
		}
		cb := m.joinCB
		m.joinCB = nil
		m.isNew = false
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		cb(g.joinResult(m))
	}
}

func (g *Group) joinResult(m *Member) JoinResult {
	r := JoinResult{MemberID: m.ID, Generation: g.generation, ProtocolType: g.protocolType,
		Protocol: g.protocol, Leader: g.leader}
	if m.ID == g.leader {
		for _, o := range g.Members() {
			r.Members = append(r.Members, JoinMember{MemberID: o.ID, InstanceID: o.InstanceID, Metadata: o.metadata(g.protocol)})
		}
	}
	return r
}

// candidates are the protocols every member supports, in the order of
// the first member's preference.
func (g *Group) candidates() []string {
	var out []string
	for i, m := range g.Members() {
		if i == 0 {
			for _, p := range m.Protocols {
				out = append(out, p.Name)
			}
			continue
		}
		out = slices.DeleteFunc(out, func(name string) bool { return m.metadata(name) == nil && !hasProtocol(m.Protocols, name) })
	}
	return out
}

func hasProtocol(ps []Protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p Protocol) bool { return p.Name == name })
}

// selectProtocol: each member votes for its most preferred candidate;
// the most votes win (ties: the earlier candidate).
func (g *Group) selectProtocol() string {
	cands := g.candidates()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.Protocols {
			if slices.Contains(cands, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range cands {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// supports reports whether a member with these protocols may join.
func (g *Group) supports(protocolType string, ps []Protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, c := range g.candidates() {
		if hasProtocol(ps, c) {
			return true
		}
	}
	return false
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool { return x.Name == y.Name && string(x.Metadata) == string(y.Metadata) })
}

// staticFenced: instanceID names a static member whose member id is not
// memberID.
func (g *Group) staticFenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.instances[*instanceID]
	return ok && cur != memberID
}

// checkMember is the fencing common to SyncGroup, Heartbeat and
// OffsetCommit.
func (g *Group) checkMember(memberID string, instanceID *string, generation int32) *kerr.Error {
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case g.staticFenced(memberID, instanceID):
		return kerr.FencedInstanceID
	case g.members[memberID] == nil:
		return kerr.UnknownMemberID
	case generation != g.generation:
		return kerr.IllegalGeneration
	}
	return nil
}

// SyncRequest is a SyncGroup request.
type SyncRequest struct {
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+
	Protocol     *string // v5+
	Assignments  map[string][]byte
}

// Sync handles a SyncGroup request. The leader's assignments are handed
// to every member and the group becomes Stable; followers wait for them.
func (g *Group) Sync(req SyncRequest, now time.Time, cb func(SyncResult)) {
	if err := g.checkMember(req.MemberID, req.InstanceID, req.Generation); err != nil {
		cb(SyncResult{Err: err})
		return
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		cb(SyncResult{Err: kerr.InconsistentGroupProtocol})
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		cb(SyncResult{Err: kerr.UnknownMemberID})
	case PreparingRebalance:
		cb(SyncResult{Err: kerr.RebalanceInProgress})
	case Stable:
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		cb(g.syncResult(m))
	case CompletingRebalance:
		if m.syncCB != nil {
			m.syncCB(SyncResult{Err: kerr.UnknownMemberID})
		}
		m.syncCB = cb
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		if m.ID != g.leader {
			return
		}
		for id, mm := range g.members {
			mm.Assignment = req.Assignments[id]
		}
		g.syncDeadline = time.Time{}
		g.transition(Stable, now)
		g.dirty = true
		for _, mm := range g.Members() {
			if mm.syncCB != nil {
				cb := mm.syncCB
				mm.syncCB = nil
				mm.heartbeatDeadline = now.Add(mm.SessionTimeout)
				cb(g.syncResult(mm))
			}
		}
	}
}

// AssignmentNotStored is told that the group metadata written when
// generation's assignments arrived did not reach the offsets partition's
// ISR (Kafka's resetAndPropagateAssignmentError and maybePrepareRebalance):
// the members were answered with the error, the assignments are dropped,
// and a new join phase starts, so that a coordinator that takes over from
// the log and this one agree. A group that moved on since is left alone.
func (g *Group) AssignmentNotStored(generation int32, now time.Time) {
	if g.generation != generation || g.state != Stable {
		return
	}
	for _, m := range g.members {
		m.Assignment = nil
	}
	g.prepareRebalance(now)
}

func (g *Group) syncResult(m *Member) SyncResult {
	a := m.Assignment
	if a == nil {
		a = []byte{}
	}
	return SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: a}
}

// Heartbeat handles a Heartbeat request.
func (g *Group) Heartbeat(memberID string, instanceID *string, generation int32, now time.Time) *kerr.Error {
	if err := g.checkMember(memberID, instanceID, generation); err != nil {
		return err
	}
	m := g.members[memberID]
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID
	case PreparingRebalance:
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		return kerr.RebalanceInProgress
	}
	m.heartbeatDeadline = now.Add(m.SessionTimeout)
	return nil
}

// LeaveMember is one member leaving (LeaveGroup v3+ lists several).
type LeaveMember struct {
	MemberID   string
	InstanceID *string
}

// Leave removes members; the result has one error (or nil) per member.
func (g *Group) Leave(members []LeaveMember, now time.Time) []*kerr.Error {
	errs := make([]*kerr.Error, len(members))
	removed := false
	for i, lm := range members {
		id := lm.MemberID
		if lm.InstanceID != nil {
			cur, ok := g.instances[*lm.InstanceID]
			switch {
			case !ok:
				errs[i] = kerr.UnknownMemberID
				continue
			case id != "" && id != cur:
				errs[i] = kerr.FencedInstanceID
				continue
			}
			id = cur
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			removed = true
			continue
		}
		if _, ok := g.members[id]; !ok {
			errs[i] = kerr.UnknownMemberID
			continue
		}
		g.remove(id)
		removed = true
	}
	if removed {
		g.afterRemoval(now)
	}
	return errs
}

// remove drops a member, failing its waiting join or sync.
func (g *Group) remove(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	m.failWaiting(kerr.UnknownMemberID)
	delete(g.members, id)
	if m.InstanceID != nil && g.instances[*m.InstanceID] == id {
		delete(g.instances, *m.InstanceID)
	}
	if g.leader == id {
		g.leader = ""
		if ms := g.Members(); len(ms) > 0 {
			g.leader = ms[0].ID
		}
	}
}

// afterRemoval moves the group on after members left or expired.
func (g *Group) afterRemoval(now time.Time) {
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
		if len(g.members) == 0 {
			g.completeJoin(now)
		}
	case PreparingRebalance:
		if len(g.members) == 0 && !g.initialDelay {
			g.completeJoin(now)
			return
		}
		g.maybeCompleteJoin(now)
	}
}

// Deadline is when the group next needs a Tick; ok is false when no
// timer runs.
func (g *Group) Deadline() (time.Time, bool) {
	var d time.Time
	take := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if g.state == PreparingRebalance {
		take(g.joinDeadline)
	}
	if g.state == CompletingRebalance {
		take(g.syncDeadline)
	}
	for _, m := range g.members {
		if g.keptAlive(m) {
			continue
		}
		take(m.heartbeatDeadline)
	}
	for _, t := range g.pending {
		take(t)
	}
	return d, !d.IsZero()
}

// keptAlive: a member waiting on a join or sync answer does not expire
// (a new member's join is bounded by newMemberJoinTimeout).
func (g *Group) keptAlive(m *Member) bool {
	if m.joinCB != nil {
		return !m.isNew
	}
	return m.syncCB != nil
}

// Tick fires the timers due at now: expired sessions, the end of the
// join phase (initial delay or rebalance timeout) and of the sync phase.
func (g *Group) Tick(now time.Time) {
	if g.state == Dead {
		return
	}
	expired := false
	for id, t := range g.pending {
		if !now.Before(t) {
			delete(g.pending, id)
			expired = true
		}
	}
	for _, m := range g.Members() {
		if !g.keptAlive(m) && !now.Before(m.heartbeatDeadline) {
			g.remove(m.ID)
			expired = true
		}
	}
	if g.state == CompletingRebalance && !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
		for _, m := range g.Members() {
			if m.syncCB == nil {
				g.remove(m.ID)
			}
		}
		g.syncDeadline = time.Time{}
		expired = true
		g.prepareRebalance(now)
	}
	if expired {
		g.afterRemoval(now)
	}
	if g.state == PreparingRebalance && !g.joinDeadline.IsZero() && !now.Before(g.joinDeadline) {
		if g.initialDelay && now.Before(g.initialDelayEnd) && len(g.pending) > 0 {
			g.joinDeadline = minTime(now.Add(g.cfg.InitialRebalanceDelay), g.initialDelayEnd)
			return
		}
		g.completeJoin(now)
	}
}

// CheckCommit validates an OffsetCommit: generation -1 with no member id
// commits for a group outside any generation (simple consumers), allowed
// only while the group is Empty.
func (g *Group) CheckCommit(memberID string, instanceID *string, generation int32, now time.Time) *kerr.Error {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	if generation < 0 && g.state == Empty {
		return nil
	}
	if g.state == CompletingRebalance {
		return kerr.RebalanceInProgress
	}
	if err := g.checkMember(memberID, instanceID, generation); err != nil {
		return err
	}
	m := g.members[memberID]
	m.heartbeatDeadline = now.Add(m.SessionTimeout)
	return nil
}

// Offsets are the group's committed offsets (shared: do not modify).
func (g *Group) Offsets() map[TopicPartition]Offset { return g.offsets }

// SetOffset records a committed offset (after it was stored).
func (g *Group) SetOffset(tp TopicPartition, o Offset) { g.offsets[tp] = o }

// DeleteOffset forgets an offset (after its tombstone was stored).
func (g *Group) DeleteOffset(tp TopicPartition) {
	delete(g.offsets, tp)
	delete(g.offsetAt, tp)
}

// SetDead marks the group deleted.
func (g *Group) SetDead(now time.Time) { g.transition(Dead, now) }

// SubscribedTopics are the topics the members of a "consumer" group
// subscribe to (from their protocol metadata); ok is false when they are
// not known (another protocol type, or metadata that does not decode).
func (g *Group) SubscribedTopics() (topics map[string]bool, ok bool) {
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil, false
	}
	topics = map[string]bool{}
	for _, m := range g.members {
		ts, ok := consumerSubscription(m.metadata(g.protocol))
		if !ok {
			return nil, false
		}
		for _, t := range ts {
			topics[t] = true
		}
	}
	return topics, true
}

// consumerSubscription reads the topics of a ConsumerProtocolSubscription.
func consumerSubscription(b []byte) ([]string, bool) {
	d := decoder{b: b}
	d.i16()
	n := d.i32()
	if d.err != nil || n < 0 || int(n) > len(d.b) {
		return nil, false
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, d.str())
	}
	return out, d.err == nil
}

// Restore sets the group from its stored metadata (log replay).
func (g *Group) Restore(v GroupValue, now time.Time) {
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	g.protocol, g.leader = deref(v.Protocol), deref(v.Leader)
	g.members = map[string]*Member{}
	g.instances = map[string]string{}
	g.pending = map[string]time.Time{}
	for _, mv := range v.Members {
		m := &Member{ID: mv.MemberID, InstanceID: mv.GroupInstanceID, ClientID: mv.ClientID, ClientHost: mv.ClientHost,
			ProtocolType: v.ProtocolType, SessionTimeout: time.Duration(mv.SessionTimeout) * time.Millisecond,
			RebalanceTimeout: time.Duration(mv.RebalanceTimeout) * time.Millisecond, Assignment: mv.Assignment,
			heartbeatDeadline: now.Add(time.Duration(mv.SessionTimeout) * time.Millisecond)}
		if g.protocol != "" {
			m.Protocols = []Protocol{{Name: g.protocol, Metadata: mv.Subscription}}
		}
		g.members[m.ID] = m
		if m.InstanceID != nil {
			g.instances[*m.InstanceID] = m.ID
		}
	}
	stateTime := now
	if v.CurrentStateTimestamp >= 0 {
		stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	if len(g.members) == 0 {
		g.transition(Empty, stateTime)
	} else {
		g.transition(Stable, stateTime)
	}
}

// Value is the group's metadata as a GroupMetadata value (version 3).
func (g *Group) Value() GroupValue {
	v := GroupValue{Version: 3, ProtocolType: g.protocolType, Generation: g.generation,
		CurrentStateTimestamp: g.stateTime.UnixMilli()}
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	if g.state == Empty {
		v.Protocol, v.Leader = nil, nil
	}
	for _, m := range g.Members() {
		v.Members = append(v.Members, MemberValue{MemberID: m.ID, GroupInstanceID: m.InstanceID, ClientID: m.ClientID,
			ClientHost: m.ClientHost, RebalanceTimeout: int32(m.RebalanceTimeout.Milliseconds()),
			SessionTimeout: int32(m.SessionTimeout.Milliseconds()), Subscription: nonNil(m.metadata(g.protocol)),
			Assignment: nonNil(m.Assignment)})
	}
	return v
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
