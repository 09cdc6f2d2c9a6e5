package bench

import (
	"errors"
	"io"
	"os"
	"time"
)

// The raw limits of the benchmarks: how fast this disk takes and gives
// back bytes without ckpt, measured the ways that are fair to compare with
// ckpt's own writers and readers.

// writePattern is how a raw writer gets its bytes to disk. Every pattern
// ends with one fsync, as a durable commit of the cache does.
type writePattern int

const (
	// writeFsync writes everything, then fsyncs once: the page cache takes
	// all the bytes before the disk starts.
	writeFsync writePattern = iota
	// writeWriteback starts the disk writes of every writebackChunk
	// written (sync_file_range), as the local backend's writer does
	// (internal/storage/local, writer.wrote): the disk works while the
	// writer writes.
	writeWriteback
	// writeDirect bypasses the page cache (O_DIRECT).
	writeDirect
)

// writebackChunk is the local backend's writebackChunk: how much a writer
// lets accumulate before it starts its writeback. A limit that starts
// writeback less often than the writer it limits is a weaker baseline.
const writebackChunk = 8 << 20

// directAlign is the alignment O_DIRECT wants of buffers, offsets and
// lengths on the file systems it is measured on.
const directAlign = 4096

// errUnsupported is a pattern or an eviction this file system or OS does
// not offer: the figure is reported as not measured.
var errUnsupported = errors.New("not supported here")

// rawWriteAs writes size bytes of buf, repeated, into a new file at path
// with pattern p and returns the bytes per second, fsync included. With
// writeDirect only whole directAlign pieces are written and counted.
func rawWriteAs(path string, size int64, buf []byte, p writePattern) (float64, error) {
	if p == writeDirect {
		return rawWriteDirect(path, size, buf)
	}
	start := time.Now()
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	var flushed int64
	for n := int64(0); n < size; n += block {
		if _, err := f.Write(buf[:min(block, size-n)]); err != nil {
			f.Close()
			return 0, err
		}
		if written := min(n+block, size); p == writeWriteback && written-flushed >= writebackChunk {
			if err := startWriteback(f, flushed, written-flushed); err != nil {
				f.Close()
				return 0, err
			}
			flushed = written
		}
	}
	return syncedRate(f, size, start)
}

func rawWriteDirect(path string, size int64, buf []byte) (float64, error) {
	// O_DIRECT reads from memory aligned to the device's blocks.
	mem := make([]byte, len(buf)+directAlign)
	off := 0
	if r := int(uintptrOf(mem) % directAlign); r != 0 {
		off = directAlign - r
	}
	b := mem[off : off+len(buf)]
	copy(b, buf)
	size -= size % directAlign
	start := time.Now()
	f, err := openDirect(path)
	if err != nil {
		return 0, err
	}
	for n := int64(0); n < size; n += int64(len(b)) {
		if _, err := f.Write(b[:min(int64(len(b)), size-n)]); err != nil {
			f.Close()
			return 0, err
		}
	}
	return syncedRate(f, size, start)
}

// syncedRate fsyncs and closes f, of size bytes written since start, and
// returns its bytes per second.
func syncedRate(f *os.File, size int64, start time.Time) (float64, error) {
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return float64(size) / time.Since(start).Seconds(), nil
}

// rawWrite is the plain raw write: everything, then one fsync.
func rawWrite(path string, size int64, buf []byte) (float64, error) {
	return rawWriteAs(path, size, buf, writeFsync)
}

// rawRead reads the file at path once and returns the bytes per second.
func rawRead(path string) (float64, error) {
	start := time.Now()
	n, err := readFile(path, make([]byte, block))
	if err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// readFile reads the file at path to its end with b and returns the bytes
// read.
func readFile(path string, b []byte) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return readAll(f, b)
}

// readAll reads r to its end into b, over and over, and returns the bytes
// read. (io.Copy to io.Discard would read in 8 KiB pieces.)
func readAll(r io.Reader, b []byte) (int64, error) {
	var n int64
	for {
		m, err := r.Read(b)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// dropCachesFile is where the kernel takes "drop the page cache" from;
// a variable so that a test can make it unavailable.
var dropCachesFile = "/proc/sys/vm/drop_caches"

// Cold-cache methods, as `ckpt bench store` reports them.
const (
	coldDropCaches = "drop_caches" // the whole page cache dropped (root)
	coldFadvise    = "fadvise"     // each file's pages dropped (POSIX_FADV_DONTNEED)
	coldNone       = "none"        // no way to empty the cache: cold not measured
)

// evict empties the page cache of the files below dir so that their next
// read comes from the disk: by dropping the whole page cache where that is
// permitted (after sync, so that every page is clean), else by dropping
// each file's pages. It then checks that the file at probe is no longer
// resident (tmpfs, for one, has no disk to read from again) and returns
// the method that worked, or coldNone with the reason.
func evict(dir, probe string) (string, error) {
	method := coldDropCaches
	if err := dropCaches(); err != nil {
		method = coldFadvise
		if err := fadviseTree(dir); err != nil {
			return coldNone, err
		}
	}
	frac, err := residentFraction(probe)
	if err != nil {
		return coldNone, err
	}
	if frac > 0.05 {
		return coldNone, errors.New("the page cache kept the files after " + method)
	}
	return method, nil
}

func dropCaches() error {
	syncAll()
	return os.WriteFile(dropCachesFile, []byte("3\n"), 0)
}
