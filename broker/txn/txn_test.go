package txn

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTxn runs the scripts in testdata/txn/. Time starts at 0 and moves
// only with advance. Verbs:
//
//	new [epoch=5] [max-timeout=900000] [expiration=604800000] [next-pid=1000]
//	init id=T [timeout=60000] [pid=N epoch=E] [v=4]    InitProducerId; a
//	                       needed producer id is allocated from next-pid
//	add id=T pid=N epoch=E parts=a-0,b-1 [v=3]         AddPartitionsToTxn
//	offsets id=T pid=N epoch=E partition=P [v=3]       AddOffsetsToTxn
//	verify id=T pid=N epoch=E parts=a-0                verify-only (v4+)
//	end id=T pid=N epoch=E commit|abort [v=4]          EndTxn
//	logged                         the oldest write in flight reaches the log,
//	                               its answer still to come
//	written [fail=ERROR_NAME]      the oldest write in flight completes
//	markers [errs=a-0:ERROR_NAME,...] [missing=a-1]    the oldest markers' answer
//	advance MS                     move the clock
//	timeouts                       abort timed-out transactions
//	expire                         expire idle transactional ids
//	reload [epoch=N] [keep-markers] replay the records written so far into
//	                               a new partition (a new coordinator); the
//	                               old markers are dropped unless kept (their
//	                               answers arrive late)
//	load [epoch=N]                 replay the records of the input: one per
//	                               line, "T tombstone", "T hex=..",
//	                               "key=.. value=..", or
//	                               "T state=S pid=N epoch=E timeout=MS
//	                                 parts=a-0 start=MS update=MS [v=1]"
//	load ... unfinished            the same, without Loaded: still loading
//	finish-load                    Loaded
//	unload                         leadership lost
//	list [states=Ongoing] [pids=1000] [duration=MS]
//	describe id=T
//	state                          just the state
//	matrix                         each input line is a command (with id=t
//	                               implied), run against t loaded in each of
//	                               the 8 states (pid 1000, epoch 3, foo-0)
//
// After each command the output shows every transactional id, and the
// writes and markers still in flight.
func TestTxn(t *testing.T) {
	datadriven.Walk(t, "testdata/txn", func(t *testing.T, path string) {
		h := &harness{t: t}
		h.reset(nil)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h.d = d
			h.out.Reset()
			h.run()
			h.show()
			return h.out.String()
		})
	})
}

type harness struct {
	t       *testing.T
	d       *datadriven.TestData
	out     strings.Builder
	p       *Partition
	cfg     Config
	now     int64
	nextPID int64
	writes  []*Append
	logged  map[*Append]bool // in the log, not yet answered
	markers []*Markers
	log     [][2][]byte // records written, for reload
}

func (h *harness) reset(d *datadriven.TestData) {
	h.cfg = DefaultConfig()
	h.nextPID = 1000
	epoch := int32(5)
	if d != nil {
		epoch = int32(h.intArg("epoch", 5))
		h.cfg.TransactionMaxTimeoutMs = int32(h.intArg("max-timeout", int64(h.cfg.TransactionMaxTimeoutMs)))
		h.cfg.TransactionalIDExpirationMs = h.intArg("expiration", h.cfg.TransactionalIDExpirationMs)
		h.nextPID = h.intArg("next-pid", 1000)
	}
	h.p = NewPartition(7, epoch, h.cfg)
	h.p.Loaded(0)
	h.now, h.writes, h.markers, h.log, h.logged = 0, nil, nil, nil, map[*Append]bool{}
}

func (h *harness) arg(k string) (string, bool) {
	for _, a := range h.d.CmdArgs {
		if a.Key == k {
			return strings.Join(a.Vals, ","), true
		}
	}
	return "", false
}

func (h *harness) intArg(k string, def int64) int64 {
	s, ok := h.arg(k)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		h.t.Fatalf("%s: bad %s=%q", h.d.Pos, k, s)
	}
	return n
}

func (h *harness) str(k string) string { s, _ := h.arg(k); return s }

func (h *harness) has(k string) bool { _, ok := h.arg(k); return ok }

func parseParts(t *testing.T, s string) []TopicPartition {
	var out []TopicPartition
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' }) {
		i := strings.LastIndexByte(f, '-')
		n, err := strconv.Atoi(f[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("bad partition %q", f)
		}
		out = append(out, TopicPartition{f[:i], int32(n)})
	}
	return out
}

func errByName(t *testing.T, name string) *kerr.Error {
	for code := int16(-1); code < 200; code++ {
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Message == name {
			return e
		}
	}
	t.Fatalf("unknown error %q", name)
	return nil
}

