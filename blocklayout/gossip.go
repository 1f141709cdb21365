package blocklayout

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/presence"
)

// Presence gossip message (§8.2, D33, SPEC-NOTES C8): after committing
// height h every validator publishes the runners it holds live streams to
// as one message on its own CometBFT p2p channel:
//
//	"C11P" ‖ version 1 ‖ height (8, BE) ‖ registry size n (4, BE) ‖
//	PresenceInputV1 over n runners
//
// The reactor that carries it lives in adapters/cometbft; the codec is here
// so that the conformance vectors pin it without importing CometBFT.
const (
	// GossipMagic opens a presence gossip message.
	GossipMagic = "C11P"
	// GossipVersion is the only message version.
	GossipVersion = 1
	// GossipHeaderBytes is the fixed part: magic, version, height, n.
	GossipHeaderBytes = 4 + 1 + 8 + 4
	// MaxGossipBytes bounds one message: the header and the largest
	// PresenceInputV1 a block header may carry.
	MaxGossipBytes = GossipHeaderBytes + blockheader.MaxPresenceBytes
)

// Sentinels of the gossip codec. Every decoding failure is [ErrGossip];
// the more specific sentinels below wrap it, and a malformed field also
// wraps the presence package's sentinel.
var (
	// ErrGossip: a presence gossip message is malformed.
	ErrGossip = errors.New("cometbft: malformed presence gossip")
	// ErrGossipLength: the message is shorter than its 17-byte header or
	// longer than [MaxGossipBytes] (or, encoding, the field is longer than
	// a block header's presence field).
	ErrGossipLength = fmt.Errorf("%w: length", ErrGossip)
	// ErrGossipMagic: the message does not open with "C11P".
	ErrGossipMagic = fmt.Errorf("%w: magic", ErrGossip)
	// ErrGossipVersion: the version byte is not 1.
	ErrGossipVersion = fmt.Errorf("%w: version", ErrGossip)
	// ErrGossipRegistrySize: encoding, the registry size is negative or
	// above [presence.MaxRegistrySize].
	ErrGossipRegistrySize = fmt.Errorf("%w: registry size", ErrGossip)
)

// EncodeGossip is the message publishing field (a PresenceInputV1 over n
// runners) as this validator's view at height h. The field is carried
// verbatim: the receiver decodes it against n.
func EncodeGossip(h uint64, n int, field []byte) ([]byte, error) {
	if n < 0 || uint64(n) > presence.MaxRegistrySize {
		return nil, fmt.Errorf("%w: %d", ErrGossipRegistrySize, n)
	}
	if len(field) > blockheader.MaxPresenceBytes {
		return nil, fmt.Errorf("%w: field of %d bytes (max %d)", ErrGossipLength, len(field), blockheader.MaxPresenceBytes)
	}
	b := make([]byte, 0, GossipHeaderBytes+len(field))
	b = append(b, GossipMagic...)
	b = append(b, GossipVersion)
	b = binary.BigEndian.AppendUint64(b, h)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return append(b, field...), nil
}

// DecodeGossip strictly decodes a message: the height, and the present
// registry indices (the field decoded against its registry size with
// presence.Decode, whose sentinel the error also wraps). Checks in order:
// length, magic, version, field.
func DecodeGossip(b []byte) (h uint64, set presence.Set, err error) {
	switch {
	case len(b) < GossipHeaderBytes || len(b) > MaxGossipBytes:
		return 0, presence.Set{}, fmt.Errorf("%w: %d bytes (%d … %d)", ErrGossipLength, len(b), GossipHeaderBytes, MaxGossipBytes)
	case string(b[:4]) != GossipMagic:
		return 0, presence.Set{}, fmt.Errorf("%w: %x", ErrGossipMagic, b[:4])
	case b[4] != GossipVersion:
		return 0, presence.Set{}, fmt.Errorf("%w: %d", ErrGossipVersion, b[4])
	}
	h = binary.BigEndian.Uint64(b[5:13])
	n := binary.BigEndian.Uint32(b[13:17])
	set, err = presence.Decode(b[GossipHeaderBytes:], int(n))
	if err != nil {
		return 0, presence.Set{}, fmt.Errorf("%w: %w", ErrGossip, err)
	}
	return h, set, nil
}
