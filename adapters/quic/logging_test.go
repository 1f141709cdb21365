package quic

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// recorder is a slog.Handler keeping every record (all levels).
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the records with msg, each as its level and attributes.
func (r *recorder) find(msg string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, rec := range r.recs {
		if rec.Message != msg {
			continue
		}
		m := map[string]string{"level": rec.Level.String()}
		rec.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.String()
			return true
		})
		out = append(out, m)
	}
	return out
}

// Issue 18 #12 (§12.5, §10.6): the validator logs an admission at Info,
// a refusal at Info with its §12.5 reason, once per source however often
// it is refused, and a push outcome other than Success at Debug.
func TestServerLogging(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	rec := &recorder{}
	s := f.startServer(0, func(c *ServerConfig) { c.Logger = slog.New(rec) })
	tr := rawTransport(t)
	for range 2 {
		r := rawDial(t, tr, s, rk)
		h := helloFor(rk, f.snap.Pair())
		h.ChainID++
		if g, err := r.sendHello(h); err != nil || isGoodbye(g, wire.GoodbyeWrongChain) != nil {
			t.Fatalf("wrong chain: %v %+v", err, g)
		}
	}
	r := rawDial(t, tr, s, rk)
	r.handshake(f.snap.Pair())
	id, spec := testJob("logged")
	if err := s.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	fs, a := r.acceptJob()
	r.ack(fs, a, wire.Reject(wire.RejectAtCapacity))
	if o := f.waitOutcome(id); o.Outcome != local.SoftFailure {
		t.Fatalf("outcome %v", o.Outcome)
	}
	refused := rec.find("quic: runner refused")
	if len(refused) != 1 || refused[0]["level"] != "INFO" || refused[0]["reason"] != "WrongChain" {
		t.Fatalf("refusal records %v, want one Info WrongChain", refused)
	}
	if adm := rec.find("quic: runner admitted"); len(adm) != 1 || adm[0]["level"] != "INFO" {
		t.Fatalf("admission records %v", adm)
	}
	out := rec.find("quic: push outcome")
	if len(out) != 1 || out[0]["level"] != "DEBUG" || out[0]["outcome"] != "soft_failure" {
		t.Fatalf("outcome records %v, want one Debug soft_failure", out)
	}
}

// Issue 18 #12: a runner logs its refusals at Warn with the §12.5 reason,
// once per validator however often it retries and is refused.
func TestClientLogging(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	f.register(rk, state.Deregistered)
	s := f.startServer(0, nil)
	rec := &recorder{}
	c := f.startClient(rk, nil, func(c *ClientConfig) { c.Logger = slog.New(rec) })
	// A third dial comes after the second refusal was read.
	eventually(t, "refused twice, dialing again", func() bool { return s.Stats().Refused >= 2 && c.Stats().Dials >= 3 })
	got := rec.find("quic: refused by validator")
	if len(got) != 1 || got[0]["level"] != "WARN" || got[0]["reason"] != "AuthFailed" || got[0]["verified"] != "true" {
		t.Fatalf("refusal records %v, want one verified Warn AuthFailed", got)
	}
}
