package framing

import (
	"math"
	"syscall"
	"testing"
)

// A payload the 4-byte length cannot say is refused, and the length
// written is the largest, which any reader refuses rather than read the
// stream out of step. The 4 GiB buffer is a lazily committed mapping of
// which End touches one page.
func TestEndPayloadTooLarge(t *testing.T) {
	const size = math.MaxUint32 + HeaderSize + 1
	buf, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		t.Fatalf("mapping %d bytes: %v", size, err)
	}
	defer syscall.Munmap(buf)
	if End(buf, 0) {
		t.Fatalf("End accepted a payload of %d bytes", size-HeaderSize)
	}
	if got := string(buf[:4]); got != "\xff\xff\xff\xff" {
		t.Fatalf("length %x, want ffffffff", got)
	}
	buf[0] = 0
	if !End(buf[:math.MaxUint32+HeaderSize], 0) {
		t.Fatal("End refused a payload of exactly 4 GiB - 1")
	}
	if got := string(buf[:4]); got != "\xff\xff\xff\xff" {
		t.Fatalf("length %x, want ffffffff", got)
	}
}
