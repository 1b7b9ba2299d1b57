package format

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"sync"
)

// FileSource is a Source over memory-mapped checkpoint files (GGUF or safetensors): a read
// touches only the pages of the rows and columns it copies. Open one with OpenGGUF,
// OpenSafetensors or Open. Reads are safe for concurrent use, also with Close. The files
// must not be truncated or rewritten while the source is open (a mapped page that is gone
// faults the process, as it would in any mmap-based loader).
type FileSource struct {
	format string // "gguf" or "safetensors"
	path   string // what was opened: a file, a directory or an index

	mu     sync.RWMutex
	closed bool
	files  []mappedFile
	byName map[string]fileTensor
	infos  []TensorInfo // sorted by name
}

type mappedFile struct {
	path  string
	data  []byte
	unmap func() error
}

// fileTensor locates one tensor's bytes: data[begin:end] of files[file].
type fileTensor struct {
	info       TensorInfo
	file       int
	begin, end int
}

func newFileSource(format, path string) *FileSource {
	return &FileSource{format: format, path: path, byName: map[string]fileTensor{}}
}

// mapFile maps one file into the source and returns its index.
func (s *FileSource) mapFile(path string) (int, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", s.format, path, err)
	}
	s.files = append(s.files, mappedFile{path: path, data: data, unmap: unmap})
	return len(s.files) - 1, nil
}

// add registers a tensor whose bytes are data[begin:end] of file f, checking that the range
// lies inside the file and holds exactly shape·dtype bytes; errors name file and tensor.
// stored is the name the file spells the tensor with, when it differs from info.Name.
func (s *FileSource) add(f int, info TensorInfo, stored string, begin, end uint64) error {
	path := s.files[f].path
	name := info.Name
	if stored != "" && stored != name {
		name += " (" + stored + " in the file)"
	}
	where := func(format string, args ...any) error {
		return fmt.Errorf("%s %s: tensor %s: %s", s.format, path, name, fmt.Sprintf(format, args...))
	}
	if _, dup := s.byName[info.Name]; dup {
		return where("appears twice")
	}
	if len(info.Shape) == 0 || len(info.Shape) > 2 {
		return where("shape %v: want 1 or 2 dimensions", info.Shape)
	}
	for _, d := range info.Shape {
		if d < 0 {
			return where("negative dimension in shape %v", info.Shape)
		}
	}
	rows, cols := info.Dims()
	if !info.DType.Whole(cols) {
		return where("%v rows of %d values: not a whole number of %d-value blocks", info.DType, cols, info.DType.BlockSize())
	}
	size := uint64(info.DType.Bytes(cols))
	hi, lo := bits.Mul64(size, uint64(rows))
	if hi != 0 || lo > 1<<62 || size > 1<<62 {
		return where("shape %v of %v overflows", info.Shape, info.DType)
	}
	size = lo
	fileLen := uint64(len(s.files[f].data))
	if begin > end {
		return where("data range [%d, %d) ends before it begins", begin, end)
	}
	if end > fileLen {
		return where("data range [%d, %d) past end of file (%d bytes)", begin, end, fileLen)
	}
	if end-begin != size {
		return where("shape %v of %v needs %d bytes, data range [%d, %d) holds %d", info.Shape, info.DType, size, begin, end, end-begin)
	}
	info.Shape = slices.Clone(info.Shape)
	s.byName[info.Name] = fileTensor{info: info, file: f, begin: int(begin), end: int(end)}
	return nil
}

// seal sorts the tensor list once every tensor is added.
func (s *FileSource) seal() {
	s.infos = make([]TensorInfo, 0, len(s.byName))
	for _, t := range s.byName {
		s.infos = append(s.infos, t.info)
	}
	sort.Slice(s.infos, func(i, j int) bool { return s.infos[i].Name < s.infos[j].Name })
}

// Path is the file, directory or index the source was opened from.
func (s *FileSource) Path() string { return s.path }

// Format is "gguf" or "safetensors".
func (s *FileSource) Format() string { return s.format }

// String names the source as errors print it: "<format> <path>".
func (s *FileSource) String() string { return s.format + " " + s.path }

// Tensors lists every tensor, sorted by name.
func (s *FileSource) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(s.infos))
	for i, t := range s.infos {
		t.Shape = slices.Clone(t.Shape)
		out[i] = t
	}
	return out
}

// Tensor returns one tensor's description.
func (s *FileSource) Tensor(name string) (TensorInfo, bool) {
	t, ok := s.byName[name]
	t.info.Shape = slices.Clone(t.info.Shape)
	return t.info, ok
}

// Read copies region r of tensor name into dst, converting exactly to dst's dtype.
func (s *FileSource) Read(name string, r Region, dst Dest) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("%v: no tensor %s", s, name)
	}
	fail := func(err error) error {
		return fmt.Errorf("%v: read tensor %s (in %s): %w", s, name, s.files[t.file].path, err)
	}
	if s.closed {
		return fail(errors.New("source is closed"))
	}
	if err := CheckRead(t.info, r, dst); err != nil {
		return fail(err)
	}
	if err := readRegion(s.files[t.file].data[t.begin:t.end], t.info, r, dst); err != nil {
		return fail(err)
	}
	return nil
}

// Close unmaps the files; later reads fail. Closing twice is a no-op.
func (s *FileSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, f := range s.files {
		if err := f.unmap(); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: unmap: %w", s.format, f.path, err))
		}
	}
	return errors.Join(errs...)
}
