package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitDone reports whether a wait on b ends within a short deadline
// (true) or is still waiting (false).
func waitDone(a *applied, b appliedBarrier) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return a.wait(ctx, b) == nil
}

func TestAppliedBarrier(t *testing.T) {
	a := newApplied()
	a.reset(1)
	require.True(t, waitDone(a, a.barrier(1, []int32{0, 1})), "nothing sent: nothing to wait for")

	s0, s1 := a.next(1, 0), a.next(1, 1)
	b := a.barrier(1, []int32{0, 1})
	require.False(t, waitDone(a, b))
	a.ack(1, 0, s0)
	require.False(t, waitDone(a, b), "broker 1 has not answered")
	a.ack(2, 1, s1) // an answer of another term
	require.False(t, waitDone(a, b))
	a.ack(1, 1, s1)
	require.True(t, waitDone(a, b))

	// A later request's answer covers the earlier ones (one ordered queue
	// per broker); a broker that leaves the live set releases the wait.
	a.next(1, 0)
	s0 = a.next(1, 0)
	a.next(1, 1)
	b = a.barrier(1, []int32{0, 1})
	a.ack(1, 0, s0)
	require.False(t, waitDone(a, b))
	a.forget(1)
	require.True(t, waitDone(a, b))

	// The end of the term releases every wait of it, and a wait wakes on
	// the answer rather than polling.
	a.next(1, 0)
	b = a.barrier(1, []int32{0})
	done := make(chan error, 1)
	go func() { done <- a.wait(context.Background(), b) }()
	a.reset(2)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("wait not released by the end of the term")
	}
	require.Zero(t, a.next(1, 0), "a request numbered for an ended term")

	// The request's timeout.
	a.next(2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, a.wait(ctx, a.barrier(2, []int32{0})), context.DeadlineExceeded)
}
