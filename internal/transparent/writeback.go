package transparent

import (
	"os"
	"path/filepath"
	"time"
)

// writeBehindEvery is how often writeBehind asks for the disk writes of
// what CRIU wrote since.
const writeBehindEvery = 50 * time.Millisecond

// startWriteback starts the writeback of f's dirty pages, false if the
// file system cannot (syncFileRange); a variable so that a test can
// count the calls writeBehind makes.
var startWriteback = syncFileRange

// writeBehind has the kernel write the images CRIU is dumping into dir
// to disk while CRIU writes them, until stop is called: the checkpoint's
// commit syncs every image (a cache that syncs its files must), and the
// dump of a GiB outruns the disk, so without it the whole GiB waits in
// the page cache for the commit's fsync, after the dump (measured in
// docs/PERFORMANCE.md). It is only a hint (startWriteback): durability
// still comes from the commit's fsync.
func writeBehind(dir string) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		open := map[string]*os.File{}
		defer func() {
			for _, f := range open {
				f.Close()
			}
		}()
		tick := time.NewTicker(writeBehindEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if !e.Type().IsRegular() {
					continue // the crash test's FIFO, say
				}
				f := open[e.Name()]
				if f == nil {
					var err error
					if f, err = os.Open(filepath.Join(dir, e.Name())); err != nil {
						continue
					}
					open[e.Name()] = f
				}
				if !startWriteback(f) {
					return // not on this file system: fsync does it all
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
