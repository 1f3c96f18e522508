// Package tui is `qk top`: a live view of what a cluster's partitions are
// doing, including the one thing no Kafka API gives, each follower's log
// end offset, which qk brokers publish on their admin HTTP endpoint.
//
// Two layers, joined only by the Snapshot type:
//
//	           every interval (tea.Tick)             tea.Cmd goroutine
//	 Model ──── tickMsg ───► collectCmd ───► Collector.Collect(ctx) ──► cluster
//	   ▲                                                 │
//	   └──────────────── SnapshotMsg{*Snapshot} ◄────────┘
//
//	collect.go   Collector: one round = Metadata (to the broker that answered
//	             last, so a stopped one costs nothing), then in parallel per
//	             broker DescribeConfigs(BROKER, qk.http.advertised.listener)
//	             (answer = up; value = its endpoint), ListOffsets per leader
//	             (HW; read_committed: LSO), DescribeLogDirs (sizes, non-qk brokers), the groups
//	             (List/Describe/OffsetFetch; lag from this round's HWs), and
//	             for qk brokers GET /v1/partitions (every replica's LEO, the
//	             leader's view of its followers, the open transactions)
//	             and /metrics (counters).
//	endpoint.go  the HTTP documents and a scanner for the three counters.
//	snapshot.go  Snapshot and its --once printers (text, json).
//	model.go     the bubbletea model: keys, view state, ISR-change marks and
//	             the histories behind the detail pane's sparklines.
//	view.go      the four tables, header, footer, help and detail pane.
//
// Invariants:
//   - The UI goroutine never waits on the network: Update only stores what
//     a round produced and returns commands; at most one round is in
//     flight, and a round is bounded by about two request timeouts
//     (Metadata, then the parallel rest), so a SIGSTOPped broker is shown
//     down within a few seconds instead of freezing the screen.
//   - Unknown is not zero: a value the cluster did not give is nil in the
//     Snapshot, null in JSON and "-", "?" or "unavailable" on screen. A
//     cluster that is not qk has every replica's LEO unavailable and
//     everything else the Kafka protocol gives.
//   - Nothing is marked by colour alone: statuses are words
//     (UNDER-REPLICATED, OFFLINE, LEADER-DOWN, TXN-STUCK, DOWN), the selected row has
//     '>', the current view brackets, an ISR that changed in the last 5 s a
//     trailing '*'. The golden screens (testdata/*.golden) are rendered
//     with the Ascii profile and must read the same.
//   - Time on screen is snapshot time, so recorded snapshots replay into
//     the same screens (ISR highlights expire by snapshot time).
//   - Every line of View fits the width and View has exactly height lines.
package tui
