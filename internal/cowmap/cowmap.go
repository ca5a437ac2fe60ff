// Package cowmap is a copy-on-write map from string keys: a read is one
// atomic load and no lock, a write copies the map. It suits per-node tables
// that the hot path reads on every statement and that change only when nodes
// come and go.
package cowmap

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a copy-on-write map; the zero value is empty and ready to use. It is
// safe for concurrent use. Values are shared, not copied.
type Map[V any] struct {
	mu sync.Mutex // serialises writers
	m  atomic.Pointer[map[string]V]
}

// All returns the current map. It must not be modified.
func (c *Map[V]) All() map[string]V {
	if m := c.m.Load(); m != nil {
		return *m
	}
	return nil
}

// Get returns the value for key, if any.
func (c *Map[V]) Get(key string) (V, bool) {
	v, ok := c.All()[key]
	return v, ok
}

// GetOrCreate returns the value for key, storing newValue() first if there
// is none.
func (c *Map[V]) GetOrCreate(key string, newValue func() V) V {
	if v, ok := c.Get(key); ok {
		return v
	}
	return c.GetOrCreateAll([]string{key}, newValue)[0]
}

// GetOrCreateAll returns the value of each key, in order, creating the
// missing ones with newValue in one copy of the map.
func (c *Map[V]) GetOrCreateAll(keys []string, newValue func() V) []V {
	out := make([]V, len(keys))
	cur := c.All()
	missing := false
	for i, k := range keys {
		var ok bool
		if out[i], ok = cur[k]; !ok {
			missing = true
		}
	}
	if !missing {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(c.All())
	if next == nil {
		next = make(map[string]V, len(keys))
	}
	for i, k := range keys {
		v, ok := next[k]
		if !ok {
			v = newValue()
			next[k] = v
		}
		out[i] = v
	}
	c.m.Store(&next)
	return out
}

// Retain keeps only the keys for which keep returns true.
func (c *Map[V]) Retain(keep func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(c.All())
	maps.DeleteFunc(next, func(k string, _ V) bool { return !keep(k) })
	c.m.Store(&next)
}
