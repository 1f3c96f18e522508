package record

import "sync"

// pool is a sync.Pool of *T that hands out the type itself instead of any,
// and runs a reset hook on every value going back in. The codecs pool
// their stream encoders and decoders (building a gzip or lz4 stream costs
// hundreds of KiB of tables); the hook is where a pooled value lets go of
// the caller's buffers, so an idle pool never pins a batch's memory and no
// later caller can see it.
type pool[T any] struct {
	p     sync.Pool
	reset func(*T)
}

// newPool returns a pool that builds values with create and passes each to
// reset when it is put back.
func newPool[T any](create func() *T, reset func(*T)) *pool[T] {
	p := &pool[T]{reset: reset}
	p.p.New = func() any { return create() }
	return p
}

// get returns a pooled value or a new one.
func (p *pool[T]) get() *T { return p.p.Get().(*T) }

// put resets v and returns it to the pool; v must not be used afterwards.
func (p *pool[T]) put(v *T) {
	p.reset(v)
	p.p.Put(v)
}
