package cometbft

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cip11/cip11/replay"
)

// TestModeAShadowOnNetwork is §8.3 on a live 4-validator network with
// PRESENCE_HARD_EXCLUDE_ENABLED: the §8.4 guard is false (k = 3 < 20), so
// certificates are shadow state. Runners collect PresenceReceipts over QUIC
// (0x0101 links, SPEC-NOTES N18) and submit certificates the chain
// accepts; the 4 runners that never certify are still drawn (seats without
// a current proof > 0: absence of a certificate removes no floor-eligible
// runner); nothing is lost, every validator agrees, and validator 0's block
// log, certificates included, replays.
func TestModeAShadowOnNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-validator network")
	}
	dir := t.TempDir()
	rep, err := RunDevnet(context.Background(), DevnetConfig{Validators: 4, Runners: 12, Uncertified: 4, ModeA: true,
		Duration: 5 * time.Second, NoSync: true, Seed: 21, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ma := rep.ModeA
	if ma == nil {
		t.Fatal("no Mode-A report")
	}
	t.Logf("mode A: effective %v k %d t_hard %d; %d accepted %d rejected %v; receipts %d; tx bytes/block %.0f (estimate %.0f); coverage p50 %.3f; seats %d, unproven %d; runner certs %d, receipts received %d refused %d",
		ma.Effective, ma.K, ma.THard, ma.Accepted, ma.Rejected, ma.Rejections, ma.Receipts, ma.TxBytesPerBlock, ma.EstimateBytesBlock,
		ma.CoverageP50, ma.Seats, ma.SeatsUnproven, ma.RunnerCertificates, ma.ReceiptsReceived, ma.ReceiptsBad)
	switch {
	case rep.Lost != 0 || !rep.AppHashesAgree:
		t.Fatalf("lost %d, app hashes agree %v", rep.Lost, rep.AppHashesAgree)
	case ma.Effective || ma.K != 3 || ma.THard != 2:
		t.Fatalf("effective %v, k %d, t_hard %d: want shadow, 3, 2", ma.Effective, ma.K, ma.THard)
	case ma.Accepted < 8:
		t.Fatalf("%d certificates accepted, want one at least from each of the 8 certifying runners", ma.Accepted)
	case ma.ReceiptsBad != 0:
		t.Fatalf("%d receipts refused by runners", ma.ReceiptsBad)
	case ma.SeatsUnproven == 0 || ma.SeatsUnproven == ma.Seats:
		t.Fatalf("%d of %d seats without a current proof: want the uncertified runners drawn, and the certified too", ma.SeatsUnproven, ma.Seats)
	case ma.CoverageP50 > 0.7:
		t.Fatalf("proven coverage p50 %.3f with 4 of 12 runners uncertified", ma.CoverageP50)
	}
	f, err := os.Open(filepath.Join(dir, "v0", "node", "blocks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := replay.Run(f, replay.Config{})
	if err != nil {
		t.Fatalf("validator 0's block log with certificates does not replay: %v", err)
	}
	t.Logf("replayed %s blocks", strconv.FormatUint(uint64(sum.Blocks), 10))
}