func errName(err *kerr.Error) string {
	if err == nil {
		return "OK"
	}
	return err.Message
}

func (h *harness) run() {
	t, d := h.t, h.d
	id := h.str("id")
	pid, epoch := h.intArg("pid", -1), int16(h.intArg("epoch", -1))
	version := int16(h.intArg("v", map[string]int64{"add": 3, "offsets": 3, "end": 4}[d.Cmd]))
	switch d.Cmd {
	case "new":
		h.reset(d)
	case "init":
		req := InitProducerIDRequest{Version: int16(h.intArg("v", 5)), TransactionalID: id,
			TimeoutMs: int32(h.intArg("timeout", 60000)), ProducerID: pid, ProducerEpoch: epoch, NewProducerID: -1}
		r := h.p.InitProducerID(req, h.now)
		if r.NeedProducerID {
			req.NewProducerID = h.nextPID
			h.nextPID++
			fmt.Fprintf(&h.out, "need a producer id: allocated %d\n", req.NewProducerID)
			r = h.p.InitProducerID(req, h.now)
		}
		h.result(r)
	case "add":
		h.result(h.p.AddPartitions(AddPartitionsRequest{Version: version, TransactionalID: id, ProducerID: pid,
			ProducerEpoch: epoch, Partitions: parseParts(t, h.str("parts"))}, h.now))
	case "offsets":
		h.result(h.p.AddOffsets(AddOffsetsRequest{Version: version, TransactionalID: id, ProducerID: pid,
			ProducerEpoch: epoch, OffsetsPartition: int32(h.intArg("partition", 0))}, h.now))
	case "verify":
		h.result(h.p.VerifyPartitions(VerifyRequest{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch,
			Partitions: parseParts(t, h.str("parts"))}))
	case "end":
		if h.has("commit") == h.has("abort") {
			t.Fatalf("%s: end needs commit or abort", d.Pos)
		}
		h.result(h.p.EndTxn(EndTxnRequest{Version: version, TransactionalID: id, ProducerID: pid,
			ProducerEpoch: epoch, Commit: h.has("commit")}, h.now))
	case "logged":
		if len(h.writes) == 0 || h.logged[h.writes[0]] {
			t.Fatalf("%s: no write in flight to log", d.Pos)
		}
		a := h.writes[0]
		k, v := a.Record()
		h.log = append(h.log, [2][]byte{k, v})
		h.logged[a] = true
		fmt.Fprintf(&h.out, "logged %s %s\n", a.Op, a.TransactionalID)
	case "written":
		if len(h.writes) == 0 {
			t.Fatalf("%s: no write in flight", d.Pos)
		}
		a := h.writes[0]
		h.writes = h.writes[1:]
		var appendErr *kerr.Error
		if s := h.str("fail"); s != "" {
			appendErr = errByName(t, s)
		} else if !h.logged[a] {
			k, v := a.Record()
			h.log = append(h.log, [2][]byte{k, v})
		}
		fmt.Fprintf(&h.out, "written %s %s: %s\n", a.Op, a.TransactionalID, errName(appendErr))
		label := "answer"
		if a.Op == OpComplete || a.Op == OpTimeoutAbort || a.Op == OpExpire {
			label = "done" // no client waits on these
		}
		h.resultAs(label, h.p.AppendDone(a, appendErr, h.now))
	case "markers":
		if len(h.markers) == 0 {
			t.Fatalf("%s: no markers in flight", d.Pos)
		}
		mk := h.markers[0]
		h.markers = h.markers[1:]
		errs := map[TopicPartition]*kerr.Error{}
		for _, tp := range mk.Partitions {
			errs[tp] = nil
		}
		if s := h.str("errs"); s != "" {
			for _, f := range strings.Split(s, ",") {
				tp, e, _ := strings.Cut(f, ":")
				errs[parseParts(t, tp)[0]] = errByName(t, e)
			}
		}
		for _, tp := range parseParts(t, h.str("missing")) {
			delete(errs, tp)
		}
		fmt.Fprintf(&h.out, "markers answered: %s\n", mk)
		h.resultAs("", h.p.MarkersWritten(mk, errs))
	case "advance":
		n, err := strconv.ParseInt(d.CmdArgs[0].Key, 10, 64)
		if err != nil {
			t.Fatalf("%s: advance MS", d.Pos)
		}
		h.now += n
	case "timeouts":
		for _, to := range h.p.TimedOutTransactions(h.now) {
			fmt.Fprintf(&h.out, "timed out: %s pid=%d epoch=%d\n", to.TransactionalID, to.ProducerID, to.ProducerEpoch)
		}
		for _, r := range h.p.AbortTimedOutTransactions(h.now) {
			h.resultAs("", r)
		}
	case "expire":
		for _, a := range h.p.ExpireTransactionalIDs(h.now) {
			h.result(Result{Append: a})
		}
	case "reload":
		p := NewPartition(h.p.ID(), int32(h.intArg("epoch", int64(h.p.CoordinatorEpoch()+1))), h.cfg)
		for _, rec := range h.log {
			if err := p.Replay(rec[0], rec[1]); err != nil {
				t.Fatalf("%s: replay: %v", d.Pos, err)
			}
		}
		h.loaded(p, h.has("keep-markers"))
	case "load":
		p := NewPartition(h.p.ID(), int32(h.intArg("epoch", int64(h.p.CoordinatorEpoch()+1))), h.cfg)
		h.log = nil
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			k, v := h.record(line)
			if err := p.Replay(k, v); err != nil {
				fmt.Fprintf(&h.out, "skipped %q: %v\n", line, err)
				continue
			}
			h.log = append(h.log, [2][]byte{k, v})
		}
		if h.has("unfinished") {
			h.p.Unload()
			h.p = p
			break
		}
		h.loaded(p, false)
	case "finish-load":
		h.loaded(h.p, false)
	case "unload":
		h.p.Unload()
	case "list":
		var states []State
		for _, s := range strings.FieldsFunc(h.str("states"), func(r rune) bool { return r == ',' }) {
			st, ok := ParseState(s)
			if !ok {
				t.Fatalf("%s: unknown state %q", d.Pos, s)
			}
			states = append(states, st)
		}
		var pids []int64
		for _, s := range strings.FieldsFunc(h.str("pids"), func(r rune) bool { return r == ',' }) {
			n, _ := strconv.ParseInt(s, 10, 64)
			pids = append(pids, n)
		}
		for _, ts := range h.p.List(pids, states, h.intArg("duration", -1), h.now) {
			fmt.Fprintf(&h.out, "listed: %s pid=%d %s\n", ts.TransactionalID, ts.ProducerID, ts.State)
		}
	case "describe":
		ts, err := h.p.Describe(id)
		fmt.Fprintf(&h.out, "describe %s: %s", id, errName(err))
		if err == nil {
			fmt.Fprintf(&h.out, " pid=%d epoch=%d %s timeout=%d start=%d parts=%v", ts.ProducerID, ts.ProducerEpoch,
				ts.State, ts.TimeoutMs, ts.StartMs, ts.Partitions)
		}
		h.out.WriteString("\n")
	case "matrix":
		h.matrix()
	case "state":
	default:
		t.Fatalf("%s: unknown verb %q", d.Pos, d.Cmd)
	}
}

