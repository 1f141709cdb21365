package wire

// The one hand-written encoder left in this package. HeartbeatPing is
// signed and written every heartbeat interval on every connection, and its
// encode+sign must stay within about 2% of a bare secp256k1 signature:
// BenchmarkHeartbeatPingSignRatio measures this encoder, the dcbor encoder
// with a kept Codec and with a fresh one, against the bare signature in the
// same run (the generic path costs 2–4% there). The bytes are exactly what
// dcbor writes for *HeartbeatPing (TestPingEncoderMatchesDcbor, and every
// fuzz target decodes them with dcbor); decoding always goes through dcbor.

// appendPayload appends {0: block_height, 1: nonce, 2: signed} (D7, D8).
func (f *HeartbeatPing) appendPayload(b []byte) []byte {
	b = appendUint(append(b, 0xa3, 0x00), f.BlockHeight) // map(3), key 0
	b = appendUint(append(b, 0x01), f.Nonce)             // key 1
	b = append(b, 0x02, 0x58, RunnerSigLen)              // key 2, bytes(65)
	return append(b, f.Signed[:]...)
}

// appendUint appends an unsigned int in shortest form (RFC 8949 §4.2.1).
func appendUint(b []byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(b, byte(n))
	case n <= 0xff:
		return append(b, 0x18, byte(n))
	case n <= 0xffff:
		return append(b, 0x19, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(b, 0x1a, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, 0x1b, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}
