// Package manifest defines the metadata that commits a checkpoint, its text
// form, and the content hashes that let restart trust what it reads. Apart
// from hashing streams handed to it, the package does no I/O.
//
// # Terms
//
// A checkpoint has a Name chosen by the application (see ValidName) and an
// ID, a sequence number that grows from one checkpoint to the next. The job
// has N ranks (Meta.Ranks); each rank writes files into its node's cache and
// contributes one Part: its node, its files with sizes and hashes, the parity
// files it holds for its redundancy set, and its place in the sets. The
// redundancy scheme is recorded as text ("single", "partner", "xor:4",
// "rs:8+2") and as the pair (N members per set nominally, M members a set can
// lose); the sets themselves are recorded as lists of ranks. Level says where
// the checkpoint is committed: the node-local caches or the shared tier.
//
// The Manifest is the whole checkpoint: Meta plus one Part per rank. It is
// written last; a checkpoint without a valid manifest does not exist. Merge
// assembles it from the parts of all ranks and refuses an incomplete set of
// parts.
//
// # Hashes
//
// A Hash is 16 bytes (32 lowercase hex digits in text). Two hashes are in
// use, both built on XXH3-128, which runs at memory speed:
//
//   - The content hash, which the manifest records for every file: XXH3-128
//     of each ContentChunk (1 MiB) of the content, then XXH3-128 over those
//     chunk hashes followed by the length (see ContentHasher). It is not the
//     XXH3-128 of the whole content, so xxhsum does not reproduce it; hashing
//     whole chunks is what lets it run at memory speed, and on several cores
//     at once. HashContent hashes a stream (reading and hashing overlap) and
//     is the one function for that; ContentHasher hashes bytes as they are
//     written, ContentHashBytes a buffer, ContentHashParallel a buffer on
//     several cores. NewContentVerifyingReader checks size and content hash
//     while the caller reads and reports a mismatch as an error wrapping
//     ErrCorrupt, at the latest at EOF.
//   - Plain XXH3-128 (HashBytes, Hasher; canonical big-endian order as
//     printed by xxhsum -H2) for the manifest's own text, in its trailer
//     line below.
//
// # Text form
//
// Encode writes JSON with a fixed layout (header fields one per line, then one
// line per redundancy set and one per part) and appends a last line
//
//	xxh3-128 <32 hex digits>
//
// holding the hash of all bytes before it. Decode checks that line first, so
// a flipped or missing byte anywhere, or a torn write, is reported as
// ErrCorrupt before the JSON is looked at. Decoding is strict: unknown
// fields, another version (ErrVersion), and any broken rule of
// Manifest.Validate (ErrInvalid) are errors naming the bad value, and the
// text must be exactly what Encode writes, so a manifest has one text form
// and Decode(Encode(m)) reproduces m.
//
// # Errors
//
// Sentinels: ErrCorrupt (content does not match its hash or size),
// ErrVersion, ErrInvalid (a rule of the format is broken), ErrIncomplete
// (Merge without every rank's part) and ErrBadName (ValidName). Match them
// with errors.Is.
package manifest
