//go:build !linux

package bench

import (
	"os"
	"unsafe"
)

// Elsewhere the raw limits are the plain write and the hot read: the
// writeback pattern, O_DIRECT and eviction are Linux's.

func startWriteback(*os.File, int64, int64) error { return errUnsupported }
func openDirect(string) (*os.File, error)         { return nil, errUnsupported }
func uintptrOf(b []byte) uintptr                  { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
func syncAll()                                    {}
func fadviseTree(string) error                    { return errUnsupported }
func residentFraction(string) (float64, error)    { return 0, errUnsupported }
func freeRoom(string) (int64, error)              { return 0, errUnsupported }
