package api

import (
	"sync"
	"time"
)

// fetchWaiters holds delayed fetches by partition key until a high
// watermark moves or their wait ends. (Interim: replaced by
// broker/purgatory once it lands.)
type fetchWaiters struct {
	mu sync.Mutex
	m  map[string][]*delayedFetch
}

func (h *Handler) waitFetch(f *delayedFetch) {
	w := &h.fetchWait
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string][]*delayedFetch{}
	}
	for _, k := range f.keys {
		w.m[k] = append(w.m[k], f)
	}
	w.mu.Unlock()
	// A change between the read and the registration is caught here.
	if f.tryComplete() {
		h.unwatch(f)
		return
	}
	time.AfterFunc(time.Until(f.deadline), func() {
		f.expire()
		h.unwatch(f)
	})
}

func (h *Handler) unwatch(f *delayedFetch) {
	w := &h.fetchWait
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range f.keys {
		list := w.m[k]
		for i, g := range list {
			if g == f {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.m, k)
		} else {
			w.m[k] = list
		}
	}
}

// HighWatermarkAdvanced completes the fetches waiting on a partition that
// now have enough data. The replica manager calls it.
func (h *Handler) HighWatermarkAdvanced(topic string, partition int32) {
	w := &h.fetchWait
	k := FetchKey(topic, partition)
	w.mu.Lock()
	list := append([]*delayedFetch(nil), w.m[k]...)
	w.mu.Unlock()
	for _, f := range list {
		if f.tryComplete() {
			h.unwatch(f)
		}
	}
}

// Close answers every waiting fetch now, and makes later fetches answer
// without waiting, so that a shutting-down network server has nothing
// left in flight for long.
func (h *Handler) Close() {
	h.closing.Store(true)
	w := &h.fetchWait
	w.mu.Lock()
	var all []*delayedFetch
	for _, list := range w.m {
		all = append(all, list...)
	}
	w.mu.Unlock()
	for _, f := range all {
		f.expire()
		h.unwatch(f)
	}
}
