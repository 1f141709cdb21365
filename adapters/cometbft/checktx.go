package cometbft

import "strings"

// checkTxErr is the error of a CheckTx answer (errOf) whose log is the
// app's own error text (App.CheckTx: Log is err.Error()). That text
// already begins with the sentinel's text errOf wraps it in ("node: bad
// request: the job asks for …"); the leading copy is dropped so the
// prefix is said once, not "node: bad request: node: bad request: …".
func checkTxErr(code uint32, log string) error {
	e := errOf(code, "")
	if e == nil {
		return nil
	}
	prefix := e.Error() // "<sentinel>: "
	for strings.HasPrefix(log, prefix) {
		log = strings.TrimPrefix(log, prefix)
	}
	return errOf(code, log)
}
