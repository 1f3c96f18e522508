// Package e2e holds process-level integration tests of qk: they build the
// qk binary once, start `qk broker start` as a child process on a loopback
// port with its data in a temporary directory, and drive it with real
// clients (franz-go, and librdkafka through kcat) exactly as an operator's
// tools would.
//
// In-process tests (broker/brokertest) cannot show what only a separate
// process shows: that the command-line contract works, that SIGTERM gives a
// clean shutdown with exit status 0 and Kafka's .kafka_cleanshutdown
// marker, and that SIGKILL at any moment loses no acknowledged record.
//
// Every test file carries the build tag integration, so `go test ./...`
// skips them and `go test -tags integration ./e2e` (or `make
// test-integration`) runs them. kcat tests skip with a message when kcat is
// not installed (scripts/ensure-deps.sh installs it).
//
// Rules the helpers enforce: servers listen on 127.0.0.1 only; each broker
// runs in its own process group and is stopped by its PID, never by name;
// every wait is a poll with a deadline, never a sleep; a failing test
// prints the broker's log.
package e2e
