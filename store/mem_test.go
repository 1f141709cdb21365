package store_test

import (
	"testing"

	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/store/storetest"
)

// TestMem runs the contract suite against the in-memory store, which has
// no persistence (reopen is nil).
func TestMem(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) (store.Store, func() store.Store) {
		return store.NewMem(), nil
	})
}
