package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cip11/cip11/internal/dcbor"
)

var updateFuzzSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite testdata/fuzz seeds from conformance/testdata/vectors/frame.json")

// allSentinels are the errors a decode failure must wrap at least one of.
func allSentinels() []error {
	return []error{ErrFrameEmpty, ErrFrameTooLarge, ErrFrameTruncated, ErrFrameUnknownType, ErrFrameTrailingBytes,
		dcbor.ErrTruncated, dcbor.ErrTrailingBytes, dcbor.ErrMalformed, dcbor.ErrNonShortestInt, dcbor.ErrIndefiniteLength,
		dcbor.ErrTag, dcbor.ErrUnexpectedType, dcbor.ErrIntRange, dcbor.ErrInvalidUTF8, dcbor.ErrKeyOrder, dcbor.ErrDuplicateKey,
		dcbor.ErrUnknownKey, dcbor.ErrMissingKey, dcbor.ErrByteLength, dcbor.ErrNotCanonical,
		ErrFieldRange, ErrEnumUnknown, ErrPubKeyScheme, ErrPubKeyLength, ErrPubKeyRole, ErrPubKeyPoint, ErrSigLength}
}

func checkSentinel(t *testing.T, err error) {
	for _, s := range allSentinels() {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error wraps no sentinel: %v", err)
}

// FuzzReadFrame: every frame the stream reader accepts re-encodes to exactly
// the bytes it consumed; every rejection names a sentinel.
func FuzzReadFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 1<<16)
		r.SetVersion(VersionReceipts) // every type, the receipt frames included
		off := 0
		for {
			typ, payload, err := r.ReadRaw()
			if err == io.EOF {
				return
			}
			if err != nil {
				checkSentinel(t, err)
				return
			}
			n := HeaderLen + 1 + len(payload)
			consumed := data[off : off+n]
			off += n
			fr, err := DecodePayload(typ, payload)
			if err != nil {
				checkSentinel(t, err)
				return
			}
			again, err := Encode(fr)
			if err != nil {
				t.Fatalf("decoded %s does not encode: %v", typ, err)
			}
			if !bytes.Equal(again, consumed) {
				t.Fatalf("decode→encode differs:\n in %x\nout %x", consumed, again)
			}
			if single, err := Decode(consumed, 1<<16); err != nil || single.Type() != typ {
				t.Fatalf("Decode disagrees with Reader: %v", err)
			}
		}
	})
}

func fuzzPayload(f *testing.F, typ FrameType) {
	f.Fuzz(func(t *testing.T, payload []byte) {
		fr, err := DecodePayload(typ, payload)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		again, err := Encode(fr)
		if err != nil {
			t.Fatalf("decoded %s does not encode: %v", typ, err)
		}
		if !bytes.Equal(again[HeaderLen+1:], payload) {
			t.Fatalf("decode→encode differs:\n in %x\nout %x", payload, again[HeaderLen+1:])
		}
	})
}

func FuzzHello(f *testing.F)              { fuzzPayload(f, TypeHello) }
func FuzzHelloAck(f *testing.F)           { fuzzPayload(f, TypeHelloAck) }
func FuzzHeartbeatPing(f *testing.F)      { fuzzPayload(f, TypeHeartbeatPing) }
func FuzzHeartbeatPong(f *testing.F)      { fuzzPayload(f, TypeHeartbeatPong) }
func FuzzBackpressureSignal(f *testing.F) { fuzzPayload(f, TypeBackpressureSignal) }
func FuzzCapabilityDelta(f *testing.F)    { fuzzPayload(f, TypeCapabilityDelta) }
func FuzzJobAssignment(f *testing.F)      { fuzzPayload(f, TypeJobAssignment) }
func FuzzJobAck(f *testing.F)             { fuzzPayload(f, TypeJobAck) }
func FuzzJobProgress(f *testing.F)        { fuzzPayload(f, TypeJobProgress) }
func FuzzJobResult(f *testing.F)          { fuzzPayload(f, TypeJobResult) }
func FuzzJobCancel(f *testing.F)          { fuzzPayload(f, TypeJobCancel) }
func FuzzJobResultCommit(f *testing.F)    { fuzzPayload(f, TypeJobResultCommit) }
func FuzzGoodbye(f *testing.F)            { fuzzPayload(f, TypeGoodbye) }

// The 0x0101 receipt frames (SPEC-NOTES N18).
func FuzzPresenceReceiptRequest(f *testing.F) { fuzzPayload(f, TypePresenceReceiptRequest) }
func FuzzPresenceReceipt(f *testing.F)        { fuzzPayload(f, TypePresenceReceipt) }

// TestWriteFuzzSeeds regenerates the seed corpora from the frame vectors
// when run with -update-fuzz-seeds: every vector frame seeds FuzzReadFrame;
// every vector payload whose type byte is known seeds that type's fuzzer.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateFuzzSeeds {
		t.Skip("run with -update-fuzz-seeds to rewrite testdata/fuzz")
	}
	raw, err := os.ReadFile("../conformance/testdata/vectors/frame.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Name  string `json:"name"`
			Frame string `json:"frame"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	write := func(target, name string, data []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range file.Vectors {
		b, err := hex.DecodeString(v.Frame)
		if err != nil || v.Frame == "" {
			continue
		}
		write("FuzzReadFrame", v.Name, b)
		if len(b) > HeaderLen {
			if fr, err := NewFrame(FrameType(b[HeaderLen])); err == nil {
				write("Fuzz"+fr.Type().String(), v.Name, b[HeaderLen+1:])
			}
		}
	}
}
