package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	gguf "github.com/gpustack/gguf-parser-go"
)

// diagnoseGGUF names the tensor at fault in a GGUF file that gguf-parser-go refused as a
// whole (its size check sums every tensor, so its error names none): it scans the header
// itself and reports the first tensor of an unsupported type or whose data runs past the
// end of the file. It returns nil when it finds no such tensor.
func diagnoseGGUF(path string) error {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil
	}
	defer unmap()
	tensors, dataStart, err := scanGGUF(data)
	if err != nil {
		return nil
	}
	for _, t := range tensors {
		dt, ok := ggufDType(gguf.GGMLType(t.typ))
		if !ok {
			return fmt.Errorf("tensor %s has type %v; supported: %s", t.name, gguf.GGMLType(t.typ), ggufSupported)
		}
		if len(t.dims) == 0 || !dt.Whole(int(min(t.dims[0], 1<<31))) {
			return fmt.Errorf("tensor %s: %v rows of %v values are not a whole number of %d-value blocks", t.name, dt, t.dims, dt.BlockSize())
		}
		size := uint64(dt.BlockBytes())
		for i, d := range t.dims {
			if i == 0 {
				d /= uint64(dt.BlockSize())
			}
			hi, lo := bits.Mul64(size, d)
			if hi != 0 {
				return fmt.Errorf("tensor %s: dimensions %v overflow", t.name, t.dims)
			}
			size = lo
		}
		begin, c1 := bits.Add64(dataStart, t.offset, 0)
		end, c2 := bits.Add64(begin, size, 0)
		if c1 != 0 || c2 != 0 || end > uint64(len(data)) {
			return fmt.Errorf("tensor %s: data range [%d, %d) past end of file (%d bytes)", t.name, begin, begin+size, len(data))
		}
	}
	return nil
}

type scannedTensor struct {
	name   string
	dims   []uint64
	typ    uint32
	offset uint64
}

// ggufScanner reads little-endian GGUF fields with bounds checks.
type ggufScanner struct {
	b   []byte
	pos uint64
}

var errGGUFShort = errors.New("truncated")

func (s *ggufScanner) take(n uint64) ([]byte, error) {
	if n > uint64(len(s.b))-s.pos {
		return nil, errGGUFShort
	}
	out := s.b[s.pos : s.pos+n]
	s.pos += n
	return out, nil
}

func (s *ggufScanner) u32() (uint32, error) {
	b, err := s.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (s *ggufScanner) u64() (uint64, error) {
	b, err := s.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (s *ggufScanner) str() (string, error) {
	n, err := s.u64()
	if err != nil {
		return "", err
	}
	b, err := s.take(n)
	return string(b), err
}

// skipValue skips one metadata value of type t; depth bounds nested arrays.
func (s *ggufScanner) skipValue(t uint32, depth int) error {
	switch t {
	case 0, 1, 7: // u8, i8, bool
		_, err := s.take(1)
		return err
	case 2, 3: // u16, i16
		_, err := s.take(2)
		return err
	case 4, 5, 6: // u32, i32, f32
		_, err := s.take(4)
		return err
	case 10, 11, 12: // u64, i64, f64
		_, err := s.take(8)
		return err
	case ggufTypeString:
		_, err := s.str()
		return err
	case 9: // array
		if depth > 4 {
			return errors.New("arrays nested too deep")
		}
		et, err := s.u32()
		if err != nil {
			return err
		}
		n, err := s.u64()
		if err != nil {
			return err
		}
		for i := uint64(0); i < n; i++ {
			if err := s.skipValue(et, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown metadata value type %d", t)
}

// scanGGUF reads a v2/v3 little-endian GGUF header: the tensor infos and where the data
// section starts.
func scanGGUF(b []byte) ([]scannedTensor, uint64, error) {
	s := &ggufScanner{b: b}
	magic, err := s.u32()
	if err != nil || magic != 0x46554747 {
		return nil, 0, errors.New("not a little-endian GGUF file")
	}
	if v, err := s.u32(); err != nil || v < 2 || v > 3 {
		return nil, 0, errors.New("unsupported version")
	}
	nt, err := s.u64()
	if err != nil {
		return nil, 0, err
	}
	nkv, err := s.u64()
	if err != nil {
		return nil, 0, err
	}
	align := uint64(32)
	for i := uint64(0); i < nkv; i++ {
		key, err := s.str()
		if err != nil {
			return nil, 0, err
		}
		t, err := s.u32()
		if err != nil {
			return nil, 0, err
		}
		if key == "general.alignment" && t == ggufTypeUint32 {
			a, err := s.u32()
			if err != nil {
				return nil, 0, err
			}
			if a == 0 || a%8 != 0 {
				return nil, 0, errors.New("bad alignment")
			}
			align = uint64(a)
			continue
		}
		if err := s.skipValue(t, 0); err != nil {
			return nil, 0, err
		}
	}
	var out []scannedTensor
	for i := uint64(0); i < nt; i++ {
		var t scannedTensor
		if t.name, err = s.str(); err != nil {
			return nil, 0, err
		}
		nd, err := s.u32()
		if err != nil || nd > 4 {
			return nil, 0, errors.New("bad dimension count")
		}
		for range nd {
			d, err := s.u64()
			if err != nil {
				return nil, 0, err
			}
			t.dims = append(t.dims, d)
		}
		if t.typ, err = s.u32(); err != nil {
			return nil, 0, err
		}
		if t.offset, err = s.u64(); err != nil {
			return nil, 0, err
		}
		out = append(out, t)
	}
	return out, alignUp(s.pos, align), nil
}
