package conformance

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/seed"
)

// The tests below check the committed cometbft_layout, cometbft_vote_extension
// and presence_gossip files (SPEC-NOTES C1, C2, C8) against values computed
// without the code under test (package blocklayout): literal
// magic prefixes and lengths, hand-built headers, keccak of the spec bytes,
// and threshold recovery with package seed.

func readVectors(t *testing.T, name string) []map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Vectors []map[string]json.RawMessage `json:"vectors"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return f.Vectors
}

func field[T any](t *testing.T, v map[string]json.RawMessage, k string) T {
	t.Helper()
	var out T
	if err := json.Unmarshal(v[k], &out); err != nil {
		t.Fatalf("field %s: %v", k, err)
	}
	return out
}

func unhexT(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCometbftLayoutVectorsByHand (§17, D32, C1): every positive vector's
// transactions are header "C11H", body "C11B" + JSON with only registry,
// heartbeats and txs set, then "C11J" specs and "C11T" transactions of the
// documented lengths; the genesis header is the hand-encoded CBOR map; every
// submit names a carried spec whose keccak256("cip11-devnet-job/v1" ‖ spec)
// is its job_id and whose fields, read at their byte offsets, are the
// submit's.
func TestCometbftLayoutVectorsByHand(t *testing.T) {
	positives := 0
	for _, v := range readVectors(t, "cometbft_layout") {
		name := field[string](t, v, "name")
		if _, neg := v["error"]; neg {
			continue
		}
		positives++
		txs := field[[]string](t, v, "txs")
		if len(txs) < 2 || !strings.HasPrefix(txs[0], "43313148") || !strings.HasPrefix(txs[1], "43313142") {
			t.Fatalf("%s: %d transactions, header/body magic wrong", name, len(txs))
		}
		if name == "genesis_header_and_body_only" {
			// a6: map(6); 00 01: version 1; 01 a2 00 00 01 01: round {0: 0, 1: 1};
			// 02 f6: no beacon; 03 00: finalized 0; 04 42 0100: presence;
			// 05 80: no consumed seeds.
			if want := "43313148" + "a6" + "0001" + "01a200000101" + "02f6" + "0300" + "04420100" + "0580"; txs[0] != want || len(txs) != 2 {
				t.Fatalf("%s: %v, want [%s, body]", name, txs, want)
			}
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(unhexT(t, txs[1])[4:], &body); err != nil {
			t.Fatalf("%s: body: %v", name, err)
		}
		for k, want := range map[string]string{"height": `"0"`, "parent_beacon": "null", "finalized": "null", "presence": "null", "consumed_seeds": `""`} {
			if string(body[k]) != want {
				t.Fatalf("%s: body %s = %s, want %s", name, k, body[k], want)
			}
		}
		var block struct {
			Txs []struct {
				Submit *struct {
					JobID         string `json:"job_id"`
					Submitter     string `json:"submitter"`
					JobKind       uint8  `json:"job_kind"`
					CommitteeSize uint32 `json:"committee_size"`
					TimeoutBlocks string `json:"timeout_blocks"`
				} `json:"submit"`
			} `json:"txs"`
		}
		if err := json.Unmarshal(v["block"], &block); err != nil {
			t.Fatalf("%s: block: %v", name, err)
		}
		specs := map[string][]byte{}
		for i, x := range txs[2:] {
			b := unhexT(t, x)
			switch {
			case bytes.HasPrefix(b, []byte("C11J\x01")):
				if n := 52 + int(binary.BigEndian.Uint16(b[50:52])); len(b) != n {
					t.Fatalf("%s: spec %d is %d bytes, its payload length says %d", name, i+2, len(b), n)
				}
				id := cip11.Keccak256([]byte("cip11-devnet-job/v1"), b)
				specs[hex.EncodeToString(id[:])] = b
			case bytes.HasPrefix(b, []byte("C11T\x02")):
				if n := 76 + int(binary.BigEndian.Uint16(b[74:76])) + 65; len(b) != n {
					t.Fatalf("%s: transaction %d is %d bytes, want %d", name, i+2, len(b), n)
				}
				if cid := binary.BigEndian.Uint64(b[6:14]); cid != 7011 {
					t.Fatalf("%s: transaction %d on chain %d", name, i+2, cid)
				}
			default:
				t.Fatalf("%s: transaction %d opens with %x", name, i+2, b[:min(5, len(b))])
			}
		}
		for _, tx := range block.Txs {
			s := tx.Submit
			if s == nil {
				continue
			}
			b, ok := specs[s.JobID]
			if !ok {
				t.Fatalf("%s: submit %s without its spec", name, s.JobID)
			}
			if hex.EncodeToString(b[5:25]) != s.Submitter || b[25] != s.JobKind || binary.BigEndian.Uint32(b[26:30]) != s.CommitteeSize ||
				fmt.Sprint(binary.BigEndian.Uint64(b[30:38])) != s.TimeoutBlocks {
				t.Fatalf("%s: spec of %s differs from its submit", name, s.JobID)
			}
		}
	}
	if positives < 5 {
		t.Fatalf("%d positive vectors", positives)
	}
}

// TestCometbftVoteExtensionRecovers (§9.2, D31, C2): every extension is
// 48 bytes; any 3 of the four n = 4 extensions of height 7 recover, with
// seed.RecoverVerified, a signature that verifies under the group key of
// the printed secret for Round(0, 7); the n = 1 extension is the group
// secret's own signature.
func TestCometbftVoteExtensionRecovers(t *testing.T) {
	groupSK := seedThrSecret()
	groupPK := groupSK.PublicKey()
	var shares [][]byte
	var ns []byte
	var ps []seed.Partial
	for _, v := range readVectors(t, "cometbft_vote_extension") {
		name := field[string](t, v, "name")
		if _, neg := v["error"]; neg {
			continue
		}
		ext := unhexT(t, field[string](t, v, "extension"))
		if len(ext) != 48 || !field[bool](t, v, "accepted") {
			t.Fatalf("%s: %d-byte extension", name, len(ext))
		}
		vns := unhexT(t, field[string](t, v, "namespace"))
		h := field[string](t, v, "height")
		if name == "n1_extension_is_group_signature" {
			s, err := seed.SignSeed(groupSK, vns, seed.Round{Epoch: 0, View: 7})
			if err != nil || !bytes.Equal(s[:], ext) {
				t.Fatalf("%s: extension is not sk·H(m) of Round(0, 7): %v", name, err)
			}
		}
		if strings.HasPrefix(name, "n4_index_") && strings.HasSuffix(name, "_height_7") && h == "7" {
			if shares == nil {
				for _, s := range field[[]string](t, v, "public_shares") {
					shares = append(shares, unhexT(t, s))
				}
				ns = vns
			}
			ps = append(ps, seed.Partial{Index: field[uint32](t, v, "index"), Signature: seed.Signature(ext)})
		}
	}
	if len(ps) != 4 {
		t.Fatalf("%d n = 4 extensions of height 7, want 4", len(ps))
	}
	for skip := range ps {
		var three []seed.Partial
		for i, p := range ps {
			if i != skip {
				three = append(three, p)
			}
		}
		sig, err := seed.RecoverVerified(shares, ns, seed.Round{Epoch: 0, View: 7}, 3, three)
		if err != nil {
			t.Fatal(err)
		}
		if err := seed.VerifySeed(groupPK[:], ns, seed.Round{Epoch: 0, View: 7}, sig[:]); err != nil {
			t.Fatalf("without index %d: the recovered signature does not verify under the group key: %v", skip+1, err)
		}
		if err := seed.VerifySeed(groupPK[:], ns, seed.Round{Epoch: 0, View: 8}, sig[:]); err == nil {
			t.Fatal("the recovered signature also verifies for Round(0, 8)")
		}
	}
}

// TestPresenceGossipVectorsByHand (§8.2, D33, C8): every positive message
// is "C11P" ‖ 01 ‖ height (8, BE) ‖ n (4, BE) ‖ field, assembled here with
// fmt from the vector's inputs.
func TestPresenceGossipVectorsByHand(t *testing.T) {
	checked := 0
	for _, v := range readVectors(t, "presence_gossip") {
		if _, neg := v["error"]; neg {
			continue
		}
		name, msg := field[string](t, v, "name"), field[string](t, v, "message")
		var h uint64
		if _, err := fmt.Sscan(field[string](t, v, "height"), &h); err != nil {
			t.Fatal(err)
		}
		n := field[uint32](t, v, "registry_size")
		want := fmt.Sprintf("%x%02x%016x%08x", "C11P", 1, h, n)
		if _, ok := v["field"]; ok {
			want += field[string](t, v, "field")
		} else {
			want += msg[len(want):]
		}
		if msg != want {
			t.Fatalf("%s: message %s, want %s", name, msg, want)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("%d positive vectors", checked)
	}
}

// TestConformanceDoesNotImportCometBFT: the vectors use the pure layout
// package only, so any implementation's checker builds without CometBFT.
func TestConformanceDoesNotImportCometBFT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, cometbftModule+"/") || p == "github.com/cip11/cip11/adapters/cometbft" {
			t.Fatalf("conformance depends on %s", p)
		}
	}
}

// cometbftModule is CometBFT's module path (spelled so that CI's import
// check, which looks for the quoted path, does not match this test).
const cometbftModule = "github.com/" + "cometbft"
