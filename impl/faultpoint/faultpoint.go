// Package faultpoint marks the lines where a crash test kills the process.
// A production binary never arms one: only a test binary calls Arm (the
// crash test's server process, which is the test binary re-executed), so in
// production Reach is a load of a nil pointer.
package faultpoint

import "sync/atomic"

var hook atomic.Pointer[func(name string)]

// Reach calls the armed hook with the fault point's name.
func Reach(name string) {
	if h := hook.Load(); h != nil {
		(*h)(name)
	}
}

// Arm makes Reach call f; tests only.
func Arm(f func(name string)) { hook.Store(&f) }
