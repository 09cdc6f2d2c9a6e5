package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/units"
)

// The scenario's physical floor (issue 17): the time this disk, or tmpfs,
// takes to write the bytes the scenario's checkpoint writes, its ranks'
// data and their XOR parity, with the same durability (each file fsync'd),
// measured in the same run. A checkpoint cannot beat it without writing
// fewer bytes.

// scenarioMembers is the scenario's ranks, one per node, and its XOR set:
// xor:4 over 4 nodes.
const scenarioMembers = 4

// scenarioSetSize is the XOR set of a scenario of ranks ranks, one per
// node: sets of scenarioMembers nodes, as in the scenario of 4 (a scenario
// of fewer ranks is one set of them all), so that each rank's parity is
// the same share of its data at every rank count.
func scenarioSetSize(ranks int) int { return min(ranks, scenarioMembers) }

// DefaultShmDir is where `ckpt bench store` puts the scenario's caches on
// tmpfs.
const DefaultShmDir = "/dev/shm"

// FloorBytes is what each of members ranks of rankBytes writes for a
// checkpoint protected by XOR over the members (xor:members): its data and
// one parity shard, a chunk of ceil(rankBytes / (members−1)) bytes
// (redundancy.Layout.ParitySize). The whole scenario writes members ×
// (data + parity).
func FloorBytes(rankBytes int64, members int) (data, parity int64, err error) {
	s, err := redundancy.XOR(members)
	if err != nil {
		return 0, 0, err
	}
	l, err := s.Layout()
	if err != nil {
		return 0, 0, err
	}
	return rankBytes, l.ParitySize(rankBytes), nil
}

// bestRawWrite is the write limit: the fastest of the raw patterns the run
// measured (bytes/s). A pattern this file system refused is NaN and does
// not count; with none measured the limit is NaN.
func bestRawWrite(patterns ...float64) float64 {
	best := math.NaN()
	for _, v := range patterns {
		if !math.IsNaN(v) && (math.IsNaN(best) || v > best) {
			best = v
		}
	}
	return best
}

// patternName is a write pattern as the reports name it.
func patternName(p writePattern) string {
	return [...]string{"fsync", "writeback", "O_DIRECT"}[p]
}

// floorFile is one file each writer of a floor writes: name, then the
// writer's number, and its size.
type floorFile struct {
	name string
	size int64
}

// scenarioFloor writes, with pattern p, what the scenario's checkpoint
// writes: members writers at once, each a data file of rankBytes and a
// parity file of its parity shard, each fsync'd, into dir (which it leaves
// for the caller to remove). It returns the seconds the whole took. (With
// O_DIRECT each file ends at its last whole 4 KiB: at most 32 KiB fewer
// over the 8 files, nothing against the megabytes measured.)
func scenarioFloor(dir string, rankBytes int64, buf []byte, p writePattern) (float64, error) {
	data, parity, err := FloorBytes(rankBytes, scenarioMembers)
	if err != nil {
		return 0, err
	}
	return writersFloor(dir, scenarioMembers, []floorFile{{"data", data}, {"parity", parity}}, buf, p)
}

// writersFloor writes, with pattern p, writers files of each kind in
// files at once (writer r writes name+r of every kind, one after the
// other), each fsync'd, into dir, which it leaves for the caller to remove.
// It returns the seconds the whole took.
func writersFloor(dir string, writers int, files []floorFile, buf []byte, p writePattern) (float64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	syscall.Sync()
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for r := range writers {
		wg.Go(func() { errs[r] = writeFloorFiles(dir, r, files, buf, p) })
	}
	wg.Wait()
	d := time.Since(start).Seconds()
	return d, errors.Join(errs...)
}

// writeFloorFiles writes writer r's files of a floor into dir.
func writeFloorFiles(dir string, r int, files []floorFile, buf []byte, p writePattern) error {
	for _, f := range files {
		if _, err := rawWriteAs(filepath.Join(dir, fmt.Sprintf("%s%d", f.name, r)), f.size, buf, p); err != nil {
			return err
		}
	}
	return nil
}

// allPatterns are the raw write patterns a floor tries, in the order it
// tries them.
var allPatterns = []writePattern{writeFsync, writeWriteback, writeDirect}

// floorPatterns measures the floor once with each write pattern and
// returns the shortest time and its pattern: the floor is the best this
// file system does. A pattern it refuses (O_DIRECT on tmpfs) is left out;
// the plain one must work.
func floorPatterns(dir string, rankBytes int64, buf []byte) (float64, string, error) {
	reset := func() { os.RemoveAll(dir) }
	defer reset()
	return bestPattern("scenario floor", allPatterns, reset, func(p writePattern) (float64, error) {
		return scenarioFloor(dir, rankBytes, buf, p)
	})
}

