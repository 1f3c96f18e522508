package log

import (
	"fmt"

	"github.com/qk-project/qk/broker/record"
)

// Transaction verification (KIP-890 part 1, Kafka's VerificationGuard):
// before a producer's first transactional append to a partition in a
// transaction, the leader asks the coordinator whether the partition is
// in the producer's ongoing transaction. The ask takes a round trip, and
// a marker for the producer's previous transaction (or a timeout abort)
// may land on the partition meanwhile; the append must then be refused,
// or it would open a transaction the coordinator knows nothing of, which
// no marker would ever close (the hanging transaction of KAFKA-14884).
//
// The guard is that check: StartTxnVerification records one for the
// producer before the ask, VerifyTxnGuard marks it verified after the
// coordinator's yes, any marker for the producer spoils it, and the
// append that opens the transaction needs a verified, unspoilt guard and
// uses it up.

// txnGuard is one producer's verification in progress.
type txnGuard struct {
	token    uint64
	verified bool
	spoilt   bool // a marker for the producer arrived since it started
}

// StartTxnVerification starts a verification for producerID and returns
// its token, or 0 when none is needed: the producer already has an open
// transaction on this partition (its appends join it).
func (l *Log) StartTxnVerification(producerID int64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.producers.Producer(producerID); ok && e.CurrentTxnFirstOffset >= 0 {
		return 0
	}
	if l.txnGuards == nil {
		l.txnGuards = map[int64]*txnGuard{}
	}
	l.nextGuard++
	l.txnGuards[producerID] = &txnGuard{token: l.nextGuard}
	return l.nextGuard
}

// VerifyTxnGuard records the coordinator's yes for the verification
// token of producerID. It reports false when the guard is gone or
// spoilt (a marker came, or a newer verification replaced it): the
// append must not go ahead.
func (l *Log) VerifyTxnGuard(producerID int64, token uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.txnGuards[producerID]
	if !ok || g.token != token || g.spoilt {
		return false
	}
	g.verified = true
	return true
}

// DropTxnGuard forgets a verification that will not be used (the
// coordinator said no, or the produce failed before appending).
func (l *Log) DropTxnGuard(producerID int64, token uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.txnGuards[producerID]; ok && g.token == token {
		delete(l.txnGuards, producerID)
	}
}

// spoilTxnGuard marks the producer's verification spoilt: a marker for
// it was appended. l.mu is held.
func (l *Log) spoilTxnGuard(producerID int64) {
	if g, ok := l.txnGuards[producerID]; ok {
		g.spoilt = true
	}
}

// checkTxnGuard is the append's side: a transactional batch that would
// open a transaction while a verification is recorded for its producer
// needs that verification done and unspoilt, and uses it up. Without a
// recorded verification the batch goes through (verification is off, or
// the producer's transaction is already open). l.mu is held.
func (l *Log) checkTxnGuard(bt record.Batch) error {
	if !bt.IsTransactional() || bt.IsControl() {
		return nil
	}
	id := bt.ProducerID()
	g, ok := l.txnGuards[id]
	if !ok {
		return nil
	}
	if e, open := l.producers.Producer(id); open && e.CurrentTxnFirstOffset >= 0 {
		delete(l.txnGuards, id)
		return nil
	}
	delete(l.txnGuards, id)
	switch {
	case g.spoilt:
		return fmt.Errorf("%w: producer %d: a transaction marker arrived while the partition was being verified with the coordinator", ErrInvalidTxnState, id)
	case !g.verified:
		return fmt.Errorf("%w: producer %d: the partition is not verified to be in the producer's transaction", ErrInvalidTxnState, id)
	}
	return nil
}
