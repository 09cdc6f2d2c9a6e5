package coord

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/wire"
)

// kvStore is the coordinator's key–value service (002's publish–subscribe
// scheme for peer discovery): values by key, and the lookups parked until
// their key is published, in the order they arrived.
type kvStore struct {
	vals  map[string][]byte
	bytes int // keys and values stored
	waits map[string][]waiter
}

type waiter struct {
	c   *conn
	req uint64
}

func newKVStore() kvStore {
	return kvStore{vals: make(map[string][]byte), waits: make(map[string][]waiter)}
}

// cancel drops the lookups c has parked. It visits every waited-for key,
// but only for connections that have some parked.
func (s *kvStore) cancel(c *conn) {
	for k, ws := range s.waits {
		kept := ws[:0]
		for _, w := range ws {
			if w.c != c {
				kept = append(kept, w)
			}
		}
		clear(ws[len(kept):])
		if len(kept) == 0 {
			delete(s.waits, k)
		} else {
			s.waits[k] = kept
		}
	}
	c.waits = 0
}

func (m *Machine) publish(cn *conn, x *wire.Publish) {
	if cn.resumed && x.Req <= cn.maxReq {
		// A resumed relay sends again what it sent before the cut: the
		// publish was applied (a later one of the key must not be
		// undone), only its Ack may have been lost.
		m.send(cn, &wire.Ack{Req: x.Req})
		return
	}
	cn.maxReq = max(cn.maxReq, x.Req)
	if len(x.Value) > m.cfg.MaxValue {
		m.protocolError(cn, x.Req, fmt.Sprintf("value of %d bytes exceeds %d", len(x.Value), m.cfg.MaxValue))
		return
	}
	s := &m.kv
	size := s.bytes + len(x.Key) + len(x.Value)
	if old, ok := s.vals[x.Key]; ok {
		size -= len(x.Key) + len(old)
	}
	if size > m.cfg.MaxStore {
		m.protocolError(cn, x.Req, fmt.Sprintf("key–value store full (%d bytes)", m.cfg.MaxStore))
		return
	}
	s.vals[x.Key] = x.Value // a later publish replaces it
	s.bytes = size
	m.send(cn, &wire.Ack{Req: x.Req})
	// Answer the parked lookups in the order they arrived; sends are
	// ordered, so they are answered in publish order too.
	ws := s.waits[x.Key]
	delete(s.waits, x.Key)
	for _, w := range ws {
		w.c.waits--
		m.send(w.c, &wire.Value{Req: w.req, Key: x.Key, Value: x.Value, Found: true})
	}
}

func (m *Machine) lookup(cn *conn, x *wire.Lookup) {
	cn.maxReq = max(cn.maxReq, x.Req)
	s := &m.kv
	v, ok := s.vals[x.Key]
	if ok || !x.Wait {
		m.send(cn, &wire.Value{Req: x.Req, Key: x.Key, Value: v, Found: ok})
		return
	}
	if cn.waits >= m.cfg.MaxWaits*len(cn.ranks) {
		m.protocolError(cn, x.Req, fmt.Sprintf("more than %d lookups waiting", cn.waits))
		return
	}
	cn.waits++
	s.waits[x.Key] = append(s.waits[x.Key], waiter{c: cn, req: x.Req})
}
