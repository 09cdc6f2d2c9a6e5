// Package s3 is a storage.Backend that keeps objects in a bucket of an
// S3-compatible object store (Amazon S3, MinIO, Ceph RGW, ...), through the
// minio-go client.
//
// # Configuration
//
// New takes a Config. ParseURL makes one from a location "s3://BUCKET/PREFIX"
// and the environment:
//
//	// CKPT_S3_ENDPOINT=http://10.0.0.5:9000 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=...
//	cfg, err := s3.ParseURL("s3://ckpt-data/job-42")
//	...
//	b, err := s3.New(ctx, cfg) // checks the bucket and the credentials
//
// The endpoint comes from CKPT_S3_ENDPOINT, AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL (default: Amazon S3 over https), the credentials from
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or else
// from a MinIO server's MINIO_ROOT_USER and MINIO_ROOT_PASSWORD, the region
// from AWS_REGION or AWS_DEFAULT_REGION; see ParseURL. The secret key is a
// Secret, which fmt, slog and encoding/json print as "[redacted]".
//
// # Layout
//
// The object "ckpt.0007/rank-3/state.bin" is the key
// Config.Prefix + "ckpt.0007/rank-3/state.bin" of Config.Bucket. Keys under
// the prefix that are not valid object names (folder markers ending in "/",
// names with a TempPrefix element) are not listed. Prefix and name together
// must fit in MaxKeyLen bytes; Create fails for a longer key. Names are flat
// keys: "a" and "a/b" can both be objects (Properties().Hierarchical is
// false), except on servers that store keys as files: MinIO accepts both but
// then does not list the one below the other, so do not use such pairs of
// names there.
//
// # Writing
//
// A Writer keeps the first Config.PartSize bytes in memory. If Commit comes
// before more arrive, it sends the object in one PUT request. Otherwise the
// Writer starts a multipart upload and streams: its bytes go through a pipe
// into minio-go's PutObject, which fills parts of PartSize bytes and
// uploads Concurrency of them at once, while Write blocks once all part
// buffers are full. Commit completes the upload; the object appears, whole,
// when the server completes it. Abort, a failed Write or a failed Commit
// aborts the multipart upload, so the server drops the parts. Only a writer
// that dies before Commit or Abort, or whose abort request is lost (the
// server is down), leaves an incomplete upload behind: invisible to every
// method, but holding storage until CleanTemp removes it, or the server's
// own expiry of stale uploads (24 hours on MinIO by default; a lifecycle
// rule on Amazon S3). A Writer that is dropped without Commit or Abort also
// keeps its upload goroutine and buffers.
//
// Each streaming Writer holds Concurrency × PartSize bytes of part buffers
// (32 MiB by default). Objects are limited to MaxParts × PartSize bytes
// (156 GiB by default).
//
// As with any network store, a Commit that fails because the connection or
// the context broke during its last request may have published the object
// nevertheless: the server completed it, but its answer was lost.
//
// MinIO on a single drive answers a PUT with AccessDenied when a DELETE of
// another key in the same prefix removes the directory that the PUT moves
// its data into. Commit tries such a single PUT again; a multipart upload
// that meets the race at its completion fails, with a permanent
// ErrAccessDenied.
//
// # Hashing
//
// By default minio-go signs the body of every upload over plain http with
// the streaming form of AWS signature v4: a SHA-256 of every 64 KiB chunk
// on the client, verified on the server. Over https it sends the body
// unsigned, and never computes the MD5 of a body unless asked to
// (SendContentMd5). The server computes the ETag (an MD5) in any case. This
// package turns the SHA-256 off (PutObjectOptions.DisableContentSha256,
// "UNSIGNED-PAYLOAD") and protects each part and single PUT with a CRC32C
// instead, which the server verifies; the CRC costs a fraction of a SHA-256
// and is computed once, by the client's CPU's CRC instruction.
//
// # Reading, listing, removing
//
// Open sends one ranged GET and returns its body; the reader sees the
// object that the GET found. Stat is a HEAD request, List pages through
// ListObjectsV2 (which returns keys in byte-wise order). S3's DELETE does
// not report whether the key existed, so Remove first checks with a HEAD
// request: if the object is removed by someone else between the two, Remove
// succeeds instead of reporting ErrNotExist, and if it is replaced between
// the two, Remove deletes the new object.
//
// # Testing
//
// The tests run the storage conformance suite and this package's own tests
// against a real MinIO server that package s3test starts on loopback. The
// server binary comes from $CKPT_MINIO, from PATH or from
// /tmp/minio-bin/minio; scripts/minio.sh builds one. Without one the tests
// skip, or fail where they must run: with CKPT_REQUIRE_S3=1 or CI=true.
package s3
