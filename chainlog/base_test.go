package chainlog

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadBase: a pruned log (a base line after the header) is refused by
// Next with ErrPruned unless ReadBase accepted it; ReadBase returns the
// base and the blocks then start after it; on an unpruned log ReadBase
// returns nil and changes nothing; a malformed base line is ErrMalformed.
func TestReadBase(t *testing.T) {
	var buf bytes.Buffer
	writeLog(t, &buf, 5)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	pruned := strings.Join([]string{lines[0], `{"base":{"height":3,"reconfigurations":[]}}`, lines[4], lines[5]}, "\n")

	cr, err := NewReader(strings.NewReader(pruned))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); !errors.Is(err, ErrPruned) || errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "blocks 1 … 3 are gone") {
		t.Fatalf("base line without ReadBase: %v", err)
	}

	cr, _ = NewReader(strings.NewReader(pruned))
	b, err := cr.ReadBase()
	if err != nil || b == nil || b.Height != 3 || len(b.Reconfigurations) != 0 {
		t.Fatalf("ReadBase: %+v, %v", b, err)
	}
	for _, want := range []uint64{4, 5} {
		blk, err := cr.Next()
		if err != nil || uint64(blk.Height) != want {
			t.Fatalf("block %d: %v %v", want, blk.Height, err)
		}
	}
	if _, err := cr.Next(); err != io.EOF {
		t.Fatalf("after the last block: %v", err)
	}
	if _, err := cr.ReadBase(); err == nil {
		t.Fatal("ReadBase after the blocks")
	}

	cr, _ = NewReader(strings.NewReader(buf.String()))
	if b, err := cr.ReadBase(); b != nil || err != nil {
		t.Fatalf("ReadBase of an unpruned log: %+v, %v", b, err)
	}
	_, all := readAll(t, strings.NewReader(buf.String()))
	for i := range all {
		blk, err := cr.Next()
		if err != nil || blk.Height != all[i].Height {
			t.Fatalf("block %d after ReadBase: %v", i+1, err)
		}
	}

	for _, bad := range []string{
		`{"base":{"height":0,"reconfigurations":[]}}`,
		`{"base":{"height":3}}`,
		`{"base":{"height":3,"reconfigurations":[],"x":1}}`,
		`{"base":{"height":"3","reconfigurations":[]}}`,
		`{"base":{"height":3,"reconfigurations":[{}]}}`,
		`{"base":null}`,
	} {
		cr, _ := NewReader(strings.NewReader(lines[0] + "\n" + bad + "\n" + lines[4]))
		if _, err := cr.ReadBase(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	// a base line whose height does not precede the first block
	cr, _ = NewReader(strings.NewReader(strings.Replace(pruned, `"height":3`, `"height":2`, 1)))
	if _, err := cr.ReadBase(); err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("block 4 after base 2: %v", err)
	}
}
