// Package faultpoint marks the lines where a crash test kills the process.
// The marks are compiled in only with the build tag faultpoints (the crash
// test builds its server that way); in any other build Reach is an empty
// function the compiler inlines away, so the production binary carries no
// fault-point code at all.
package faultpoint
