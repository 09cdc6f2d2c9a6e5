package logstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/zeebo/xxh3"
)

// The file's layout: a header, then one frame per record.
//
//	header: "CKPTMLG1", base (u64), XXH3-64 of the 16 bytes before
//	frame:  data length (u32), index (u64), from (u64), seq (u64),
//	        check (u32), data, sum (u64)
//
// Integers are little endian. check is the low 32 bits of the XXH3-64 of
// the frame's first 28 bytes, so that a damaged length is told from a
// frame cut short; sum is the record's own hash (msglog.Hash), stored as
// the receiver computed it. The base is rewritten only by Truncate, which
// writes a new file and renames it over the old one.
const (
	magic         = "CKPTMLG1"
	headerSize    = 24
	frameHead     = 32
	frameOverhead = frameHead + 8
)

// MaxData is the largest record data File accepts (the frame's length is
// 32 bits).
const MaxData = math.MaxUint32

// ErrBadHeader is wrapped by OpenFile's error for a file that is not a
// message log, or whose header is damaged.
var ErrBadHeader = errors.New("not a message log, or its header is damaged")

// File is a message log in one append-only file: the protector's copy of a
// rank's log. Append writes whole frames and syncs before it returns,
// unless the file was opened with FileOptions.NoSync: its records are
// then durable against the crash of processes (the writer's, the
// receiver's: the kernel's page cache holds them), not of the node that
// holds the file, which the job then counts as lost (ckpt.DurableProcess).
//
// A crash in the middle of an Append leaves a torn last frame: the file
// ends inside it, or (on file systems that extend the size before the
// data reaches the disk) it and everything after it read as zeros, or its
// head reached the disk and its data and sum read as zeros.
// OpenFile detects that, drops the frame (its record was never durable,
// so it was never delivered nor acknowledged) and truncates the file to
// the last whole frame. Damage anywhere else is not a torn write: a whole
// frame whose record fails its hash is kept and returned as read (the
// replay's check rejects it, naming it), and a frame whose head is damaged
// makes ReadAfter fail when it reaches it (ErrDamaged). The file is never
// shortened past damage, and a damaged log takes no more appends.
type File struct {
	path string
	f    *os.File
	// syncer makes an Append's frames durable; nil with NoSync.
	syncer func(*os.File) error
	base   uint64
	offs   []int64 // start of each frame; record base+1+i starts at offs[i]
	size   int64   // end of the last frame indexed in offs
	// damaged, when not nil, says where the file stops being readable
	// (after the frames in offs): ReadAfter fails there and Append
	// refuses. broken is set when an Append failed and could not put
	// the file back as it was: the store refuses everything after.
	damaged, broken error
	// TornBytes is how many bytes of a torn tail OpenFile dropped.
	TornBytes int64
}

// ErrDamaged is wrapped by the errors of a log damaged beyond a torn tail.
var ErrDamaged = errors.New("message log damaged")

var _ Store = (*File)(nil)

// FileOptions configure OpenFileWith.
type FileOptions struct {
	// NoSync appends without syncing: Append returns once the frames are
	// in the page cache. A killed process (the writer's included) loses
	// none of them; a crash of the node that holds the file may lose its
	// tail (dropped as torn when the file is opened again) or the whole
	// file. Creating the file, dropping a torn tail and Truncate still
	// sync: they are rare, and a half-synced rename is not worth its risk.
	NoSync bool
}

// OpenFile opens the log at path, creating an empty one if there is none;
// its appends are synced.
func OpenFile(path string) (*File, error) { return OpenFileWith(path, FileOptions{}) }

// OpenFileWith is OpenFile with options.
func OpenFileWith(path string, opts FileOptions) (*File, error) {
	// A Truncate that did not finish left its temp file: the old file
	// stands. Failing to remove it costs only its space; the open below
	// says why the directory cannot be used.
	local.RemoveTemps(path)
	os.Remove(path + ".tmp") // the temp file's name before local.WriteFileFrom
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if err = writeFile(path, 0, nil); err != nil {
			return nil, fmt.Errorf("logstore: creating %s: %w", path, err)
		}
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("logstore: %w", err)
	}
	l := &File{path: path, f: f, syncer: (*os.File).Sync}
	if opts.NoSync {
		l.syncer = nil
	}
	if err := l.load(); err != nil {
		f.Close()
		return nil, fmt.Errorf("logstore: opening %s: %w", path, err)
	}
	return l, nil
}