// bestPattern runs write once with each of patterns, in order, calling
// reset before each but the first, and returns the shortest time and its
// pattern's name. A pattern the file system refuses is left out; the
// plain one (writeFsync) must work. what names the floor in errors.
func bestPattern(what string, patterns []writePattern, reset func(), write func(writePattern) (float64, error)) (float64, string, error) {
	best, name := math.Inf(1), ""
	for i, p := range patterns {
		if i > 0 {
			reset()
		}
		d, err := write(p)
		if errors.Is(err, errUnsupported) && p != writeFsync {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("%s (%s): %w", what, patternName(p), err)
		}
		if d < best {
			best, name = d, patternName(p)
		}
	}
	return best, name, nil
}

// scalingLost is the rank whose node the scenario loses (node1).
const scalingLost = 1

// floorOrder is the order checkpointRestartFloors tries the write
// patterns in: O_DIRECT first, so that the files the last pattern leaves
// for the restart's floor are in the page cache, as the scenario's restart
// finds its own.
var floorOrder = []writePattern{writeDirect, writeFsync, writeWriteback}

// checkpointRestartFloors measures, in dir (removed at the end), the
// checkpoint's floor (ranks writers each writing its data and parity
// file, fsync'd) with each pattern, and then, on the files the last one
// left, the restart's floor with each pattern: the ranks but scalingLost
// reading their data and parity raw while scalingLost writes its own
// again, fsync'd. It returns each floor's shortest time and its pattern.
func checkpointRestartFloors(dir string, ranks int, data, parity int64, buf []byte) (ck float64, ckName string, rs float64, rsName string, err error) {
	defer os.RemoveAll(dir)
	files := []floorFile{{"data", data}, {"parity", parity}}
	ck, ckName, err = bestPattern("checkpoint floor", floorOrder, func() { os.RemoveAll(dir) }, func(p writePattern) (float64, error) {
		return writersFloor(dir, ranks, files, buf, p)
	})
	if err != nil {
		return
	}
	removeLost := func() {
		for _, f := range files {
			os.Remove(filepath.Join(dir, fmt.Sprintf("%s%d", f.name, scalingLost)))
		}
	}
	rs, rsName, err = bestPattern("restart floor", allPatterns, removeLost, func(p writePattern) (float64, error) {
		removeLost()
		return restartFloor(dir, ranks, files, buf, p)
	})
	return
}

// restartFloor times, in dir holding every rank's files but scalingLost's,
// the other ranks reading theirs raw while scalingLost writes its own
// with pattern p, each fsync'd; it returns the seconds until the last
// finished.
func restartFloor(dir string, ranks int, files []floorFile, buf []byte, p writePattern) (float64, error) {
	syncAll()
	errs := make([]error, ranks)
	var wg sync.WaitGroup
	start := time.Now()
	for r := range ranks {
		wg.Go(func() {
			if r == scalingLost {
				errs[r] = writeFloorFiles(dir, r, files, buf, p)
				return
			}
			b := make([]byte, block)
			for _, f := range files {
				if _, errs[r] = readFile(filepath.Join(dir, fmt.Sprintf("%s%d", f.name, r)), b); errs[r] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start).Seconds()
	return d, errors.Join(errs...)
}

// shmNeed is the room the scenario on tmpfs takes at once: the caches of
// one checkpoint (data, parity, manifests) or the floor's files, with a
// margin for the manifests and the file system's own blocks.
func shmNeed(rankBytes int64) int64 {
	data, parity, err := FloorBytes(rankBytes, scenarioMembers)
	if err != nil {
		panic(err) // scenarioMembers is a valid XOR set
	}
	total := scenarioMembers * (data + parity)
	return total + total/10 + 8<<20
}

// shmVerdict says why the tmpfs scenario cannot run in a directory with
// free bytes of room (the smaller of the file system's free space and the
// memory available to fill it), or "" when it can. statErr is what
// looking at the directory returned.
func shmVerdict(dir string, free, need int64, statErr error) string {
	switch {
	case errors.Is(statErr, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist: the scenario on tmpfs was not measured", dir)
	case statErr != nil:
		return fmt.Sprintf("%s: %v: the scenario on tmpfs was not measured", dir, statErr)
	case free < need:
		return fmt.Sprintf("%s has %s free, the scenario on tmpfs needs %s: not measured (try a smaller --scenario-size)",
			dir, units.FormatSize(float64(free)), units.FormatSize(float64(need)))
	}
	return ""
}

// shmRoom looks at dir, the tmpfs for the scenario: the bytes it can take
// now (its free space, and no more than the memory available, which tmpfs
// pages come out of), or why it cannot be used.
func shmRoom(dir string) (int64, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	if !st.IsDir() {
		return 0, errors.New("not a directory")
	}
	return freeRoom(dir)
}
