package record

import (
	"encoding/binary"
	"errors"
)

// ControlType is the type of a control record, stored in its key after an
// int16 version. Transaction markers (ABORT, COMMIT) are the only ones a
// ZooKeeper-mode broker writes; the rest belong to KRaft's metadata log.
type ControlType int16

const (
	// ControlUnknown is what Kafka reports for a type id it does not know
	// (its UNKNOWN has id -1); such records are skipped by consumers.
	ControlUnknown        ControlType = -1
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlSnapshotHeader ControlType = 3
	ControlSnapshotFooter ControlType = 4
	ControlKRaftVersion   ControlType = 5
	ControlKRaftVoters    ControlType = 6
)

// ControlKeySize is the size of a version-0 control record key.
const ControlKeySize = 4

// EndTxnMarkerSize is the size of a version-0 END_TXN marker value.
const EndTxnMarkerSize = 6

// String returns Kafka's name for the type, as the dump tool prints it.
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	case ControlLeaderChange:
		return "LEADER_CHANGE"
	case ControlSnapshotHeader:
		return "SNAPSHOT_HEADER"
	case ControlSnapshotFooter:
		return "SNAPSHOT_FOOTER"
	case ControlKRaftVersion:
		return "KRAFT_VERSION"
	case ControlKRaftVoters:
		return "KRAFT_VOTERS"
	}
	return "UNKNOWN"
}

// IsTxnMarker reports whether records of this type carry an EndTxnMarker.
func (t ControlType) IsTxnMarker() bool { return t == ControlAbort || t == ControlCommit }

// ParseControlKey reads the type from a control record's key. A version
// above 0 is read as version 0, as Kafka does, so newer brokers' markers stay
// readable; a negative version or a key shorter than 4 bytes is corrupt. A
// type id this package does not know is returned as ControlUnknown.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < ControlKeySize {
		return ControlUnknown, corrupt(ErrInvalidRecord, 0, "control record key of %d bytes, need at least %d", len(key), ControlKeySize)
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return ControlUnknown, corrupt(ErrInvalidRecord, 0, "invalid control record key version %d", v)
	}
	t := ControlType(binary.BigEndian.Uint16(key[2:]))
	if t < ControlAbort || t > ControlKRaftVoters {
		return ControlUnknown, nil
	}
	return t, nil
}

// AppendControlKey appends the version-0 key of a control record of type t.
func AppendControlKey(dst []byte, t ControlType) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 0)
	return binary.BigEndian.AppendUint16(dst, uint16(t))
}

// EndTxnMarker is the value of an ABORT or COMMIT control record.
// CoordinatorEpoch lets the broker fence markers from a stale transaction
// coordinator.
type EndTxnMarker struct {
	Version          int16
	CoordinatorEpoch int32
}

// ParseEndTxnMarker reads an END_TXN marker value. Like Kafka, it accepts
// versions above 0 (reading their version-0 prefix) and extra trailing
// bytes, and rejects negative versions and values shorter than 6 bytes.
func ParseEndTxnMarker(value []byte) (EndTxnMarker, error) {
	if len(value) < EndTxnMarkerSize {
		return EndTxnMarker{}, corrupt(ErrInvalidRecord, 0, "end transaction marker value of %d bytes, need at least %d", len(value), EndTxnMarkerSize)
	}
	m := EndTxnMarker{
		Version:          int16(binary.BigEndian.Uint16(value)),
		CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:])),
	}
	if m.Version < 0 {
		return EndTxnMarker{}, corrupt(ErrInvalidRecord, 0, "invalid end transaction marker version %d", m.Version)
	}
	return m, nil
}

// AppendTo appends the marker's version-0 encoding (the version field is
// written as 0 whatever m.Version says: that is the only layout defined).
func (m EndTxnMarker) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 0)
	return binary.BigEndian.AppendUint32(dst, uint32(m.CoordinatorEpoch))
}

// TxnMarker reads the transaction marker of a control batch: the type and
// END_TXN value of its first record, as Kafka's ProducerAppendInfo does
// (EndTransactionMarker.deserialize of the batch's first record). ok is
// false, with no error, when the batch holds no record (the cleaner
// emptied it) or its first record is a control record of another type
// (LEADER_CHANGE, KRaft records): neither completes a transaction. A
// record that cannot be decoded is an error.
func (b Batch) TxnMarker() (t ControlType, m EndTxnMarker, ok bool, err error) {
	errStop := errFirstRecord
	err = b.Iterate(func(r *Record) error {
		t, err = ParseControlKey(r.Key)
		if err != nil {
			return err
		}
		if t.IsTxnMarker() {
			m, err = ParseEndTxnMarker(r.Value)
			if err != nil {
				return err
			}
			ok = true
		}
		return errStop
	})
	if err == errStop {
		err = nil
	}
	if err != nil {
		return ControlUnknown, EndTxnMarker{}, false, err
	}
	return t, m, ok, nil
}

var errFirstRecord = errors.New("record: first record read")
