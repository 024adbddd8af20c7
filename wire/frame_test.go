package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func header(n uint32) []byte {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], n)
	return h[:]
}

func TestFrameRoundTrip(t *testing.T) {
	for _, payload := range []string{`{}`, `{"tool":"read_file"}`, strings.Repeat("x", 3<<20)} {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, []byte(payload)); err != nil {
			t.Fatalf("WriteFrame: %v", err)
		}
		got, err := ReadFrame(&buf)
		if err != nil {
			t.Fatalf("ReadFrame: %v", err)
		}
		if string(got) != payload {
			t.Fatalf("round trip changed a %d-byte payload", len(payload))
		}
		if _, err := ReadFrame(&buf); !errors.Is(err, io.EOF) {
			t.Fatalf("ReadFrame at end = %v, want io.EOF", err)
		}
	}
}

func TestReadFrameErrors(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"zero length", header(0), ErrEmptyFrame},
		{"max+1", header(MaxFrameSize + 1), ErrFrameTooLarge},
		{"2^32-1", header(1<<32 - 1), ErrFrameTooLarge},
		{"negative as int32", header(0x80000000), ErrFrameTooLarge},
		{"header then EOF", header(10), ErrShortFrame},
		{"short header", []byte{0, 0}, ErrShortFrame},
		{"short payload", append(header(10), "abc"...), ErrShortFrame},
		// The header claims 64 MiB but only a few bytes follow: the reader must
		// fail with a short frame, having allocated only what arrived.
		{"lying header", append(header(MaxFrameSize), "abc"...), ErrShortFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tt.input))
			if !errors.Is(err, tt.want) {
				t.Fatalf("ReadFrame = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestReadFrameOneByteAtATime(t *testing.T) {
	var buf bytes.Buffer
	WriteFrame(&buf, []byte(`{"a":1}`))
	WriteFrame(&buf, []byte(`{"b":2}`))
	r := iotest.OneByteReader(&buf)
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		got, err := ReadFrame(r)
		if err != nil || string(got) != want {
			t.Fatalf("ReadFrame = %q, %v; want %q", got, err, want)
		}
	}
}

func TestLyingHeaderAllocatesLittle(t *testing.T) {
	input := append(header(MaxFrameSize), "abc"...)
	allocs := testing.AllocsPerRun(5, func() { ReadFrame(bytes.NewReader(input)) })
	if allocs > 10 {
		t.Fatalf("a lying header cost %v allocations", allocs)
	}
	// The bytes allocated must be bounded by the first chunk, not the header.
	n := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ReadFrame(bytes.NewReader(input))
		}
	})
	if per := n.AllocedBytesPerOp(); per > 2<<20 {
		t.Fatalf("a lying 64 MiB header allocated %d bytes per read, want <= 2 MiB", per)
	}
}

func TestWriteFrameRefuses(t *testing.T) {
	if err := WriteFrame(io.Discard, nil); !errors.Is(err, ErrEmptyFrame) {
		t.Errorf("empty payload: %v", err)
	}
	if err := WriteFrame(io.Discard, make([]byte, MaxFrameSize+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversize payload: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(append(header(2), "{}"...))
	f.Add(header(0))
	f.Add(header(MaxFrameSize + 1))
	f.Add([]byte{0, 0, 0})
	f.Add(append(header(3), "{}"...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			p, err := ReadFrame(r)
			if err != nil {
				return
			}
			if len(p) == 0 || len(p) > MaxFrameSize {
				t.Fatalf("ReadFrame returned a %d-byte payload", len(p))
			}
			var in ToolInput
			_ = DecodeStrict(p, &in)
		}
	})
}

func BenchmarkFrame1MiB(b *testing.B) {
	payload := bytes.Repeat([]byte("a"), 1<<20)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for i := 0; i < b.N; i++ {
			WriteFrame(io.Discard, payload)
		}
	})
	var buf bytes.Buffer
	WriteFrame(&buf, payload)
	frame := buf.Bytes()
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for i := 0; i < b.N; i++ {
			if _, err := ReadFrame(bytes.NewReader(frame)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