// matrix runs each input line against a fresh t in every state.
func (h *harness) matrix() {
	d, out := h.d, h.out.String()
	defer func() { h.d = d }()
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		fs := strings.Fields(line)
		sub := &datadriven.TestData{Pos: d.Pos, Cmd: fs[0], CmdArgs: []datadriven.CmdArg{{Key: "id", Vals: []string{"t"}}}}
		for _, f := range fs[1:] {
			k, v, ok := strings.Cut(f, "=")
			a := datadriven.CmdArg{Key: k}
			if ok {
				a.Vals = []string{v}
			}
			sub.CmdArgs = append(sub.CmdArgs, a)
		}
		out += line + "\n"
		for _, st := range States {
			h.p = NewPartition(7, 5, h.cfg)
			h.writes, h.markers, h.nextPID = nil, nil, 2000
			parts := []TopicPartition{{"foo", 0}}
			if st == Empty || st == CompleteCommit || st == CompleteAbort || st == Dead {
				parts = nil
			}
			// ValueOf, not Record: a Dead value, not a tombstone.
			v := ValueOf(TransitMetadata{ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 3,
				TimeoutMs: 60000, State: st, Partitions: parts, StartMs: 10, LastUpdateMs: 10}, 0).AppendTo(nil)
			if err := h.p.Replay(AppendKey(nil, "t"), v); err != nil {
				h.t.Fatal(err)
			}
			h.p.Loaded(0) // markers owed by Prepare* states are not shown
			h.d = sub
			h.out.Reset()
			h.run()
			for _, l := range strings.Split(strings.TrimSpace(h.out.String()), "\n") {
				out += fmt.Sprintf("  %-19s %s\n", st.String()+":", l)
			}
		}
	}
	h.out.Reset()
	h.out.WriteString(out)
	h.p = NewPartition(7, 5, h.cfg)
	h.p.Loaded(0)
	h.writes, h.markers = nil, nil
}

