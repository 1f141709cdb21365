package mru

import (
	"fmt"

	"github.com/cip11/cip11"
)

// Reader reads mru_key records (§9.4) from the state the caller executes
// against: for the dispatcher, the assignment block's read point H (§9.3).
type Reader interface {
	// Get returns the record under mru_key(submitter, kind) and whether one
	// exists. A stored value that does not decode is an error wrapping
	// ErrRecordLength; a storage failure is returned as is.
	Get(submitter cip11.Address, kind JobKind) (Record, bool, error)
}

// Writer writes mru_key records (§9.4 write path). Put overwrites any
// existing record for the key.
type Writer interface {
	Put(submitter cip11.Address, kind JobKind, r Record) error
}

// KV is the byte-keyed store a node already has, in which §9.4 mru_key
// state lives under the D15 layout. Get must not return a slice
// the store will later modify, and Set must not retain value after it returns
// unless it copies it.
type KV interface {
	Get(key []byte) (value []byte, ok bool, err error)
	Set(key, value []byte) error
}

// KVStore implements [Reader] and [Writer] (§9.4) over a [KV] with the D15 key and
// value layout, so the stored bytes are exactly what §9.4 consensus state
// holds.
type KVStore struct{ KV KV }

// Get implements [Reader]: it reads mru_key(submitter, kind) (§9.4).
func (s KVStore) Get(submitter cip11.Address, kind JobKind) (Record, bool, error) {
	k := Key(submitter, kind)
	v, ok, err := s.KV.Get(k[:])
	if err != nil || !ok {
		return Record{}, false, err
	}
	r, err := DecodeRecord(v)
	if err != nil {
		return Record{}, false, fmt.Errorf("mru_key %x: %w", k, err)
	}
	return r, true, nil
}

// Put implements [Writer]: it writes mru_key(submitter, kind) (§9.4).
func (s KVStore) Put(submitter cip11.Address, kind JobKind, r Record) error {
	k, v := Key(submitter, kind), r.Encode()
	return s.KV.Set(k[:], v[:])
}

// MemKV is an in-memory [KV]: a map from D15 key bytes to value bytes (§9.4).
type MemKV map[string][]byte

// Get implements [KV]; it returns a copy.
func (m MemKV) Get(key []byte) ([]byte, bool, error) {
	v, ok := m[string(key)]
	return append([]byte(nil), v...), ok, nil
}

// Set implements [KV]; it stores a copy.
func (m MemKV) Set(key, value []byte) error {
	m[string(key)] = append([]byte(nil), value...)
	return nil
}

// NewMemStore returns an empty in-memory §9.4 MRU store: a [KVStore] over a
// [MemKV], so it stores the D15 bytes exactly as a node's KV store would.
func NewMemStore() KVStore { return KVStore{KV: MemKV{}} }

// Store is read and write access to mru_key state: the block engine reads
// it at the assignment read point (§9.3) and writes it from verified
// results (§9.4). [KVStore] implements it.
type Store interface {
	Reader
	Writer
}
