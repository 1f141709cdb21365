package cometbft

// misbehave sets (nil: clears) the App's misbehaviour (byzantine.go): the
// only way to reach the hook, from tests of this package.
func (a *App) misbehave(m *misbehavior) { a.byz.Store(m) }
