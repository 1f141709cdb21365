package blockexec

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/cip11/cip11/chainlog"
)

// ErrDivergence marks a block whose recomputed outputs differ from the log.
var ErrDivergence = errors.New("blockexec: divergence")

// Divergence names the block and the first differing output field.
type Divergence struct {
	Height    uint64
	Field     string
	Want, Got string
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("block %d: %s: want %s got %s", d.Height, d.Field, d.Want, d.Got)
}

// Unwrap makes a Divergence match [ErrDivergence].
func (d *Divergence) Unwrap() error { return ErrDivergence }

// DiffOutput returns nil if got equals want, else the first differing
// field in the log's field order (slice elements before slice lengths).
func DiffOutput(h uint64, want, got *chainlog.Output) *Divergence {
	if reflect.DeepEqual(want, got) {
		return nil
	}
	if d := diffValue("", reflect.ValueOf(*want), reflect.ValueOf(*got)); d != nil {
		d.Height = h
		return d
	}
	return nil
}

func diffValue(path string, w, g reflect.Value) *Divergence {
	if m, ok := w.Interface().(encoding.TextMarshaler); ok {
		ws, _ := m.MarshalText()
		gs, _ := g.Interface().(encoding.TextMarshaler).MarshalText()
		if !bytes.Equal(ws, gs) {
			return &Divergence{Field: path, Want: string(ws), Got: string(gs)}
		}
		return nil
	}
	switch w.Kind() {
	case reflect.Struct:
		for i := range w.NumField() {
			name, _, _ := strings.Cut(w.Type().Field(i).Tag.Get("json"), ",")
			if d := diffValue(joinPath(path, name), w.Field(i), g.Field(i)); d != nil {
				return d
			}
		}
	case reflect.Slice:
		for i := 0; i < w.Len() && i < g.Len(); i++ {
			if d := diffValue(fmt.Sprintf("%s[%d]", path, i), w.Index(i), g.Index(i)); d != nil {
				return d
			}
		}
		if w.Len() != g.Len() {
			return &Divergence{Field: path + " length", Want: fmt.Sprint(w.Len()), Got: fmt.Sprint(g.Len())}
		}
	default:
		if !reflect.DeepEqual(w.Interface(), g.Interface()) {
			return &Divergence{Field: path, Want: fmt.Sprint(w.Interface()), Got: fmt.Sprint(g.Interface())}
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
