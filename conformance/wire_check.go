package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

type checkVector struct {
	Name     string          `json:"name"`
	Check    string          `json:"check"`
	Context  json.RawMessage `json:"context"`
	Frame    string          `json:"frame,omitempty"`
	OK       *bool           `json:"ok,omitempty"`
	Status   *wire.AckStatus `json:"status,omitempty"`
	Advisory *bool           `json:"advisory,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// checkContext carries whichever connection context a check needs.
type checkContext struct {
	Conn *connFields `json:"conn,omitempty"`
	// version
	Ours              *uint16 `json:"ours,omitempty"`
	Peer              *uint16 `json:"peer,omitempty"`
	AcceptHigherMinor bool    `json:"accept_higher_minor,omitempty"`
	// hello, hello_ack
	Local          *localFields `json:"local,omitempty"`
	OurHello       string       `json:"our_hello,omitempty"`
	PeerHello      string       `json:"peer_hello,omitempty"`
	ChannelBinding *cip11.Hash  `json:"channel_binding,omitempty"`
	// ping, pong
	First       *bool   `json:"first,omitempty"`
	Last        *uint64 `json:"last,omitempty,string"`
	Outstanding *uint64 `json:"outstanding,omitempty,string"`
	// assignment
	Snapshot       []cip11.Hash `json:"snapshot,omitempty"`
	Finalized      *uint64      `json:"finalized,omitempty,string"`
	JobSpecDecodes *bool        `json:"job_spec_decodes,omitempty"`
	Accepted       string       `json:"accepted,omitempty"`
	// ack (sent), cancel (in flight): job_id → assignment_hash
	Assignments map[string]cip11.Hash `json:"assignments,omitempty"`
	// result
	Runner *cip11.Address `json:"runner,omitempty"`
	// goodbye
	Sender *wire.Role `json:"sender,omitempty"`
	// presence_receipt: the executing chain's id and the receipt
	ChainID *uint64               `json:"chain_id,omitempty,string"`
	Receipt *wire.PresenceReceipt `json:"receipt,omitempty"`
}

type localFields struct {
	Role              wire.Role        `json:"role"`
	ChainID           uint64           `json:"chain_id,string"`
	Version           uint16           `json:"version"`
	AcceptHigherMinor bool             `json:"accept_higher_minor"`
	Epochs            []wire.EpochPair `json:"epochs"`
	Admitted          []wire.PubKey    `json:"admitted"` // null admits every peer
}

func (l *localFields) local() *wire.Local {
	w := &wire.Local{Role: l.Role, ChainID: l.ChainID, Version: l.Version, AcceptHigherMinor: l.AcceptHigherMinor, Epochs: l.Epochs}
	if l.Admitted != nil {
		w.Admits = func(_ wire.EpochPair, peer wire.PubKey) bool {
			for _, k := range l.Admitted {
				if k == peer {
					return true
				}
			}
			return false
		}
	}
	return w
}

func decodeFrameHex(s string) (wire.Frame, error) {
	b, err := Unhex(s)
	if err != nil {
		return nil, err
	}
	return wire.Decode(b, cip11.DefaultParams().MaxFrameBytes)
}

func frameAs[T wire.Frame](s string) (T, error) {
	var zero T
	f, err := decodeFrameHex(s)
	if err != nil {
		return zero, err
	}
	t, ok := f.(T)
	if !ok {
		return zero, fmt.Errorf("%w: frame is a %s", ErrMalformedVector, f.Type())
	}
	return t, nil
}

func need[T any](p *T, what string) (T, error) {
	if p == nil {
		var zero T
		return zero, fmt.Errorf("%w: context lacks %s", ErrMalformedVector, what)
	}
	return *p, nil
}

func evalCheckVector(raw json.RawMessage) (map[string]any, error) {
	var v checkVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	var c checkContext
	if err := DecodeVector(v.Context, &c); err != nil {
		return nil, err
	}
	return runCheck(v.Check, &c, v.Frame)
}

func runCheck(check string, c *checkContext, frame string) (map[string]any, error) {
	ok := map[string]any{"ok": true}
	session := func() (*wire.Session, error) {
		cf, err := need(c.Conn, "conn")
		if err != nil {
			return nil, err
		}
		return cf.session()
	}
	switch check {
	case "version":
		ours, err := need(c.Ours, "ours")
		if err != nil {
			return nil, err
		}
		peer, err := need(c.Peer, "peer")
		if err != nil {
			return nil, err
		}
		return ok, wire.CheckVersion(ours, peer, c.AcceptHigherMinor)
	case "hello":
		l, err := need(c.Local, "local")
		if err != nil {
			return nil, err
		}
		h, err := frameAs[*wire.Hello](frame)
		if err != nil {
			return nil, err
		}
		_, err = wire.CheckHello(l.local(), h)
		return ok, err
	case "hello_ack":
		l, err := need(c.Local, "local")
		if err != nil {
			return nil, err
		}
		cb, err := need(c.ChannelBinding, "channel_binding")
		if err != nil {
			return nil, err
		}
		ours, err := frameAs[*wire.Hello](c.OurHello)
		if err != nil {
			return nil, err
		}
		peers, err := frameAs[*wire.Hello](c.PeerHello)
		if err != nil {
			return nil, err
		}
		ack, err := frameAs[*wire.HelloAck](frame)
		if err != nil {
			return nil, err
		}
		return ok, wire.CheckHelloAck(l.local(), ours, peers, ack, cb)
	case "ping":
		s, err := session()
		if err != nil {
			return nil, err
		}
		p, err := frameAs[*wire.HeartbeatPing](frame)
		if err != nil {
			return nil, err
		}
		first, last := c.First != nil && *c.First, uint64(0)
		if c.Last != nil {
			last = *c.Last
		}
		if err := wire.CheckPingNonce(last, first, p.Nonce); err != nil {
			return nil, err
		}
		return ok, p.Verify(s)
	case "pong":
		s, err := session()
		if err != nil {
			return nil, err
		}
		out, err := need(c.Outstanding, "outstanding")
		if err != nil {
			return nil, err
		}
		p, err := frameAs[*wire.HeartbeatPong](frame)
		if err != nil {
			return nil, err
		}
		return ok, wire.CheckPong(s, out, p)
	case "verify":
		s, err := session()
		if err != nil {
			return nil, err
		}
		f, err := decodeFrameHex(frame)
		if err != nil {
			return nil, err
		}
		switch f := f.(type) {
		case *wire.BackpressureSignal:
			return ok, f.Verify(s)
		case *wire.CapabilityDelta:
			return ok, f.Verify(s)
		}
		return nil, fmt.Errorf("%w: verify takes control-v1 frames", ErrMalformedVector)
	case "assignment":
		return evalAssignment(c, frame, session)
	case "ack", "cancel":
		s, err := session()
		if err != nil {
			return nil, err
		}
		lookup := func(id cip11.Hash) (cip11.Hash, bool) { h, ok := c.Assignments[id.String()]; return h, ok }
		if check == "ack" {
			a, err := frameAs[*wire.JobAck](frame)
			if err != nil {
				return nil, err
			}
			return ok, wire.CheckAck(s, a, lookup)
		}
		x, err := frameAs[*wire.JobCancel](frame)
		if err != nil {
			return nil, err
		}
		return ok, wire.CheckCancel(s, x, lookup)
	case "result":
		runner, err := need(c.Runner, "runner")
		if err != nil {
			return nil, err
		}
		f, err := decodeFrameHex(frame)
		if err != nil {
			return nil, err
		}
		_, err = wire.CheckResult(f, runner, wire.MemTxCodec{}, wire.MemTxCodec{})
		return ok, err
	case "presence_receipt":
		chain, err := need(c.ChainID, "chain_id")
		if err != nil {
			return nil, err
		}
		r, err := need(c.Receipt, "receipt")
		if err != nil {
			return nil, err
		}
		return ok, r.Verify(chain)
	case "goodbye":
		sender, err := need(c.Sender, "sender")
		if err != nil {
			return nil, err
		}
		var s *wire.Session
		if c.Conn != nil {
			if s, err = session(); err != nil {
				return nil, err
			}
		}
		g, err := frameAs[*wire.Goodbye](frame)
		if err != nil {
			return nil, err
		}
		advisory, err := wire.CheckGoodbye(s, sender, g)
		return map[string]any{"advisory": advisory}, err
	}
	return nil, fmt.Errorf("%w: unknown check %q", ErrMalformedVector, check)
}

func evalAssignment(c *checkContext, frame string, session func() (*wire.Session, error)) (map[string]any, error) {
	s, err := session()
	if err != nil {
		return nil, err
	}
	fin, err := need(c.Finalized, "finalized")
	if err != nil {
		return nil, err
	}
	a, err := frameAs[*wire.JobAssignment](frame)
	if err != nil {
		return nil, err
	}
	ctx := &wire.AssignmentContext{Session: s, Finalized: fin,
		InSnapshot: func(raw [32]byte) bool {
			for _, k := range c.Snapshot {
				if k == raw {
					return true
				}
			}
			return false
		},
		Specs: wire.JobSpecDecoderFunc(func([]byte) error {
			if c.JobSpecDecodes != nil && !*c.JobSpecDecodes {
				return fmt.Errorf("reference decoder told to refuse")
			}
			return nil
		}),
	}
	if c.Accepted != "" {
		if ctx.Accepted, err = frameAs[*wire.JobAssignment](c.Accepted); err != nil {
			return nil, err
		}
	}
	st, err := wire.CheckAssignment(ctx, a)
	if err != nil {
		return nil, err
	}
	return map[string]any{"status": st}, nil
}
