package h1client

import (
	"bytes"
	"errors"
	"fmt"
)

// dechunker undoes HTTP/1.1 chunked framing (RFC 9112 §7.1) a read at a time and in place: the
// payload of the bytes a read returned is moved to their front, so the poller hands the SSE reader
// the very buffer the kernel filled (bench/README.md, "CPU per chunk": net/http's chunked reader copied every chunk into
// a second buffer). It accepts what net/http's chunked reader accepts — CRLF line ends only, chunk
// extensions ignored, at most 16 hex digits, the same bound on framing overhead — which
// FuzzDechunkerIsNetHTTP holds it to.
type dechunker struct {
	state  dechunkState
	left   uint64  // data bytes left in the current chunk
	line   []byte  // a size or trailer line cut by the end of a read
	crlf   int     // bytes of the CRLF after a chunk's data already seen
	end    [2]byte // those bytes
	excess int64   // framing overhead beyond what the data pays for (net/http's rule)
	// trailer counts the trailer section's bytes, bounded as net/http bounds it (its buffer, 4 KiB).
	trailer int
}

type dechunkState uint8

const (
	chunkSize    dechunkState = iota // reading a chunk-size line
	chunkData                        // reading a chunk's data
	chunkCRLF                        // reading the CRLF after it
	chunkTrailer                     // after the last chunk: trailer lines up to an empty one
	chunkDone                        // the body is complete
)

// maxChunkLine is net/http's bound on a chunk-size line (and plload's on a trailer section).
const maxChunkLine = 4096

var errChunkedTooMuchNonData = errors.New("chunked encoding contains too much non-data")

// take dechunks p, which one read returned: the body's bytes in it end up in payload (p's own
// front), done says the body ended in p, and rest is what p held after the body's end (a server
// that sends more than it was asked for: the connection cannot be used again).
func (d *dechunker) take(p []byte) (payload, rest []byte, done bool, err error) {
	w := 0 // payload written so far, at p[:w]
	for i := 0; i < len(p); {
		switch d.state {
		case chunkData:
			n := min(uint64(len(p)-i), d.left)
			w += copy(p[w:], p[i:i+int(n)])
			i += int(n)
			if d.left -= n; d.left == 0 {
				d.state, d.crlf = chunkCRLF, 0
			}
		case chunkCRLF:
			// Judged once both bytes are here, as net/http does: a stream cut after one is cut short.
			d.end[d.crlf] = p[i]
			i++
			if d.crlf++; d.crlf == 2 {
				if d.end != [2]byte{'\r', '\n'} {
					return p[:w], nil, false, errors.New("malformed chunked encoding")
				}
				d.state = chunkSize
			}
		case chunkSize, chunkTrailer:
			line, n, ok := d.lineFrom(p[i:])
			i += n
			if !ok {
				if d.trailer+len(d.line) > maxChunkLine {
					return p[:w], nil, false, d.lineTooLong()
				}
				continue // the line goes on in the next read
			}
			if d.state == chunkTrailer {
				if d.trailer += len(line) + 1; d.trailer > maxChunkLine {
					return p[:w], nil, false, d.lineTooLong()
				}
				if len(bytes.TrimSuffix(line, []byte("\r"))) == 0 {
					d.state = chunkDone
					return p[:w], p[i:], true, nil
				}
				continue
			}
			if len(line)+1 > maxChunkLine {
				return p[:w], nil, false, d.lineTooLong()
			}
			if err := d.beginChunk(line); err != nil {
				return p[:w], nil, false, err
			}
		case chunkDone:
			return p[:w], p[i:], true, nil
		}
	}
	return p[:w], nil, d.state == chunkDone, nil
}

// lineFrom takes a line (through its \n) from the front of p: the whole line when p ends it (in
// place when it began in p), and how many bytes of p it used; a line p does not end is kept.
func (d *dechunker) lineFrom(p []byte) (line []byte, n int, ok bool) {
	end := bytes.IndexByte(p, '\n')
	if end < 0 {
		d.line = append(d.line, p...)
		return nil, len(p), false
	}
	line = p[:end]
	if len(d.line) > 0 {
		d.line = append(d.line, line...)
		line = d.line
		d.line = d.line[:0]
	}
	return line, end + 1, true
}

func (d *dechunker) lineTooLong() error {
	if d.state == chunkTrailer {
		return fmt.Errorf("http: suspiciously long trailer after chunked body (over %d bytes)", maxChunkLine)
	}
	return errors.New("header line too long")
}

// beginChunk reads a chunk-size line (without its \n, at most maxChunkLine with it) as net/http does.
func (d *dechunker) beginChunk(line []byte) error {
	if cr := bytes.IndexByte(line, '\r'); cr == -1 {
		return errors.New("chunked line ends with bare LF")
	} else if cr != len(line)-1 {
		return errors.New("invalid CR in chunked line")
	}
	line = line[:len(line)-1]
	d.excess += int64(len(line)) + 2
	line = bytes.TrimRight(line, " \t")
	line, _, _ = bytes.Cut(line, []byte(";")) // chunk extensions mean nothing to plload
	n, err := parseChunkSize(line)
	if err != nil {
		return err
	}
	d.excess = max(d.excess-(16+2*int64(n)), 0)
	if d.excess > 16*1024 {
		return errChunkedTooMuchNonData
	}
	d.left = n
	d.state = chunkData
	if n == 0 {
		d.state, d.trailer = chunkTrailer, 0
	}
	return nil
}

func parseChunkSize(v []byte) (uint64, error) {
	if len(v) == 0 {
		return 0, errors.New("empty hex number for chunk length")
	}
	var n uint64
	for i, b := range v {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return 0, errors.New("invalid byte in chunk length")
		}
		if i == 16 {
			return 0, errors.New("http chunk length too large")
		}
		n = n<<4 | uint64(b)
	}
	return n, nil
}
