// Package faultpoint lets a crash test kill the process at a named line.
// With VM_FAULTPOINT=<name> in the environment, the process sends itself
// SIGKILL when it reaches Reach(<name>): nothing after that line runs, no
// deferred function, no compensation, exactly as after `kill -9`. Without
// the variable, Reach is a comparison against the empty string.
package faultpoint

import (
	"fmt"
	"os"
	"syscall"
)

// Variable names the fault point to die at.
const Variable = "VM_FAULTPOINT"

var armed = os.Getenv(Variable)

// Reach kills the process when name is the armed fault point.
func Reach(name string) {
	if armed == "" || armed != name {
		return
	}
	fmt.Fprintf(os.Stderr, "faultpoint %s reached: killing the process\n", name)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