// CreateFile writes a new, empty log of base base at path, replacing any
// log there, and opens it with opts: its first record is base+1. A rank
// whose protector was lost with its log starts a new one at its new
// protector from the point of the checkpoint it took there (the records
// up to it are behind that checkpoint: none is needed).
func CreateFile(path string, base uint64, opts FileOptions) (*File, error) {
	if err := writeFile(path, base, nil); err != nil {
		return nil, fmt.Errorf("logstore: creating %s: %w", path, err)
	}
	return OpenFileWith(path, opts)
}

func header(base uint64) []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint64(h[8:], base)
	binary.LittleEndian.PutUint64(h[16:], xxh3.Hash(h[:16]))
	return h
}

// load reads the header and every frame, checking them, and drops a torn
// tail.
func (l *File) load() error {
	st, err := l.f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	h := make([]byte, headerSize)
	if _, err := l.f.ReadAt(h, 0); err != nil {
		return fmt.Errorf("%w: %v", ErrBadHeader, err)
	}
	if string(h[:8]) != magic || binary.LittleEndian.Uint64(h[16:]) != xxh3.Hash(h[:16]) {
		return ErrBadHeader
	}
	l.base = binary.LittleEndian.Uint64(h[8:])
	r := bufio.NewReaderSize(io.NewSectionReader(l.f, headerSize, end-headerSize), 1<<16)
	off := int64(headerSize)
	l.size = off
	for off < end {
		rec, err := readFrame(r, end-off)
		switch {
		case errors.Is(err, errShort) || errors.Is(err, errHead) && l.zeros(off, end):
			// The file ends inside this frame, or this frame starts a
			// run of zeros to the end: a torn tail.
			return l.dropTail(off, end)
		case errors.Is(err, errHead):
			l.damaged = fmt.Errorf("logstore: %s: %w: the frame after index %d, at byte %d: %v", l.path, ErrDamaged, l.last(), off, err)
			return nil
		case err != nil:
			return err
		}
		l.offs = append(l.offs, off)
		off += frameOverhead + int64(len(rec.Data))
		l.size = off
		if rec.Verify() != nil {
			start := l.offs[len(l.offs)-1]
			if off == end && len(rec.Data) > 0 && l.zeros(start+frameHead, end) {
				// The last frame's head reached the disk but its data
				// and sum read as zeros: a torn write, like a zero tail
				// (its record was never durable, so never delivered).
				l.offs = l.offs[:len(l.offs)-1]
				return l.dropTail(start, end)
			}
			// Kept, to fail the replay that reaches it; what follows
			// is not trusted.
			l.damaged = fmt.Errorf("logstore: %s: %w: record %d, at byte %d, fails its hash", l.path, ErrDamaged, l.last(), l.offs[len(l.offs)-1])
			return nil
		}
	}
	return nil
}

var (
	errShort = errors.New("frame cut short")
	errHead  = errors.New("frame head fails its check")
)

// readFrame reads one frame from r, of which rem bytes are left in the
// file.
func readFrame(r *bufio.Reader, rem int64) (msglog.Record, error) {
	var fh [frameHead]byte
	if rem < frameHead {
		return msglog.Record{}, errShort
	}
	if _, err := io.ReadFull(r, fh[:]); err != nil {
		return msglog.Record{}, err
	}
	if uint32(xxh3.Hash(fh[:28])) != binary.LittleEndian.Uint32(fh[28:]) {
		return msglog.Record{}, errHead
	}
	n := int64(binary.LittleEndian.Uint32(fh[:]))
	if rem < frameOverhead+n {
		return msglog.Record{}, errShort
	}
	rec := msglog.Record{
		Index: binary.LittleEndian.Uint64(fh[4:]),
		From:  int(binary.LittleEndian.Uint64(fh[12:])),
		Seq:   binary.LittleEndian.Uint64(fh[20:]),
		Data:  make([]byte, n),
	}
	var sum [8]byte
	if _, err := io.ReadFull(r, rec.Data); err != nil {
		return msglog.Record{}, err
	}
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return msglog.Record{}, err
	}
	rec.Sum = binary.LittleEndian.Uint64(sum[:])
	return rec, nil
}

// zeros reports whether the file holds only zero bytes from off to end.
func (l *File) zeros(off, end int64) bool {
	r := bufio.NewReader(io.NewSectionReader(l.f, off, end-off))
	for {
		b, err := r.ReadByte()
		if err != nil {
			return err == io.EOF
		}
		if b != 0 {
			return false
		}
	}
}

