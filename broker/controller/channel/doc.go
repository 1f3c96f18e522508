// Package channel carries the controller's requests to the brokers:
// Kafka's ControllerChannelManager and its RequestSendThreads.
//
// The controller sends LeaderAndIsr, UpdateMetadata and StopReplica to
// every live broker. A Manager has one sender per broker, each with its
// own connection, FIFO queue and goroutine:
//
//	Send(id, req, cb) ──► queue ──► sender goroutine ──► conn ──► broker id
//	                                      │
//	                                      └─► cb(resp, err), in queue order
//
// A sender has at most one request in flight, so a broker applies the
// controller's requests in the order they were sent; a slow or dead
// broker holds up only its own queue.
//
// # Connection
//
// A sender connects when it has a request to send, and starts every
// connection with ApiVersions (v3, lower if the broker answers
// UNSUPPORTED_VERSION). Each request is then sent at the highest version
// both the broker and kmsg know; one whose API the broker does not serve
// fails with ErrUnsupportedAPI, once. Frames are Kafka's:
//
//	request   ┌──────┬─────┬─────────┬────────┬───────────┬────────┬──────┐
//	          │ size │ key │ version │ corrID │ client id │ [tags] │ body │
//	          │ i32  │ i16 │ i16     │ i32    │ string    │        │      │
//	          └──────┴─────┴─────────┴────────┴───────────┴────────┴──────┘
//	response  ┌──────┬────────┬────────┬──────┐
//	          │ size │ corrID │ [tags] │ body │
//	          └──────┴────────┴────────┴──────┘
//
// [tags] is present when the version is flexible (KIP-482), except in the
// ApiVersions response, whose header is always v0. The client id is
// "qk-controller-<controller id>".
//
// # Retry
//
// Any other failure — dial refused, connection lost, no answer within
// RequestTimeout, a response too large, with the wrong correlation id or
// that does not decode — closes the connection; after RetryBackoff
// (doubling, bounded) the sender reconnects and sends the same request
// again. It keeps trying until the request is answered or the sender is
// removed: as in Kafka, the controller removes the sender of a broker
// whose registration went away. The first failure of a run is logged at
// Warn, the others at Debug, and the recovery at Info.
//
// A request may therefore reach a broker more than once (it was handled
// but the answer was lost). The controller's requests are idempotent for
// a given controller epoch, which is why Kafka can do the same.
//
// # Invariants
//
//   - Every Send's callback is called exactly once: with the response, a
//     permanent error, or ErrBrokerRemoved / ErrClosed when the sender
//     stops first.
//   - Callbacks of one broker run one at a time, on its sender's
//     goroutine, in the order of the Sends.
//   - RemoveBroker and Close return after the goroutines they stop have
//     called every pending callback and exited.
package channel
