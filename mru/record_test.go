package mru

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cip11/cip11"
)

var (
	submitter = cip11.Address{0x5a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0x19}
	runnerX   = cip11.Address{0xee, 19: 0xff}
)

// TestKeyLayout pins mru_key (D15): "cip11:mru:v1" is 6369703131 3a 6d7275 3a 7631.
func TestKeyLayout(t *testing.T) {
	k := Key(submitter, Agent)
	want := "63697031313a6d72753a7631" + "5a0102030405060708090a0b0c0d0e0f10111219" + "05"
	if got := hex.EncodeToString(k[:]); got != want {
		t.Fatalf("Key = %s, want %s", got, want)
	}
}

// TestRecordLayout pins the 28-byte value (D15) and its strict decode.
func TestRecordLayout(t *testing.T) {
	r := Record{Runner: runnerX, SetAt: 0x0102030405060708}
	v := r.Encode()
	want := "ee000000000000000000000000000000000000ff" + "0102030405060708"
	if got := hex.EncodeToString(v[:]); got != want {
		t.Fatalf("Encode = %s, want %s", got, want)
	}
	got, err := DecodeRecord(v[:])
	if err != nil || got != r {
		t.Fatalf("DecodeRecord = %+v, %v", got, err)
	}
	for _, n := range []int{0, 20, 27, 29, 36} {
		if _, err := DecodeRecord(make([]byte, n)); !errors.Is(err, ErrRecordLength) {
			t.Errorf("%d bytes: err = %v", n, err)
		}
	}
}

// TestKVStoreBytes: the in-memory store holds exactly the D15 key and value.
func TestKVStoreBytes(t *testing.T) {
	kv := MemKV{}
	s := KVStore{KV: kv}
	r := Record{Runner: runnerX, SetAt: 42}
	if err := s.Put(submitter, Http, r); err != nil {
		t.Fatal(err)
	}
	k, v := Key(submitter, Http), r.Encode()
	if len(kv) != 1 || !bytes.Equal(kv[string(k[:])], v[:]) {
		t.Fatalf("stored %x", kv)
	}
	if got, ok, err := s.Get(submitter, Http); err != nil || !ok || got != r {
		t.Fatalf("Get = %+v %v %v", got, ok, err)
	}
	if _, ok, err := s.Get(submitter, Mcp); ok || err != nil {
		t.Fatalf("Get of another kind = %v %v", ok, err)
	}
	kv[string(k[:])] = v[:27] // corrupt: 27 bytes
	if _, _, err := s.Get(submitter, Http); !errors.Is(err, ErrRecordLength) {
		t.Fatalf("corrupt value: err = %v", err)
	}
}

// FuzzDecodeRecord: never panics; accepts exactly the 28-byte inputs, and
// those re-encode to themselves.
func FuzzDecodeRecord(f *testing.F) {
	v := Record{Runner: runnerX, SetAt: 42}.Encode()
	f.Add(v[:])
	f.Add([]byte{})
	f.Add(v[:27])
	f.Add(append(v[:], 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if (err == nil) != (len(b) == RecordLen) {
			t.Fatalf("len %d: err = %v", len(b), err)
		}
		if err != nil {
			if !errors.Is(err, ErrRecordLength) {
				t.Fatalf("err %v does not wrap ErrRecordLength", err)
			}
			return
		}
		if re := r.Encode(); !bytes.Equal(re[:], b) {
			t.Fatalf("re-encoded %x, want %x", re, b)
		}
	})
}
