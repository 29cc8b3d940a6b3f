//go:build cgo && linux

package dl

import "unsafe"

// CallIntInt exposes callIntInt to the external tests, which load the
// stand-in library through cfake.
func CallIntInt(fn unsafe.Pointer, x int) int { return callIntInt(fn, x) }
