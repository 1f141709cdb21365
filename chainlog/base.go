package chainlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// A validator's own block log may be pruned (docs/chainlog.md "Pruned
// block logs"; adapters/node, ValidatorConfig.KeepBlocks): after the header
// a base line
//
//	{"base":{"height":B,"reconfigurations":[…]}}
//
// says that the blocks 1 … B are gone and carries the in-band
// reconfigurations they held; the block lines then start at B+1. Such a
// file is not a chain log from block 1: replaying it needs the state at a
// height the file still holds (a validator snapshot, cip11 replay
// -snapshots).

// ErrPruned: the line after the header is a base line (a pruned block
// log) and the reader was not asked to accept one ([Reader.ReadBase]).
var ErrPruned = errors.New("chainlog: pruned log: the blocks before its base line are gone")

// Base is a pruned log's base line.
type Base struct {
	// Height is B: the log holds no block at or below it.
	Height uint64 `json:"height"`
	// Reconfigurations are the reconfigure transactions of the blocks
	// 1 … B, in order.
	Reconfigurations []Reconfigure `json:"reconfigurations"`
}

type baseLine struct {
	Base *Base `json:"base"`
}

var basePrefix = []byte(`{"base":`)

// decodeBase strictly decodes a base line; failures wrap ErrMalformed.
func decodeBase(line []byte) (*Base, error) {
	var bl baseLine
	if err := strictObject(line, &bl); err != nil {
		return nil, fmt.Errorf("base line: %w", err)
	}
	if bl.Base == nil || bl.Base.Height == 0 {
		return nil, fmt.Errorf("%w: base line: no base height above 0", ErrMalformed)
	}
	for i := range bl.Base.Reconfigurations {
		if err := bl.Base.Reconfigurations[i].validate(); err != nil {
			return nil, fmt.Errorf("base line: reconfigurations[%d]: %w", i, err)
		}
	}
	return bl.Base, nil
}

// DecodeBase strictly decodes a pruned log's base line (errors wrap
// ErrMalformed): its height is above 0, its reconfigurations valid.
func DecodeBase(line []byte) (Base, error) {
	b, err := decodeBase(line)
	if err != nil {
		return Base{}, err
	}
	return *b, nil
}

// EncodeBase encodes b as a base line (no newline), which DecodeBase
// reads back to b.
func EncodeBase(b Base) ([]byte, error) {
	if b.Height == 0 {
		return nil, fmt.Errorf("%w: base line: no base height above 0", ErrMalformed)
	}
	if b.Reconfigurations == nil {
		b.Reconfigurations = []Reconfigure{}
	}
	return marshalCompact(baseLine{Base: &b})
}

// ReadBase accepts a pruned log: if the line after the header is a base
// line it is decoded and returned, and the blocks must then start at its
// height + 1; otherwise it returns nil and the log reads as usual from
// block 1. It must be called before the first [Reader.Next]; without it,
// Next refuses a base line with an error wrapping ErrPruned. A malformed
// base line wraps ErrMalformed.
func (r *Reader) ReadBase() (*Base, error) {
	if r.next != 1 || r.peeked != nil || r.based {
		return nil, errors.New("chainlog: ReadBase after the first block")
	}
	r.based = true
	line, err := r.readLine()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(line, basePrefix) {
		r.peeked = line
		return nil, nil
	}
	b, err := decodeBase(line)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", r.line, err)
	}
	r.next = b.Height + 1
	return b, nil
}

// prunedError is Next's error for a base line it was not asked to accept.
func (r *Reader) prunedError(line []byte) error {
	if b, err := decodeBase(line); err == nil {
		return fmt.Errorf("%w: line %d is a base line: blocks 1 … %d are gone (replay it from a snapshot)", ErrPruned, r.line, b.Height)
	}
	return fmt.Errorf("%w: line %d is a base line (replay it from a snapshot)", ErrPruned, r.line)
}
