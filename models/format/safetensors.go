package format

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tpslice/tpslice/dtype"
)

// Names of the files a Hugging Face checkpoint directory holds its weights in.
const (
	// SafetensorsFile is the single-file checkpoint.
	SafetensorsFile = "model.safetensors"
	// SafetensorsIndexFile maps each tensor of a sharded checkpoint to its file.
	SafetensorsIndexFile = "model.safetensors.index.json"
)

// OpenSafetensors memory-maps a Hugging Face checkpoint: path is a model.safetensors file,
// a model.safetensors.index.json (sharded: its weight_map names each tensor's file, relative
// to the index), or a directory holding either (the index wins). Tensors must be F32, F16
// or BF16. rename maps a name as the file spells it to the name the source lists it under
// (a model's canonical names); names it does not know (ok false), or all with a nil rename,
// are kept as they are.
func OpenSafetensors(path string, rename Rename) (*FileSource, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	if st.IsDir() {
		index := filepath.Join(path, SafetensorsIndexFile)
		if _, err := os.Stat(index); err == nil {
			return openSafetensorsIndex(index, rename)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("safetensors %s: %w", index, err)
		}
		single := filepath.Join(path, SafetensorsFile)
		if _, err := os.Stat(single); err != nil {
			return nil, fmt.Errorf("safetensors %s: neither %s nor %s: %w", path, SafetensorsIndexFile, SafetensorsFile, err)
		}
		return openSafetensorsFile(single, rename)
	}
	if strings.HasSuffix(path, ".json") {
		return openSafetensorsIndex(path, rename)
	}
	return openSafetensorsFile(path, rename)
}

func openSafetensorsFile(path string, rename Rename) (*FileSource, error) {
	s := newFileSource("safetensors", path)
	if _, err := s.addSafetensors(path, rename); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.seal()
	return s, nil
}

func openSafetensorsIndex(index string, rename Rename) (*FileSource, error) {
	raw, err := os.ReadFile(index)
	if err != nil {
		return nil, fmt.Errorf("safetensors index %s: %w", index, err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("safetensors index %s: %w", index, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors index %s: empty or missing weight_map", index)
	}
	files := map[string]bool{}
	for name, file := range idx.WeightMap {
		if file == "" || filepath.IsAbs(file) || !filepath.IsLocal(file) {
			return nil, fmt.Errorf("safetensors index %s: tensor %s: file %q is not a local path", index, name, file)
		}
		files[file] = true
	}
	sorted := make([]string, 0, len(files))
	for f := range files {
		sorted = append(sorted, f)
	}
	sort.Strings(sorted)

	s := newFileSource("safetensors", index)
	held := map[string]string{} // file name -> file holding it
	for _, file := range sorted {
		names, err := s.addSafetensors(filepath.Join(filepath.Dir(index), file), rename)
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("safetensors index %s: %w", index, err)
		}
		for _, n := range names {
			held[n] = file
		}
	}
	for name, file := range idx.WeightMap {
		if held[name] != file {
			_ = s.Close()
			return nil, fmt.Errorf("safetensors index %s: tensor %s is listed in %s, which does not hold it", index, name, file)
		}
	}
	s.seal()
	return s, nil
}

// Rename maps a tensor's name as a file spells it to the name a source lists it under.
type Rename func(stored string) (name string, ok bool)

// stEntry is one tensor of a safetensors header.
type stEntry struct {
	name       string // as the file spells it
	dtype      dtype.DType
	shape      []int
	begin, end uint64 // relative to the file's start
}

// addSafetensors maps one safetensors file and adds its tensors; it returns their names as
// the file spells them.
func (s *FileSource) addSafetensors(path string, rename Rename) ([]string, error) {
	f, err := s.mapFile(path)
	if err != nil {
		return nil, err
	}
	entries, err := parseSafetensorsHeader(s.files[f].data)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.name
		if rename != nil {
			if c, ok := rename(e.name); ok {
				name = c
			}
		}
		if err := s.add(f, TensorInfo{Name: name, Shape: e.shape, DType: e.dtype}, e.name, e.begin, e.end); err != nil {
			return nil, err
		}
		names = append(names, e.name)
	}
	return names, nil
}

// parseSafetensorsHeader reads the 8-byte little-endian header length, the JSON header, and
// each tensor's dtype, shape and byte range (made relative to the file's start). Byte
// ranges are checked against the file by FileSource.add.
func parseSafetensorsHeader(data []byte) ([]stEntry, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("file of %d bytes is too short for the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("header length %d past end of file (%d bytes)", n, len(data))
	}
	header := data[8 : 8+n]
	dataStart := 8 + n
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	entries := make([]stEntry, 0, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DType       string   `json:"dtype"`
			Shape       []int64  `json:"shape"`
			DataOffsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %s: header entry: %w", name, err)
		}
		var t dtype.DType
		switch e.DType {
		case "F32":
			t = dtype.F32
		case "F16":
			t = dtype.F16
		case "BF16":
			t = dtype.BF16
		default:
			return nil, fmt.Errorf("tensor %s has dtype %q; only F32, F16 and BF16 are supported", name, e.DType)
		}
		if len(e.DataOffsets) != 2 {
			return nil, fmt.Errorf("tensor %s: data_offsets %v: want [begin, end]", name, e.DataOffsets)
		}
		shape := make([]int, len(e.Shape))
		for i, d := range e.Shape {
			if d < 0 || d >= 1<<31 {
				return nil, fmt.Errorf("tensor %s: shape %v: dimension out of range", name, e.Shape)
			}
			shape[i] = int(d)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin > uint64(len(data)) || end > uint64(len(data)) {
			return nil, fmt.Errorf("tensor %s: data_offsets [%d, %d) past end of file (%d data bytes)", name, begin, end, uint64(len(data))-dataStart)
		}
		entries = append(entries, stEntry{name: name, dtype: t, shape: shape, begin: dataStart + begin, end: dataStart + end})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}
