package local_test

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/ckpt/ckpt/internal/testwait"
	"github.com/ckpt/ckpt/storage"
)

// rangeOf returns the bytes of data that Open(offset, length) yields.
func rangeOf(data []byte, offset, length int64) []byte {
	size := int64(len(data))
	end := size
	if length >= 0 && offset+length < size {
		end = offset + length
	}
	return data[min(offset, size):max(min(offset, size), end)]
}

// TestWriteToTCP copies ranges of an object into a loopback TCP connection,
// the path on which net.TCPConn.ReadFrom uses sendfile.
func TestWriteToTCP(t *testing.T) {
	b := newBackend(t, t.TempDir())
	ctx := t.Context()
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	if _, err := storage.Save(ctx, b, "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer l.Close()
	size := int64(len(data))
	for _, c := range []struct{ off, length int64 }{
		{0, -1}, {100, 5000}, {1<<20 + 1, 1 << 20}, {size - 3, 100}, {size, -1}, {size + 5, 10}, {12345, 0},
	} {
		received := make(chan []byte, 1)
		go func() {
			conn, err := l.Accept()
			if err != nil {
				t.Errorf("Accept: %v", err)
				received <- nil
				return
			}
			defer conn.Close()
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Errorf("reading the connection: %v", err)
			}
			received <- got
		}()
		conn, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Open(ctx, "obj", c.off, c.length)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(conn.(*net.TCPConn), r)
		r.Close()
		conn.(*net.TCPConn).CloseWrite()
		got := testwait.Recv(t, received, "the bytes received")
		conn.Close()
		want := rangeOf(data, c.off, c.length)
		if err != nil || n != int64(len(want)) {
			t.Errorf("io.Copy(range %d+%d) = %d, %v; want %d, nil", c.off, c.length, n, err, len(want))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("range %d+%d: the connection delivered %d bytes, want %d (equal: false)", c.off, c.length, len(got), len(want))
		}
	}
}

// TestWriteTo checks WriteTo into a plain writer, including ranges that run
// past the end, and that it consumes the reader.
func TestWriteTo(t *testing.T) {
	b := newBackend(t, t.TempDir())
	ctx := t.Context()
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	if _, err := storage.Save(ctx, b, "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	for _, c := range []struct{ off, length int64 }{
		{0, -1}, {0, 0}, {0, 10}, {5, size}, {size - 1, -1}, {size - 1, 10},
		{size, -1}, {size, 5}, {size + 1, -1}, {2 * size, 5}, {10, 1 << 40},
	} {
		r, err := b.Open(ctx, "obj", c.off, c.length)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := r.(io.WriterTo).WriteTo(&buf)
		want := rangeOf(data, c.off, c.length)
		if err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("WriteTo(range %d+%d) = %d, %v, %q; want %d, nil, %q", c.off, c.length, n, err, buf.Bytes(), len(want), want)
		}
		// Everything is consumed: nothing more to read.
		if k, err := r.Read(make([]byte, 10)); k != 0 || err != io.EOF {
			t.Errorf("Read after WriteTo(range %d+%d) = %d, %v; want 0, EOF", c.off, c.length, k, err)
		}
		r.Close()
	}

	// WriteTo after a Read yields the rest of the range, and no more.
	r, err := b.Open(ctx, "obj", 3, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, 5)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if n, err := r.(io.WriterTo).WriteTo(&buf); err != nil || n != 15 || buf.String() != string(data[8:23]) {
		t.Errorf("WriteTo after reading 5 of 20 bytes = %d, %v, %q; want 15, nil, %q", n, err, buf.Bytes(), data[8:23])
	}
	if n, err := r.(io.WriterTo).WriteTo(&buf); err != nil || n != 0 {
		t.Errorf("second WriteTo = %d, %v; want 0, nil", n, err)
	}
}
