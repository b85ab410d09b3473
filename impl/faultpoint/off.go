//go:build !faultpoints

package faultpoint

// Enabled says this build carries the fault points: without the tag it
// does not, and a caller that must build its name at run time guards the
// call with it, so that not even the name is computed.
const Enabled = false

// Reach does nothing: the call and its constant argument compile away.
func Reach(string) {}

// Arm refuses: a build without the tag has no fault point to arm, and a
// test that arms one would otherwise pass without ever crashing.
func Arm(func(name string)) { panic("faultpoint: built without -tags faultpoints") }
