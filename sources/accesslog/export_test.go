package accesslog

// SetBorrowHooks sets the test hooks of Options.BorrowTargets (ownTargets,
// poisonDelivered) for the external tests and returns what restores them.
func SetBorrowHooks(own, poison bool) (restore func()) {
	wasOwn, wasPoison := ownTargets, poisonDelivered
	ownTargets, poisonDelivered = own, poison
	return func() { ownTargets, poisonDelivered = wasOwn, wasPoison }
}
