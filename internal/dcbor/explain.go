package dcbor

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// explain names the defect of an input the library decoded but whose
// canonical re-encoding out differs: it walks both item trees in step and
// reports the first difference. Both are well-formed, definite-length and
// tag-free (the library checked in; it produced out), but every read is
// bounds-checked anyway.
func explain(in, out []byte) error {
	w := walk{in: in, out: out}
	if err := w.item(); err != nil {
		return err
	}
	return fmt.Errorf("%w: at byte %d", ErrNotCanonical, w.i)
}

// walk holds a cursor into the input (i) and into its re-encoding (o).
type walk struct {
	in, out []byte
	i, o    int
}

// head is one decoded CBOR head.
type head struct {
	major, ai byte
	arg       uint64
	size      int // bytes of the head itself
}

func readHead(b []byte, off int) (head, bool) {
	if off < 0 || off >= len(b) {
		return head{}, false
	}
	h := head{major: b[off] >> 5, ai: b[off] & 0x1f, size: 1}
	switch {
	case h.ai < 24:
		h.arg = uint64(h.ai)
		return h, true
	case h.ai > 27:
		return head{}, false
	}
	n := 1 << (h.ai - 24)
	if len(b)-off-1 < n {
		return head{}, false
	}
	var buf [8]byte
	copy(buf[8-n:], b[off+1:off+1+n])
	h.arg, h.size = binary.BigEndian.Uint64(buf[:]), 1+n
	return h, true
}

// shortest reports whether h's argument uses the fewest bytes
// (RFC 8949 §4.2.1). Major type 7 is floats and simple values, judged by type.
func (h head) shortest() bool {
	switch {
	case h.major == 7 || h.ai < 24:
		return true
	case h.ai == 24:
		return h.arg >= 24
	case h.ai == 25:
		return h.arg > 0xff
	case h.ai == 26:
		return h.arg > 0xffff
	}
	return h.arg > 0xffffffff
}

// end returns the offset just past the item starting at off, or -1.
func end(b []byte, off, depth int) int {
	h, ok := readHead(b, off)
	if !ok || depth > MaxDepth {
		return -1
	}
	off += h.size
	switch h.major {
	case 2, 3:
		if h.arg > uint64(len(b)-off) {
			return -1
		}
		return off + int(h.arg)
	case 4, 5:
		n := h.arg
		if h.major == 5 {
			n *= 2
		}
		if h.arg > uint64(len(b)-off) {
			return -1 // every item takes at least one byte
		}
		for range n {
			if off = end(b, off, depth+1); off < 0 {
				return -1
			}
		}
	case 6:
		return end(b, off, depth+1)
	}
	return off
}

// canonical reports whether every head of the item b[off:stop] is shortest.
func canonical(b []byte, off, stop int) bool {
	for off < stop {
		h, ok := readHead(b, off)
		if !ok || !h.shortest() {
			return false
		}
		off += h.size
		if h.major == 2 || h.major == 3 {
			off += int(h.arg) // bounded: the item ends at stop
		}
	}
	return off == stop
}

func (w *walk) differs(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d", fmt.Errorf(format, args...), w.i)
}

// item compares the items at w.i and w.o and advances past both.
func (w *walk) item() error {
	hi, ok1 := readHead(w.in, w.i)
	ho, ok2 := readHead(w.out, w.o)
	switch {
	case !ok1 || !ok2:
		return w.differs("%w: unreadable head", ErrNotCanonical)
	case hi.major != ho.major:
		return w.differs("%w: major type %d where the schema has %d", ErrUnexpectedType, hi.major, ho.major)
	case hi.major == 7:
		if !bytes.Equal(w.in[w.i:w.i+hi.size], w.out[w.o:w.o+ho.size]) {
			return w.differs("%w: initial byte 0x%02x where the schema has 0x%02x", ErrUnexpectedType, w.in[w.i], w.out[w.o])
		}
	case !hi.shortest():
		return w.differs("%w: argument %d in %d bytes", ErrNonShortestInt, hi.arg, hi.size-1)
	case hi.arg != ho.arg && hi.major == 2:
		return w.differs("%w: %d bytes, want %d", ErrByteLength, hi.arg, ho.arg)
	case hi.arg != ho.arg && hi.major != 5: // maps: compared key by key
		return w.differs("%w: major type %d argument %d re-encodes as %d", ErrNotCanonical, hi.major, hi.arg, ho.arg)
	}
	switch hi.major {
	case 4:
		w.i, w.o = w.i+hi.size, w.o+ho.size
		for range hi.arg {
			if err := w.item(); err != nil {
				return err
			}
		}
		return nil
	case 5:
		return w.mapItems(hi, ho)
	}
	ei, eo := end(w.in, w.i, 0), end(w.out, w.o, 0)
	if ei < 0 || eo < 0 || !bytes.Equal(w.in[w.i:ei], w.out[w.o:eo]) {
		return w.differs("%w: item content", ErrNotCanonical)
	}
	w.i, w.o = ei, eo
	return nil
}

// entry is one map key: its bytes and where its value starts.
type entry struct {
	key   []byte
	value int
}

// entries splits the map whose head h is at off into its keys.
func entries(b []byte, off int, h head) ([]entry, int, bool) {
	off += h.size
	if h.arg > uint64(len(b)-off) {
		return nil, 0, false
	}
	out := make([]entry, 0, h.arg)
	for range h.arg {
		k := end(b, off, 1)
		if k < 0 {
			return nil, 0, false
		}
		v := end(b, k, 1)
		if v < 0 {
			return nil, 0, false
		}
		out = append(out, entry{key: b[off:k], value: k})
		off = v
	}
	return out, off, true
}

// mapItems compares two maps: first the keys (shortest form, known,
// ascending, all present), then the values pairwise.
func (w *walk) mapItems(hi, ho head) error {
	ki, endIn, ok1 := entries(w.in, w.i, hi)
	ko, endOut, ok2 := entries(w.out, w.o, ho)
	if !ok1 || !ok2 {
		return w.differs("%w: unreadable map", ErrNotCanonical)
	}
	keys := func(set []entry) map[string]bool {
		m := make(map[string]bool, len(set))
		for _, e := range set {
			m[string(e.key)] = true
		}
		return m
	}
	inKeys, outKeys := keys(ki), keys(ko)
	for _, e := range ki {
		if !canonical(e.key, 0, len(e.key)) {
			return w.differs("%w: map key %x", ErrNonShortestInt, e.key)
		}
	}
	for _, e := range ki {
		if !outKeys[string(e.key)] {
			return w.differs("%w: key %x", ErrUnknownKey, e.key)
		}
	}
	for j := 1; j < len(ki); j++ {
		switch bytes.Compare(ki[j-1].key, ki[j].key) {
		case 0:
			return w.differs("%w: key %x", ErrDuplicateKey, ki[j].key)
		case 1:
			return w.differs("%w: key %x after %x", ErrKeyOrder, ki[j].key, ki[j-1].key)
		}
	}
	for _, e := range ko {
		if !inKeys[string(e.key)] {
			return w.differs("%w: key %x", ErrMissingKey, e.key)
		}
	}
	if len(ki) != len(ko) {
		return w.differs("%w: %d keys re-encode as %d", ErrNotCanonical, len(ki), len(ko))
	}
	for j := range ki {
		w.i, w.o = ki[j].value, ko[j].value
		if err := w.item(); err != nil {
			return err
		}
	}
	w.i, w.o = endIn, endOut
	return nil
}