// loaded installs p as the new coordinator: markers of the old one are
// dropped (the driver removes them on resignation); writes in flight stay
// and complete against p.
func (h *harness) loaded(p *Partition, keepMarkers bool) {
	if h.p != p {
		h.p.Unload()
	}
	h.p = p
	if !keepMarkers {
		h.markers = nil
	}
	fmt.Fprintf(&h.out, "loaded %d ids at coordinator epoch %d\n", p.Len(), p.CoordinatorEpoch())
	for _, r := range p.Loaded(h.now) {
		h.resultAs("", r)
	}
}

// record is one line of load's input.
func (h *harness) record(line string) (key, value []byte) {
	t := h.t
	fs := strings.Fields(line)
	kv := map[string]string{}
	for _, f := range fs[1:] {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	if k, ok := strings.CutPrefix(fs[0], "key="); ok {
		kv["key"] = k
		key, err := hex.DecodeString(kv["key"])
		if err != nil {
			t.Fatalf("bad key hex in %q", line)
		}
		value, err = hex.DecodeString(kv["value"])
		if err != nil {
			t.Fatalf("bad value hex in %q", line)
		}
		return key, value
	}
	key = AppendKey(nil, fs[0])
	if len(fs) > 1 && fs[1] == "tombstone" {
		return key, nil
	}
	if s, ok := kv["hex"]; ok {
		value, err := hex.DecodeString(s)
		if err != nil {
			t.Fatalf("bad hex in %q", line)
		}
		return key, value
	}
	num := func(k string, def int64) int64 {
		s, ok := kv[k]
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad %s in %q", k, line)
		}
		return n
	}
	st, ok := ParseState(kv["state"])
	if !ok {
		t.Fatalf("bad state in %q", line)
	}
	tr := TransitMetadata{ProducerID: num("pid", 1000), PreviousProducerID: num("last-pid", -1), NextProducerID: -1,
		ProducerEpoch: int16(num("epoch", 0)), TimeoutMs: int32(num("timeout", 60000)), State: st,
		Partitions: sortPartitions(parseParts(t, kv["parts"])), StartMs: num("start", -1), LastUpdateMs: num("update", 0)}
	return key, ValueOf(tr, int16(num("v", 0))).AppendTo(nil)
}

func (h *harness) result(r Result) { h.resultAs("answer", r) }

// resultAs prints r; label names the answer line, "" for results that
// answer no one (only their writes, markers and problems show).
func (h *harness) resultAs(label string, r Result) {
	w := &h.out
	switch {
	case r.Append != nil:
		a := r.Append
		if a.Transit.State == Dead {
			fmt.Fprintf(w, "write %s %s: tombstone\n", a.Op, a.TransactionalID)
		} else {
			fmt.Fprintf(w, "write %s %s: %s\n", a.Op, a.TransactionalID, a.Transit)
		}
		h.writes = append(h.writes, a)
	case r.PartitionErrs != nil:
		tps := slices.SortedFunc(func(yield func(TopicPartition) bool) {
			for tp := range r.PartitionErrs {
				if !yield(tp) {
					return
				}
			}
		}, TopicPartition.compare)
		for _, tp := range tps {
			fmt.Fprintf(w, "verify %s: %s\n", tp, errName(r.PartitionErrs[tp]))
		}
	case label == "":
		if r.Markers == nil && r.Invariant == nil {
			w.WriteString("nothing to do\n")
		}
	default:
		fmt.Fprintf(w, "%s: %s", label, errName(r.Err))
		if r.Err == nil && r.ProducerID >= 0 {
			fmt.Fprintf(w, " pid=%d epoch=%d", r.ProducerID, r.ProducerEpoch)
		}
		w.WriteString("\n")
	}
	if r.Markers != nil {
		fmt.Fprintf(w, "send markers: %s\n", r.Markers)
		h.markers = append(h.markers, r.Markers)
	}
	if r.Invariant != nil {
		fmt.Fprintf(w, "invariant: %v\n", r.Invariant)
	}
}

func (h *harness) show() {
	for _, id := range h.p.TransactionalIDs() {
		m, _ := h.p.Get(id)
		fmt.Fprintf(&h.out, "> %s\n", m)
	}
	if len(h.writes) > 0 {
		var ws []string
		for _, a := range h.writes {
			ws = append(ws, a.Op.String()+" "+a.TransactionalID)
		}
		fmt.Fprintf(&h.out, "> writes in flight: %s\n", strings.Join(ws, ", "))
	}
	if len(h.markers) > 0 {
		var ms []string
		for _, mk := range h.markers {
			ms = append(ms, mk.TransactionalID+fmt.Sprint(mk.Partitions))
		}
		fmt.Fprintf(&h.out, "> markers in flight: %s\n", strings.Join(ms, ", "))
	}
}
