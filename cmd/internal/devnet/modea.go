package devnet

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/nodetx"
)

// ModeAReport is the §8.3–§8.4 part of the network devnet's report
// (-mode-a), computed from validator 0's block log, independently of the
// executor: the certificates the chain executed, their bytes against the
// §8.4 estimate, the proven-until coverage per block, and, at every
// assignment, whether each drawn runner's presence_proven_until (as the
// earlier blocks' outcomes set it) covered the assignment height.
type ModeAReport struct {
	// Effective: the §8.4 K_HARD_MIN guard held (hard exclude in force);
	// otherwise the certificates are shadow state only.
	Effective bool   `json:"effective"`
	K         int    `json:"k"`
	THard     uint64 `json:"t_hard"`
	TTLBlocks uint64 `json:"proof_ttl_blocks"`

	Accepted   int            `json:"certificates_accepted"`
	Rejected   int            `json:"certificates_rejected"`
	Rejections map[string]int `json:"rejections,omitempty"`
	Receipts   int            `json:"receipts"`
	// TxBytes are the signed certificate transactions' bytes (envelope
	// 141 + height 8 + 188 per receipt, nodetx); BodyBytes the same
	// certificates in the devnet block body's chain-log JSON.
	TxBytes   int `json:"certificate_tx_bytes"`
	BodyBytes int `json:"certificate_body_bytes"`
	// Per block, over the blocks from the first certificate on.
	Blocks             int     `json:"blocks_measured"`
	TxBytesPerBlock    float64 `json:"certificate_tx_bytes_per_block"`
	BodyBytesPerBlock  float64 `json:"certificate_body_bytes_per_block"`
	CertsPerBlock      float64 `json:"certificates_per_block"`
	EstimateBytesBlock float64 `json:"estimate_84_bytes_per_block"` // §8.4: |R|·(t_hard·188 + envelope)/TTL
	// Proven-until coverage per block after the first accepted
	// certificate: runners with presence_proven_until ≥ h over registered.
	CoverageP50 float64 `json:"proven_coverage_p50"`
	CoverageMin float64 `json:"proven_coverage_min"`
	FirstProven uint64  `json:"first_proven_height"`
	// Seats drawn at their assignment height, and those whose runner was
	// not proven present there. Under an effective Mode A the latter must be
	// 0 (§8.3 point 3); in shadow it shows floor-eligible runners without a
	// certificate are still drawn (§8.3: never removed).
	Seats         int `json:"seats"`
	SeatsUnproven int `json:"seats_unproven"`
	// From the runners: certificates submitted (admitted to a mempool) and
	// receipts received over QUIC, verified and refused.
	RunnerCertificates int64 `json:"runner_certificates_submitted"`
	ReceiptsReceived   int64 `json:"receipts_received"`
	ReceiptsBad        int64 `json:"receipts_refused"`
}

// certEnvelope is a TxCertificate's bytes besides its receipts: the
// nodetx header (76), the height (8) and the signature (65).
const certEnvelope = 76 + 8 + 65

// modeAReport reads the block log at path (a trailing partial line, the
// block being written, is ignored) and computes the report for runners
// registered runners (the §8.4 estimate's |R|).
func modeAReport(path string, p cip11.Params, k int, effective bool, runners int) (*ModeAReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr, err := chainlog.NewReader(f)
	if err != nil {
		return nil, err
	}
	rep := &ModeAReport{Effective: effective, K: k, THard: uint64(p.THard), TTLBlocks: p.PresenceProofTTLBlocks, Rejections: map[string]int{}}
	rep.EstimateBytesBlock = float64(runners) * float64(uint64(p.THard)*nodetx.ReceiptLen+certEnvelope) / float64(p.PresenceProofTTLBlocks)
	proven := map[cip11.Address]uint64{}
	registered := 0
	var cov []float64
	first := uint64(0)
	for {
		b, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, chainlog.ErrMalformed) { // the block being appended
				break
			}
			return nil, err
		}
		h := uint64(b.Height)
		for _, a := range b.Out.Assignments {
			if uint64(a.AssignmentHeight) != h {
				continue
			}
			for _, m := range a.Committee {
				rep.Seats++
				if proven[m] < h {
					rep.SeatsUnproven++
				}
			}
		}
		for _, tx := range b.Txs {
			if c := tx.Certificate; c != nil {
				if first == 0 {
					first = h
				}
				rep.Receipts += len(c.Receipts)
				rep.TxBytes += certEnvelope + len(c.Receipts)*nodetx.ReceiptLen
				if j, err := json.Marshal(tx); err == nil {
					rep.BodyBytes += len(j)
				}
			}
		}
		for _, o := range b.Out.Certificates {
			if o.Result == blockexec.CertAccepted {
				rep.Accepted++
				proven[o.Runner] = uint64(o.ProvenUntil)
				if rep.FirstProven == 0 {
					rep.FirstProven = h + 1
				}
			} else {
				rep.Rejected++
				rep.Rejections[o.Result]++
			}
		}
		for _, op := range b.Registry {
			if op.Op == chainlog.OpRegister {
				registered++
			}
		}
		if first > 0 {
			rep.Blocks++
		}
		if rep.FirstProven > 0 && registered > 0 {
			n := 0
			for _, until := range proven {
				if until >= h+1 {
					n++
				}
			}
			cov = append(cov, float64(n)/float64(registered))
		}
	}
	if rep.Blocks > 0 {
		rep.TxBytesPerBlock = float64(rep.TxBytes) / float64(rep.Blocks)
		rep.BodyBytesPerBlock = float64(rep.BodyBytes) / float64(rep.Blocks)
		rep.CertsPerBlock = float64(rep.Accepted+rep.Rejected) / float64(rep.Blocks)
	}
	if len(cov) > 0 {
		slices.Sort(cov)
		rep.CoverageP50, rep.CoverageMin = cov[len(cov)/2], cov[0]
	}
	return rep, nil
}