func (l *File) dropTail(off, end int64) error {
	if err := l.f.Truncate(off); err != nil {
		return fmt.Errorf("dropping the torn tail at byte %d: %w", off, err)
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	l.TornBytes = end - off
	l.size = off
	return nil
}

func (l *File) last() uint64 { return l.base + uint64(len(l.offs)) }

// Append implements Store.
func (l *File) Append(recs []msglog.Record) error {
	if l.broken != nil {
		return l.broken
	}
	if l.damaged != nil {
		return l.damaged
	}
	if err := checkOrder(l.last(), recs); err != nil || len(recs) == 0 {
		return err
	}
	var buf []byte
	offs := make([]int64, 0, len(recs))
	for _, r := range recs {
		if uint64(len(r.Data)) > MaxData {
			return fmt.Errorf("logstore: record %d of %d bytes: more than %d", r.Index, len(r.Data), uint64(MaxData))
		}
		offs = append(offs, l.size+int64(len(buf)))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(r.Data)))
		buf = binary.LittleEndian.AppendUint64(buf, r.Index)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(r.From))
		buf = binary.LittleEndian.AppendUint64(buf, r.Seq)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(xxh3.Hash(buf[len(buf)-28:])))
		buf = append(buf, r.Data...)
		buf = binary.LittleEndian.AppendUint64(buf, r.Sum)
	}
	_, err := l.f.WriteAt(buf, l.size)
	if err == nil && l.syncer != nil {
		err = l.syncer(l.f)
	}
	if err != nil {
		// Put the file back as it was, so that the next Append does
		// not follow a partial frame.
		if terr := l.f.Truncate(l.size); terr != nil {
			l.broken = fmt.Errorf("logstore: %s is unusable after a failed append (%v): %w", l.path, err, terr)
		}
		return fmt.Errorf("logstore: appending to %s: %w", l.path, err)
	}
	l.offs = append(l.offs, offs...)
	l.size += int64(len(buf))
	return nil
}

// ReadAfter implements Store.
func (l *File) ReadAfter(after uint64, fn func(msglog.Record) error) error {
	if l.broken != nil {
		return l.broken
	}
	if after < l.base {
		return fmt.Errorf("logstore: reading %s after index %d: %w up to %d", l.path, after, ErrTruncated, l.base)
	}
	if after < l.last() {
		start := l.offs[after-l.base]
		r := bufio.NewReaderSize(io.NewSectionReader(l.f, start, l.size-start), 1<<16)
		pos := start
		for range l.last() - after {
			rec, err := readFrame(r, l.size-pos)
			if err != nil {
				return fmt.Errorf("logstore: reading %s: %w", l.path, err)
			}
			pos += frameOverhead + int64(len(rec.Data))
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
	return l.damaged
}

// Truncate implements Store: it writes the records it keeps to a new file
// and renames it over the old one, so that a crash leaves one or the
// other.
func (l *File) Truncate(upTo uint64) error {
	if l.broken != nil {
		return l.broken
	}
	if l.damaged != nil {
		// Rewriting would drop the damage with what follows it, and a
		// replay would then end early instead of failing.
		return l.damaged
	}
	if upTo > l.last() {
		return fmt.Errorf("logstore: truncating %s up to index %d beyond the last, %d", l.path, upTo, l.last())
	}
	if upTo <= l.base {
		return nil
	}
	start := l.size
	if upTo < l.last() {
		start = l.offs[upTo-l.base]
	}
	if err := writeFile(l.path, upTo, io.NewSectionReader(l.f, start, l.size-start)); err != nil {
		return fmt.Errorf("logstore: truncating %s: %w", l.path, err)
	}
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		l.broken = fmt.Errorf("logstore: reopening %s after truncating it: %w", l.path, err)
		return l.broken
	}
	l.f.Close()
	l.f = f
	shift := start - headerSize
	l.offs = append([]int64(nil), l.offs[upTo-l.base:]...)
	for i := range l.offs {
		l.offs[i] -= shift
	}
	l.size -= shift
	l.base = upTo
	return nil
}

// writeFile writes a log of base base and the frames in body (nil for
// none) to path, durably and whole (local.WriteFileFrom).
func writeFile(path string, base uint64, body io.Reader) error {
	r := bytes.NewReader(header(base))
	if body == nil {
		return local.WriteFileFrom(path, r, 0o600)
	}
	return local.WriteFileFrom(path, io.MultiReader(r, body), 0o600)
}

// Bounds implements Store.
func (l *File) Bounds() (uint64, uint64, error) {
	if l.broken != nil {
		return 0, 0, l.broken
	}
	return l.base, l.last(), nil
}

// Synced reports whether Append syncs (FileOptions.NoSync unset).
func (l *File) Synced() bool { return l.syncer != nil }

// Close implements Store.
func (l *File) Close() error { return l.f.Close() }
