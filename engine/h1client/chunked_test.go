package h1client

import (
	"bytes"
	"errors"
	"io"
	"net/http/httputil"
	"testing"
)

// dechunkAll runs data through a dechunker in pieces of the lengths cuts gives (1–64 bytes, in
// turn), as reads would bring it: the payload, whether the last chunk was reached before any error,
// and the first error.
func dechunkAll(data, cuts []byte) (payload []byte, lastChunk bool, err error) {
	var d dechunker
	for i := 0; len(data) > 0; i++ {
		n := len(data)
		if len(cuts) > 0 {
			n = min(n, 1+int(cuts[i%len(cuts)])%64)
		}
		piece := append([]byte(nil), data[:n]...) // take rewrites its input, as it does the read buffer
		data = data[n:]
		out, _, done, err := d.take(piece)
		payload = append(payload, out...)
		if err != nil || done {
			return payload, d.state >= chunkTrailer, err
		}
	}
	return payload, d.state >= chunkTrailer, nil
}

// FuzzDechunkerIsNetHTTP: up to the last chunk, however the bytes are split into reads, the
// dechunker gives net/http's chunked reader's payload and fails where it fails.
func FuzzDechunkerIsNetHTTP(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), []byte{2})
	f.Add([]byte("3;ext=1\r\nabc\r\n10 \r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n"), []byte{0, 5})
	f.Add([]byte("5\nhello\r\n0\r\n\r\n"), []byte{})
	f.Add([]byte("5\r\nhelloXY0\r\n\r\n"), []byte{1})
	f.Add([]byte("ffffffffffffffffff\r\n"), []byte{9})
	f.Add([]byte("1\r\na\r\n1\r\nb"), []byte{3})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		want, werr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(data)))
		got, lastChunk, err := dechunkAll(data, cuts)
		switch {
		case werr == nil: // net/http read to the last chunk
			if err != nil || !lastChunk {
				t.Fatalf("net/http read to the last chunk; the dechunker: last chunk %v, error %v", lastChunk, err)
			}
		case errors.Is(werr, io.ErrUnexpectedEOF): // the input stopped inside the body
			if err != nil || lastChunk {
				t.Fatalf("net/http: cut short; the dechunker: last chunk %v, error %v", lastChunk, err)
			}
		default:
			if err == nil {
				t.Fatalf("net/http failed (%v); the dechunker did not", werr)
			}
			if err.Error() != werr.Error() {
				t.Fatalf("net/http failed with %q, the dechunker with %q", werr, err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("payload %q, net/http's %q", got, want)
		}
	})
}

func TestDechunkerEnd(t *testing.T) {
	for _, tc := range []struct {
		name, in     string
		payload      string
		done         bool
		rest, errMsg string
	}{
		{"whole", "4\r\ndata\r\n0\r\n\r\n", "data", true, "", ""},
		{"trailers", "4\r\ndata\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\n", "data", true, "", ""},
		{"bytes after the end", "1\r\na\r\n0\r\n\r\nHTTP/1.1 200", "a", true, "HTTP/1.1 200", ""},
		{"terminator still to come", "1\r\na\r\n0\r\n", "a", false, "", ""},
		{"long trailer", "0\r\nX: " + string(bytes.Repeat([]byte("x"), 5000)) + "\r\n\r\n", "", false, "", "http: suspiciously long trailer after chunked body (over 4096 bytes)"},
		{"bad CRLF after data", "1\r\nab\r\n", "a", false, "", "malformed chunked encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d dechunker
			payload, rest, done, err := d.take([]byte(tc.in))
			if string(payload) != tc.payload || done != tc.done || string(rest) != tc.rest || (err == nil) != (tc.errMsg == "") || err != nil && err.Error() != tc.errMsg {
				t.Fatalf("take(%.40q) = %q, rest %q, done %v, %v; want %q, rest %q, done %v, error %q", tc.in, payload, rest, done, err, tc.payload, tc.rest, tc.done, tc.errMsg)
			}
		})
	}
}
