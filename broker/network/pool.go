//go:build linux

package network

import (
	"math/bits"
	"sync"
)

// Frame buffers come from power-of-two size classes between 512 B and
// 16 MiB, one sync.Pool each. A produce request for many partitions is
// several MiB (a batch of up to 1 MB per partition); with a 1 MiB top
// class those were allocated and zeroed per request, 10% of the broker's
// CPU at 100 partitions. Larger frames are allocated exactly and left to
// the garbage collector: they are rare. sync.Pool drops what stays unused
// across two collections, so a burst of large frames pins nothing.
const (
	minBufShift = 9
	maxBufShift = 24
)

var bufPools [maxBufShift - minBufShift + 1]sync.Pool

func bufClass(n int) int {
	c := bits.Len(uint(n-1)) - minBufShift
	return max(c, 0)
}

// getBuf returns a buffer of length n. Its capacity is the size class.
func getBuf(n int) *[]byte {
	if n > 1<<maxBufShift {
		b := make([]byte, n)
		return &b
	}
	c := bufClass(n)
	if v := bufPools[c].Get(); v != nil {
		bp := v.(*[]byte)
		*bp = (*bp)[:n]
		return bp
	}
	b := make([]byte, n, 1<<(c+minBufShift))
	return &b
}

// putBuf returns a buffer from getBuf to its pool. nil and unpooled sizes
// are ignored.
func putBuf(bp *[]byte) {
	if bp == nil {
		return
	}
	c := cap(*bp)
	if c < 1<<minBufShift || c > 1<<maxBufShift || c&(c-1) != 0 {
		return
	}
	*bp = (*bp)[:0]
	bufPools[bufClass(c)].Put(bp)
}
