package quic

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
)

// ALPN is the D27 application protocol.
const ALPN = "cip11/1"

// ExporterLabel is the §6.2 channel-binding exporter label.
const ExporterLabel = "cowboy-cip11-handshake-v1"

// selfSignedCert makes the validator's throwaway TLS certificate. §6.2: the
// certificate key is not the CIP-11 identity, so it is fresh per Server and
// nobody verifies it.
func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "cip11 validator"},
		NotBefore:    time.Unix(0, 0),
		NotAfter:     time.Unix(1<<33, 0),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func serverTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{ALPN},
		MinVersion:   tls.VersionTLS13,
	}
}

func clientTLS() *tls.Config {
	return &tls.Config{
		// D27: neither side verifies certificates; identity is proven by
		// HelloAck over the channel binding (§6.2).
		InsecureSkipVerify: true, //nolint:gosec // see D27
		NextProtos:         []string{ALPN},
		MinVersion:         tls.VersionTLS13,
		ServerName:         "cip11",
	}
}

// ChannelBinding is §6.2 `TLS-Exporter("cowboy-cip11-handshake-v1", "", 32)`
// of the connection (RFC 8446 §7.5; Go's exporter treats an empty context
// as the zero-length context_value). It also insists on TLS 1.3 and ALPN
// cip11/1.
func ChannelBinding(c *qgo.Conn) (cip11.Hash, error) {
	st := c.ConnectionState().TLS
	if st.Version != tls.VersionTLS13 {
		return cip11.Hash{}, fmt.Errorf("%w: TLS version %#x", ErrChannelBinding, st.Version)
	}
	if st.NegotiatedProtocol != ALPN {
		return cip11.Hash{}, fmt.Errorf("%w: got %q", ErrALPN, st.NegotiatedProtocol)
	}
	b, err := st.ExportKeyingMaterial(ExporterLabel, nil, 32)
	if err != nil || len(b) != 32 {
		return cip11.Hash{}, fmt.Errorf("%w: %v", ErrChannelBinding, err)
	}
	return cip11.Hash(b), nil
}
