package devkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/nodetx"
	"github.com/cip11/cip11/wire"
)

// Errors of the dealer.
var (
	// ErrDealerFile: a dealer.json that does not parse, has another
	// format, an unusable admin key or epochs out of order.
	ErrDealerFile = errors.New("devkeys: invalid dealer file")
	// ErrNoEpoch: Reconfiguration of an epoch the dealer did not plan.
	ErrNoEpoch = errors.New("devkeys: no such planned epoch")
)

// DealerFormat names a dealer.json file.
const DealerFormat = "cip11-devnet-dealer"

// Dealer is a network's DEVNET dealer and admin for in-band
// reconfigurations (SPEC-NOTES C11, D31): the admin's secp256k1 secret and
// each planned epoch's set (with its planned activation) and members'
// secret shares, by pool position (home v<i>). It holds every secret of
// every later epoch: a devnet convenience, never a production scheme.
type Dealer struct {
	Format      string       `json:"format"`
	ChainID     chainlog.U64 `json:"chain_id"`
	AdminSecret cip11.Hash   `json:"admin_secp256k1_secret"`
	Epochs      []DealtEpoch `json:"epochs"`
}

// DealtEpoch is one planned epoch: its reconfiguration at the planned
// activation, and every member's share.
type DealtEpoch struct {
	Reconfigure chainlog.Reconfigure `json:"reconfigure"`
	Shares      []DealtShare         `json:"shares"`
}

// DealtShare is a member's secret share of an epoch.
type DealtShare struct {
	Home   int        `json:"home"` // pool position: the home v<Home>
	Secret cip11.Hash `json:"bls_secret_key"`
}

// LoadDealer reads a network directory's dealer.json.
func LoadDealer(path string) (*Dealer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dealer
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDealerFile, path, err)
	}
	if d.Format != DealerFormat {
		return nil, fmt.Errorf("%w: %s: format %q", ErrDealerFile, path, d.Format)
	}
	if _, err := wire.NewRunnerKey(d.AdminSecret); err != nil {
		return nil, fmt.Errorf("%w: %s: admin key: %v", ErrDealerFile, path, err)
	}
	for i, e := range d.Epochs {
		if uint64(e.Reconfigure.Epoch) != uint64(i+1) {
			return nil, fmt.Errorf("%w: %s: epochs[%d] is epoch %d", ErrDealerFile, path, i, e.Reconfigure.Epoch)
		}
	}
	return &d, nil
}

// Admin is the admin's address (a generated genesis's devnet_admin,
// node.Genesis.ReconfigAdmin).
func (d *Dealer) Admin() (cip11.Address, error) {
	k, err := wire.NewRunnerKey(d.AdminSecret)
	if err != nil {
		return cip11.Address{}, fmt.Errorf("%w: admin key: %v", ErrDealerFile, err)
	}
	return k.Address(), nil
}

// Reconfiguration is the devnet admin's in-band reconfiguration to planned
// epoch e ≥ 1 (SPEC-NOTES C11), activating at activation (0: the planned
// height): the signed TxReconfigure, and each member's share of e by pool
// position, to hand to the members before the activation.
func (d *Dealer) Reconfiguration(e int, activation uint64) (tx []byte, shares map[int][32]byte, err error) {
	if d == nil || e < 1 || e > len(d.Epochs) {
		return nil, nil, fmt.Errorf("%w: no planned in-band epoch %d", ErrNoEpoch, e)
	}
	admin, err := wire.NewRunnerKey(d.AdminSecret)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: admin key: %v", ErrDealerFile, err)
	}
	de := d.Epochs[e-1]
	r := de.Reconfigure
	if activation != 0 {
		r.Activation = chainlog.U64(activation)
	}
	payload, err := chainlog.EncodeReconfigure(&r)
	if err != nil {
		return nil, nil, err
	}
	t, err := nodetx.SignTx(admin, uint64(d.ChainID), nodetx.TxReconfigure, uint64(e), cip11.Hash{}, payload)
	if err != nil {
		return nil, nil, err
	}
	shares = map[int][32]byte{}
	for _, s := range de.Shares {
		shares[s.Home] = s.Secret
	}
	return t.Bytes(), shares, nil
}
