//go:build faultpoints

package faultpoint

import "sync/atomic"

// Enabled says this build carries the fault points.
const Enabled = true

var hook atomic.Pointer[func(name string)]

// Reach calls the armed hook with the fault point's name.
func Reach(name string) {
	if h := hook.Load(); h != nil {
		(*h)(name)
	}
}

// Arm makes Reach call f; tests only.
func Arm(f func(name string)) { hook.Store(&f) }
