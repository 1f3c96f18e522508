package txn_test

import (
	"fmt"

	"github.com/qk-project/qk/broker/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// A driver's view of one transaction: every write is acknowledged at
// once and every marker is written.
func Example() {
	p := txn.NewPartition(txn.PartitionFor("my-txn", 50), 1, txn.DefaultConfig())
	p.Loaded(0) // nothing to replay
	nextPID := int64(1000)

	// carry out a Result: write, complete, send markers, until done.
	var carry func(r txn.Result, now int64) txn.Result
	carry = func(r txn.Result, now int64) txn.Result {
		answer := r
		for r.Append != nil || r.Markers != nil {
			switch {
			case r.Append != nil:
				key, value := r.Append.Record() // to __transaction_state, acks=all
				fmt.Printf("write %d+%d bytes: %s\n", len(key), len(value), r.Append.Transit.State)
				r = p.AppendDone(r.Append, nil, now)
				if r.Err != nil || r.ProducerID >= 0 || r.Markers != nil {
					answer = r
				}
			case r.Markers != nil:
				fmt.Println("markers:", r.Markers)
				errs := map[txn.TopicPartition]*kerr.Error{}
				for _, tp := range r.Markers.Partitions {
					errs[tp] = nil
				}
				r = p.MarkersWritten(r.Markers, errs)
			}
		}
		return answer
	}

	r := p.InitProducerID(txn.InitProducerIDRequest{Version: 4, TransactionalID: "my-txn", TimeoutMs: 60000,
		ProducerID: -1, ProducerEpoch: -1, NewProducerID: -1}, 0)
	if r.NeedProducerID {
		r = p.InitProducerID(txn.InitProducerIDRequest{Version: 4, TransactionalID: "my-txn", TimeoutMs: 60000,
			ProducerID: -1, ProducerEpoch: -1, NewProducerID: nextPID}, 0)
	}
	r = carry(r, 0)
	fmt.Println("InitProducerId:", r.Err, r.ProducerID, r.ProducerEpoch)

	r = carry(p.AddPartitions(txn.AddPartitionsRequest{Version: 3, TransactionalID: "my-txn", ProducerID: r.ProducerID,
		ProducerEpoch: r.ProducerEpoch, Partitions: []txn.TopicPartition{{Topic: "out", Partition: 0}}}, 10), 10)
	fmt.Println("AddPartitionsToTxn:", r.Err)

	r = carry(p.EndTxn(txn.EndTxnRequest{Version: 3, TransactionalID: "my-txn", ProducerID: 1000, ProducerEpoch: 0, Commit: true}, 20), 20)
	fmt.Println("EndTxn:", r.Err)
	m, _ := p.Get("my-txn")
	fmt.Println(m.State)
	// Output:
	// write 10+37 bytes: Empty
	// InitProducerId: <nil> 1000 0
	// write 10+50 bytes: Ongoing
	// AddPartitionsToTxn: <nil>
	// write 10+50 bytes: PrepareCommit
	// markers: COMMIT my-txn pid=1000 epoch=0 coordinator-epoch=1 [out-0]
	// write 10+37 bytes: CompleteCommit
	// EndTxn: <nil>
	// CompleteCommit
}
